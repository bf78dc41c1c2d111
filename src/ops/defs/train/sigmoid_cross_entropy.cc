// strata.SigmoidCrossEntropyWithLogits(x, labels) -> loss and strata.SigmoidCrossEntropyWithLogitsGrad(x, labels,
// dloss) -> dx: Keras binary_crossentropy averaged over every element. labels are float targets in [0, 1] with x's
// element count. from_logits=1 (default): loss = max(x,0) - x*z + log(1 + exp(-|x|)) (stable); from_logits=0: x is
// a probability clipped to [1e-7, 1-1e-7], loss = -(z log p + (1-z) log(1-p)), zero gradient where clipped.
#include <cmath>

#include "ops/defs/train/train_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr double kEpsilon = 1e-7;

double LabelAt(const Tensor& z, int64_t i) {
  return z.dtype() == DType::kFloat64 ? z.data<double>()[i] : static_cast<double>(z.data<float>()[i]);
}

Status CheckInputs(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& z = ctx.input(1);
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64)
    return ctx.Error("x must be float32 or float64, got ", x.TypeString());
  if ((z.dtype() != DType::kFloat32 && z.dtype() != DType::kFloat64) || z.num_elements() != x.num_elements())
    return ctx.Error("labels must be float with x's ", x.num_elements(), " elements, got ", z.TypeString());
  return Status::OK();
}

// Loss of element i and its derivative with respect to x.
inline void Element(double x, double z, bool from_logits, double* loss, double* d) {
  if (from_logits) {
    *loss = std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
    *d = 1.0 / (1.0 + std::exp(-x)) - z;
    return;
  }
  const double p = std::clamp(x, kEpsilon, 1 - kEpsilon);
  *loss = -(z * std::log(p) + (1 - z) * std::log(1 - p));
  *d = (x > kEpsilon && x < 1 - kEpsilon) ? (-z / p + (1 - z) / (1 - p)) : 0.0;
}

template <typename T>
double Run(const Tensor& x, const Tensor& z, bool from_logits, T* grad, double scale) {
  const T* px = x.data<T>();
  double total = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    double l, d;
    Element(static_cast<double>(px[i]), LabelAt(z, i), from_logits, &l, &d);
    total += l;
    if (grad) grad[i] = T(d * scale);
  }
  return total;
}

Status SigmoidXentInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::vector<Dim>{}));
  return Status::OK();
}

Status SigmoidXentCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckInputs(ctx));
  const Tensor& x = ctx.input(0);
  const bool from_logits = ctx.node().GetInt("from_logits", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{}));
  const double n = static_cast<double>(x.num_elements());
  if (x.dtype() == DType::kFloat64)
    y->data<double>()[0] = n > 0 ? Run<double>(x, ctx.input(1), from_logits, nullptr, 0) / n : 0.0;
  else
    y->data<float>()[0] = static_cast<float>(n > 0 ? Run<float>(x, ctx.input(1), from_logits, nullptr, 0) / n : 0.0);
  return Status::OK();
}

Status SigmoidXentGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status SigmoidXentGradCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckInputs(ctx));
  const Tensor& x = ctx.input(0);
  const bool from_logits = ctx.node().GetInt("from_logits", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(double dloss, train_ops::ScalarInput(ctx, 2, "dloss", 1.0));
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, x.dtype(), x.shape()));
  const double n = static_cast<double>(x.num_elements());
  const double scale = n > 0 ? dloss / n : 0.0;
  if (x.dtype() == DType::kFloat64)
    Run<double>(x, ctx.input(1), from_logits, dx->data<double>(), scale);
  else
    Run<float>(x, ctx.input(1), from_logits, dx->data<float>(), scale);
  return Status::OK();
}

Status SigmoidXentGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  AttributeMap attrs;
  attrs["from_logits"] = Attribute::Int(ctx.node().GetInt("from_logits", 1));
  ctx.SetInputGrad(0, Emit1(ctx, "SigmoidCrossEntropyWithLogitsGrad",
                            {ctx.node().inputs[0], ctx.node().inputs[1], ctx.output_grad(0)}, std::move(attrs),
                            graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterSigmoidCrossEntropyWithLogits(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SigmoidCrossEntropyWithLogits";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = SigmoidXentInfer;
  s.reference = SigmoidXentCompute;
  s.grad = SigmoidXentGrad;
  r->Add(std::move(s));
}

void RegisterSigmoidCrossEntropyWithLogitsGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SigmoidCrossEntropyWithLogitsGrad";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = SigmoidXentGradInfer;
  s.reference = SigmoidXentGradCompute;
  s.no_grad_reason = "second derivatives of the loss are not needed for training";
  r->Add(std::move(s));
}

}  // namespace strata::ops
