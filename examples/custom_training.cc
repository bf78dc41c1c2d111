// Example: the trainer's extension points, using only the installed strata package: a user optimizer (gradient
// descent with momentum written as graph nodes), a user metric and a custom loss (a squared error written as graph
// nodes), trained on an in-memory regression problem drawn with strata's public Rng.
//
//   custom_training
//
// Exits non-zero unless the loss falls below a tenth of its first value.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "strata/data.h"
#include "strata/graph_builder.h"
#include "strata/nn.h"
#include "strata/optim.h"
#include "strata/train.h"
#include "strata/util.h"

using namespace strata;

namespace {

// v' = mu v + g; w' = w - lr v'.
class Momentum final : public optim::Optimizer {
 public:
  Momentum(double lr, float mu) : Optimizer("my_momentum", {.learning_rate = optim::ConstantLR(lr)}), mu_(mu) {}
  std::vector<std::string> SlotNames() const override { return {"velocity"}; }

 protected:
  StatusOr<optim::VariableUpdate> BuildUpdate(graph::Builder& b, const optim::UpdateInputs& in) const override {
    const std::string v = b.Emit1("Add", {b.Emit1("Mul", {in.slots.at("velocity"), b.Scalar(mu_)}), in.grad});
    const std::string w = b.Emit1("Sub", {in.value, b.Emit1("Mul", {v, in.lr})});
    return optim::VariableUpdate{in.variable_name, w, {{"velocity", v}}};
  }

 private:
  float mu_;
};

// The largest absolute error seen since the last reset.
class MaxAbsError final : public nn::Metric {
 public:
  const std::string& name() const override { return name_; }
  void Reset() override { max_ = 0; }
  Status Update(const Tensor& y_true, const Tensor& y_pred) override {
    if (y_true.num_elements() != y_pred.num_elements())
      return InvalidArgumentError("max_abs_error: ", y_true.num_elements(), " labels for ", y_pred.num_elements(),
                                  " predictions");
    for (int64_t i = 0; i < y_pred.num_elements(); ++i) {
      const double e = y_pred.data<float>()[i] - y_true.data<float>()[i];
      max_ = std::max(max_, e < 0 ? -e : e);
    }
    return Status::OK();
  }
  double Result() const override { return max_; }
  bool higher_is_better() const override { return false; }

 private:
  std::string name_ = "max_abs_error";
  double max_ = 0;
};

// mean((pred - label)^2), from graph ops; autodiff differentiates it.
StatusOr<std::string> SquaredError(graph::Builder& b, const std::string& pred, const std::string& label) {
  const std::string d = b.Emit1("Sub", {pred, label});
  return b.Emit1("ReduceMean", {b.Emit1("Mul", {d, d})}, {{"keepdims", graph::Attribute::Int(0)}});
}

// y = 2 x0 - x1 + 0.5 x2 + 0.3 (+ a little noise).
data::Dataset Data(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 3}), y = Tensor::Empty(DType::kFloat32, Shape{n, 1});
  for (int i = 0; i < n; ++i) {
    float* r = x.data<float>() + i * 3;
    for (int j = 0; j < 3; ++j) r[j] = rng.Normal();
    y.data<float>()[i] = 2 * r[0] - r[1] + 0.5f * r[2] + 0.3f + 0.01f * rng.Normal();
  }
  return data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Batch(32);
}

Status Run() {
  auto in = nn::Input({3}, "x");
  auto y = nn::Dense(1)(nn::Dense(8, {.activation = "tanh"})(in));
  nn::Model model({in}, {{"y", y}}, "custom_training");
  train::CompileOptions c;
  c.loss["y"] = nn::Loss::Custom("squared_error", SquaredError);
  c.metrics["y"] = {std::make_shared<MaxAbsError>()};
  c.optimizer = std::make_shared<Momentum>(0.02, 0.9f);
  STRATA_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(&model, c, {.seed = 1}));
  STRATA_ASSIGN_OR_RETURN(auto history, trainer->Fit(Data(512, 1), {.epochs = 8, .validation_data = Data(128, 2),
                                                                     .verbose = 2}));
  const std::vector<double>& loss = history.history.at("loss");
  std::printf("loss %.4f -> %.4f, validation max_abs_error %.4f\n", loss.front(), loss.back(),
              history.history.at("val_max_abs_error").back());
  if (!(loss.back() < 0.1 * loss.front())) return InternalError("the loss did not fall: training did not work");
  return Status::OK();
}

}  // namespace

int main() {
  Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "custom_training: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
