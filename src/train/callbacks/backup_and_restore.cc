// BackupAndRestore (specs/tf-formats.md §5.3, with tf.keras's mid-epoch resume): saves the training state every
// save_freq batches or at epoch ends, restores the newest backup when training begins, removes the backups after a
// normal end. The resumed run continues at the saved (epoch, batch) with the saved weights, slots and counters, so it
// ends bitwise-identical to an uninterrupted run (docs/training.md).
#include "core/logging.h"
#include "strata/train.h"

namespace strata::train {
namespace {

class BackupAndRestoreCallback final : public Callback {
 public:
  BackupAndRestoreCallback(std::string dir, int64_t save_freq, bool delete_checkpoint)
      : dir_(std::move(dir)), save_freq_(save_freq), delete_(delete_checkpoint) {}

  Status OnTrainBegin(Trainer& t) override {
    STRATA_ASSIGN_OR_RETURN(std::optional<TrainingState> s, LoadLatestTrainingState(dir_));
    if (!s) return Status::OK();
    Status st = t.SetState(*s);
    if (!st.ok()) return st.WithContext(StrCat("BackupAndRestore: restoring from '", dir_, "'"));
    t.ResumeAt(s->epoch, s->batch);
    LogInfo("BackupAndRestore: resuming at epoch ", s->epoch + 1, ", batch ", s->batch, " (step ", s->iterations,
            ") from ", dir_);
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t, const Logs&) override {
    if (save_freq_ > 0 && t.iterations() % save_freq_ == 0) return SaveTrainingState(dir_, t.GetState());
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int, Logs&) override {
    if (save_freq_ <= 0) return SaveTrainingState(dir_, t.GetState());
    return Status::OK();
  }

  Status OnTrainEnd(Trainer& t, const Logs&) override {
    return delete_ ? DeleteTrainingStates(dir_) : Status::OK();
  }

 private:
  std::string dir_;
  int64_t save_freq_;
  bool delete_;
};

}  // namespace

std::shared_ptr<Callback> BackupAndRestore(std::string backup_dir, int64_t save_freq, bool delete_checkpoint) {
  return std::make_shared<BackupAndRestoreCallback>(std::move(backup_dir), save_freq, delete_checkpoint);
}

}  // namespace strata::train
