// Keras TerminateOnNaN: stop at the first training step whose loss is NaN or infinite, naming it.
#include <cmath>

#include "strata/train.h"

namespace strata::train {
namespace {

class TerminateOnNaNCallback final : public Callback {
 public:
  Status OnEpochBegin(Trainer&, int epoch) override {
    epoch_ = epoch;
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs& logs) override {
    const double* loss = logs.Find("loss");
    if (loss == nullptr || std::isfinite(*loss)) return Status::OK();
    t.StopTraining();
    return FailedPreconditionError("TerminateOnNaN: the loss is ", *loss, " after training step ", t.iterations(),
                                   " (epoch ", epoch_ + 1, ", batch ", batch + 1,
                                   "); training stopped there. --check_numerics names the op that first produces "
                                   "a NaN or infinity");
  }

 private:
  int epoch_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> TerminateOnNaN() {
  return std::shared_ptr<Callback>(std::make_shared<TerminateOnNaNCallback>());
}

}  // namespace strata::train
