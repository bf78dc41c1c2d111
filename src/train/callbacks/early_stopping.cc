// EarlyStopping (specs/tf-formats.md §5.3), plus a memory watchdog: stop when peak RSS grew by more than a set
// percentage in each of N consecutive epochs (a leak or an unbounded cache shows up long before an OOM kill).
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/logging.h"
#include "strata/train.h"
#include "train/callback_util.h"

namespace strata::train {
namespace {

class EarlyStoppingCallback final : public Callback {
 public:
  explicit EarlyStoppingCallback(EarlyStoppingOptions o) : o_(std::move(o)) {}

  Status OnTrainBegin(Trainer& t) override {
    STRATA_ASSIGN_OR_RETURN(monitor_, MakeMonitor(o_.monitor, o_.mode, o_.min_delta, "early_stopping"));
    wait_ = 0;
    stopped_epoch_ = -1;
    best_.reset();
    best_state_.reset();
    rss_growth_streak_ = 0;
    last_rss_ = PeakRssBytes();
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) override {
    WatchMemory(t, epoch);
    const double* current = logs.Find(o_.monitor);
    if (current == nullptr) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : logs.items()) keys.push_back(k);
      LogWarning("EarlyStopping: metric '", o_.monitor, "' is not available; available: ", StrJoin(keys, ", "));
      return Status::OK();
    }
    if (epoch < o_.start_from_epoch) return Status::OK();
    if (o_.restore_best_weights && !best_state_) best_state_ = t.GetState();
    ++wait_;
    const double reference = best_ ? *best_
                             : monitor_.higher_is_better ? -std::numeric_limits<double>::infinity()
                                                         : std::numeric_limits<double>::infinity();
    if (!best_ || monitor_.Improved(*current, reference)) {
      best_ = *current;
      best_epoch_ = epoch;
      if (o_.restore_best_weights) best_state_ = t.GetState();
      if (!o_.baseline || monitor_.Improved(*current, *o_.baseline)) wait_ = 0;
      return Status::OK();
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      t.StopTraining();
    }
    return Status::OK();
  }

  Status OnTrainEnd(Trainer& t, const Logs&) override {
    if (stopped_epoch_ >= 0 && o_.verbose > 0) std::printf("Epoch %d: early stopping\n", stopped_epoch_ + 1);
    if (o_.restore_best_weights && best_state_) {
      if (o_.verbose > 0) std::printf("Restoring model weights from the end of the best epoch: %d.\n", best_epoch_ + 1);
      // Only the weights go back: the optimizer state and counters continue.
      TrainingState now = t.GetState();
      now.weights = best_state_->weights;
      STRATA_RETURN_IF_ERROR(t.SetState(now));
    }
    return Status::OK();
  }

 private:
  void WatchMemory(Trainer& t, int epoch) {
    if (o_.max_rss_growth_percent <= 0) return;
    const int64_t rss = PeakRssBytes();
    const double growth = last_rss_ > 0 ? 100.0 * double(rss - last_rss_) / double(last_rss_) : 0.0;
    last_rss_ = rss;
    rss_growth_streak_ = growth > o_.max_rss_growth_percent ? rss_growth_streak_ + 1 : 0;
    if (rss_growth_streak_ >= o_.rss_growth_epochs) {
      LogWarning("EarlyStopping: peak RSS grew by more than ", o_.max_rss_growth_percent, "% in each of the last ",
                 rss_growth_streak_, " epochs (now ", rss >> 20, " MiB): stopping at epoch ", epoch + 1);
      stopped_epoch_ = epoch;
      t.StopTraining();
    }
  }

  EarlyStoppingOptions o_;
  Monitor monitor_;
  int wait_ = 0, stopped_epoch_ = -1, best_epoch_ = 0;
  std::optional<double> best_;
  std::optional<TrainingState> best_state_;
  int rss_growth_streak_ = 0;
  int64_t last_rss_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> EarlyStopping(EarlyStoppingOptions options) {
  Status mode = MakeMonitor(options.monitor, options.mode, options.min_delta, "early_stopping").status();
  if (!mode.ok()) return mode.WithContext("EarlyStopping");
  if (options.patience < 0) return InvalidArgumentError("EarlyStopping: patience must be >= 0, got ", options.patience);
  if (options.max_rss_growth_percent < 0 || (options.max_rss_growth_percent > 0 && options.rss_growth_epochs < 1))
    return InvalidArgumentError("EarlyStopping: the memory watchdog needs max_rss_growth_percent >= 0 and "
                                "rss_growth_epochs >= 1, got ", options.max_rss_growth_percent, " and ",
                                options.rss_growth_epochs);
  return std::shared_ptr<Callback>(std::make_shared<EarlyStoppingCallback>(std::move(options)));
}

}  // namespace strata::train
