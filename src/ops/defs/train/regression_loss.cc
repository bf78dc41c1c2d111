// strata.RegressionLoss(pred, target) -> loss and strata.RegressionLossGrad(pred, target, dloss) -> dpred: Keras
// mean_squared_error, mean_absolute_error and huber (attribute kind = "mse" | "mae" | "huber", delta = 1.0),
// averaged over every element (Keras averages the last axis, then the batch: the same for equal-sized rows).
// target is float with pred's element count. Huber: 0.5 e^2 where |e| <= delta, else delta*|e| - 0.5 delta^2.
// The MAE derivative at e = 0 is 0.
#include <cmath>

#include "ops/defs/train/train_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

enum class Kind { kMse, kMae, kHuber };

StatusOr<Kind> KindOf(const Node& node) {
  const std::string k = node.GetString("kind", "mse");
  if (k == "mse") return Kind::kMse;
  if (k == "mae") return Kind::kMae;
  if (k == "huber") return Kind::kHuber;
  return InvalidArgumentError(node.Describe(), ": kind must be mse, mae or huber, got '", k, "'");
}

double At(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kFloat64 ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
}

// Sum of the element losses; fills d(loss_i)/d(pred_i) * scale into grad when given.
template <typename T>
double Run(Kind kind, double delta, const Tensor& p, const Tensor& t, T* grad, double scale) {
  double total = 0;
  for (int64_t i = 0; i < p.num_elements(); ++i) {
    const double e = At(p, i) - At(t, i);
    const double a = std::abs(e);
    const double sign = e > 0 ? 1.0 : e < 0 ? -1.0 : 0.0;
    double l = 0, d = 0;
    switch (kind) {
      case Kind::kMse: l = e * e, d = 2 * e; break;
      case Kind::kMae: l = a, d = sign; break;
      case Kind::kHuber:
        if (a <= delta) l = 0.5 * e * e, d = e;
        else l = delta * a - 0.5 * delta * delta, d = delta * sign;
        break;
    }
    total += l;
    if (grad) grad[i] = T(d * scale);
  }
  return total;
}

Status Check(const KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (p.dtype() != DType::kFloat32 && p.dtype() != DType::kFloat64)
    return ctx.Error("predictions must be float32 or float64, got ", p.TypeString());
  if ((t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) || t.num_elements() != p.num_elements())
    return ctx.Error("targets must be float with the predictions' ", p.num_elements(), " elements, got ",
                     t.TypeString());
  return KindOf(ctx.node()).status();
}

Status LossInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(KindOf(ctx.node()).status());
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::vector<Dim>{}));
  return Status::OK();
}

Status LossCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(Check(ctx));
  const Tensor& p = ctx.input(0);
  const Kind kind = *KindOf(ctx.node());
  const double delta = ctx.node().GetFloat("delta", 1.0f);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, p.dtype(), Shape{}));
  const double n = static_cast<double>(p.num_elements());
  const double sum = p.dtype() == DType::kFloat64 ? Run<double>(kind, delta, p, ctx.input(1), nullptr, 0)
                                                  : Run<float>(kind, delta, p, ctx.input(1), nullptr, 0);
  const double mean = n > 0 ? sum / n : 0.0;
  if (p.dtype() == DType::kFloat64) y->data<double>()[0] = mean;
  else y->data<float>()[0] = static_cast<float>(mean);
  return Status::OK();
}

Status LossGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status LossGradCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(Check(ctx));
  const Tensor& p = ctx.input(0);
  const Kind kind = *KindOf(ctx.node());
  const double delta = ctx.node().GetFloat("delta", 1.0f);
  STRATA_ASSIGN_OR_RETURN(double dloss, train_ops::ScalarInput(ctx, 2, "dloss", 1.0));
  STRATA_ASSIGN_OR_RETURN(Tensor * dp, ctx.Output(0, p.dtype(), p.shape()));
  const double n = static_cast<double>(p.num_elements());
  const double scale = n > 0 ? dloss / n : 0.0;
  if (p.dtype() == DType::kFloat64) Run<double>(kind, delta, p, ctx.input(1), dp->data<double>(), scale);
  else Run<float>(kind, delta, p, ctx.input(1), dp->data<float>(), scale);
  return Status::OK();
}

Status LossGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  AttributeMap attrs = ctx.node().attrs;
  ctx.SetInputGrad(0, Emit1(ctx, "RegressionLossGrad", {ctx.node().inputs[0], ctx.node().inputs[1], ctx.output_grad(0)},
                            std::move(attrs), graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterRegressionLoss(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "RegressionLoss";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = LossInfer;
  s.reference = LossCompute;
  s.grad = LossGrad;
  r->Add(std::move(s));
}

void RegisterRegressionLossGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "RegressionLossGrad";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = LossGradInfer;
  s.reference = LossGradCompute;
  s.no_grad_reason = "second derivatives of the loss are not needed for training";
  r->Add(std::move(s));
}

}  // namespace strata::ops
