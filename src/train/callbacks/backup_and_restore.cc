// BackupAndRestore (specs/tf-formats.md §5.3, with tf.keras's mid-epoch resume): saves a checkpoint every save_freq
// batches or at epoch ends through a CheckpointManager keeping one (as tf.keras does), restores the latest when
// training begins, removes the backups after a normal end. The resumed run continues at the saved (epoch, batch) with
// the saved weights, slots and counters, so it ends bitwise-identical to an uninterrupted run (docs/training.md).
#include "core/logging.h"
#include "strata/train.h"

namespace strata::train {
namespace {

class BackupAndRestoreCallback final : public Callback {
 public:
  BackupAndRestoreCallback(std::string dir, int64_t save_freq, bool delete_checkpoint)
      : dir_(std::move(dir)), save_freq_(save_freq), delete_(delete_checkpoint) {}

  Status OnTrainBegin(Trainer& t) override {
    STRATA_ASSIGN_OR_RETURN(manager_, CheckpointManager::Open(dir_, {.max_to_keep = 1}));
    STRATA_ASSIGN_OR_RETURN(std::optional<Checkpoint> c, manager_->ReadLatest());
    if (!c) return Status::OK();
    Status st = RestoreCheckpoint(t, *c);
    if (!st.ok()) return st.WithContext(StrCat("BackupAndRestore: restoring from '", dir_, "'"));
    t.ResumeAt(c->state.epoch, c->state.batch);
    LogInfo("BackupAndRestore: resuming at epoch ", c->state.epoch + 1, ", batch ", c->state.batch, " (step ",
            c->state.iterations, ") from ", c->path);
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t, const Logs& logs) override {
    if (save_freq_ > 0 && t.iterations() % save_freq_ == 0) return Save(t, logs);
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int, Logs& logs) override {
    if (save_freq_ <= 0) return Save(t, logs);
    return Status::OK();
  }

  Status OnTrainEnd(Trainer& t, const Logs&) override {
    return delete_ && manager_ ? manager_->DeleteAll() : Status::OK();
  }

 private:
  Status Save(Trainer& t, const Logs& logs) {
    if (!manager_) return FailedPreconditionError("BackupAndRestore: saving before on_train_begin");
    auto config = t.model().GetConfig();  // saved without one for a model that cannot describe itself
    return manager_->Save(t.GetState(), {.metrics = logs, .model_config = config.ok() ? *config : std::string()})
        .status();
  }

  std::string dir_;
  int64_t save_freq_;
  bool delete_;
  std::unique_ptr<CheckpointManager> manager_;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> BackupAndRestore(std::string backup_dir, int64_t save_freq,
                                                     bool delete_checkpoint) {
  if (backup_dir.empty()) return InvalidArgumentError("BackupAndRestore: backup_dir is empty");
  if (save_freq < 0)
    return InvalidArgumentError("BackupAndRestore: save_freq is a number of batches >= 1, or 0 for epoch ends; got ",
                                save_freq);
  return std::shared_ptr<Callback>(
      std::make_shared<BackupAndRestoreCallback>(std::move(backup_dir), save_freq, delete_checkpoint));
}

}  // namespace strata::train
