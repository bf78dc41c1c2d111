// LearningRateScheduler: at each epoch begin lr = schedule(epoch, current lr); learning_rate is logged at epoch end.
#include <cmath>
#include <cstdio>

#include "strata/train.h"

namespace strata::train {
namespace {

class LrSchedulerCallback final : public Callback {
 public:
  LrSchedulerCallback(std::function<double(int, double)> fn, int verbose) : fn_(std::move(fn)), verbose_(verbose) {}
  Status OnEpochBegin(Trainer& t, int epoch) override {
    const double lr = fn_(epoch, t.learning_rate());
    if (!std::isfinite(lr)) return InvalidArgumentError("LearningRateScheduler: the schedule returned ", lr);
    t.SetLearningRate(lr);
    if (verbose_ > 0) std::printf("\nEpoch %d: LearningRateScheduler setting learning rate to %g.\n", epoch + 1, lr);
    return Status::OK();
  }
  Status OnEpochEnd(Trainer& t, int, Logs& logs) override {
    logs.Set("learning_rate", t.learning_rate());
    return Status::OK();
  }

 private:
  std::function<double(int, double)> fn_;
  int verbose_;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> LearningRateScheduler(std::function<double(int epoch, double lr)> schedule,
                                                          int verbose) {
  if (!schedule) return InvalidArgumentError("LearningRateScheduler: the schedule function is empty");
  return std::shared_ptr<Callback>(std::make_shared<LrSchedulerCallback>(std::move(schedule), verbose));
}

}  // namespace strata::train
