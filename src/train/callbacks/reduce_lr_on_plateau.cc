// ReduceLROnPlateau (specs/tf-formats.md §5.3): logs learning_rate every epoch end; after `patience` epochs without
// improvement, lr = max(lr * factor, min_lr), then `cooldown` epochs of rest.
#include <cstdio>

#include "core/logging.h"
#include "strata/train.h"
#include "train/callback_util.h"

namespace strata::train {
namespace {

class ReduceLrCallback final : public Callback {
 public:
  explicit ReduceLrCallback(ReduceLROnPlateauOptions o, Monitor m) : o_(std::move(o)), monitor_(m) {}

  Status OnTrainBegin(Trainer&) override {
    best_.reset();
    wait_ = 0;
    cooldown_counter_ = 0;
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) override {
    logs.Set("learning_rate", t.learning_rate());
    const double* current = logs.Find(o_.monitor);
    if (current == nullptr) {
      LogWarning("ReduceLROnPlateau: metric '", o_.monitor, "' is not available; skipping");
      return Status::OK();
    }
    if (cooldown_counter_ > 0) {
      --cooldown_counter_;
      wait_ = 0;
    }
    if (!best_ || monitor_.Improved(*current, *best_)) {
      best_ = *current;
      wait_ = 0;
    } else if (cooldown_counter_ <= 0) {
      ++wait_;
      const double old_lr = t.learning_rate();
      if (wait_ >= o_.patience && old_lr > static_cast<double>(static_cast<float>(o_.min_lr))) {
        const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
        t.SetLearningRate(new_lr);
        if (o_.verbose > 0) std::printf("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %g.\n", epoch + 1, new_lr);
        cooldown_counter_ = o_.cooldown;
        wait_ = 0;
      }
    }
    return Status::OK();
  }

 private:
  ReduceLROnPlateauOptions o_;
  Monitor monitor_;
  std::optional<double> best_;
  int wait_ = 0, cooldown_counter_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> ReduceLROnPlateau(ReduceLROnPlateauOptions options) {
  if (options.factor >= 1.0)
    return InvalidArgumentError("ReduceLROnPlateau does not support a factor >= 1.0, got ", options.factor);
  STRATA_ASSIGN_OR_RETURN(Monitor m, MakeMonitor(options.monitor, options.mode, options.min_delta, "contains_acc"));
  return std::shared_ptr<Callback>(std::make_shared<ReduceLrCallback>(std::move(options), m));
}

}  // namespace strata::train
