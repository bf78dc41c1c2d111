// Dropout (opset 7, 10, 12, 13). In inference mode (always before opset 12; from opset 12 when the optional
// training_mode input is absent or false) the output is the input and the optional mask is all true (opset 10+:
// bool; opset 7: ones of the input type). In training mode (opset 12+), each element is kept when a uniform draw is
// >= ratio (optional input, default 0.5, in [0, 1)) and scaled by 1 / (1 - ratio); the mask records the kept ones.
// With a `seed` the draws are numpy's for numpy.random.seed(seed) (random_util.h), the convention of ONNX's tests.
#include "ops/defs/generator/random_util.h"
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status DropoutInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t))
    return ctx.Error("the input must be a float type, got ", DTypeName(t));
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kUndefined && ctx.input_dtype(2) != DType::kBool)
    return ctx.Error("training_mode must be bool, got ", DTypeName(ctx.input_dtype(2)));
  ctx.SetOutput(0, t, ctx.input_shape(0));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, ctx.opset() < 10 ? t : DType::kBool, ctx.input_shape(0));
  return Status::OK();
}

// Training mode and the drop ratio of this call.
StatusOr<std::pair<bool, double>> DropoutMode(const KernelContext& ctx) {
  if (ctx.opset() < 12) return std::make_pair(false, 0.0);
  bool training = false;
  if (ctx.has_input(2)) {
    const Tensor& t = ctx.input(2);
    if (t.dtype() != DType::kBool || t.num_elements() != 1)
      return ctx.Error("training_mode must be a bool scalar, got ", t.TypeString());
    training = t.data<bool>()[0];
  }
  double ratio = 0.5;
  if (ctx.has_input(1)) {
    auto r = ReadScalar(ctx.input(1), "ratio");
    if (!r.ok()) return ctx.Error(r.status().message());
    ratio = *r;
  }
  if (!(ratio >= 0 && ratio < 1)) return ctx.Error("ratio must be in [0, 1), got ", ratio);
  return std::make_pair(training, ratio);
}

Status DropoutCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(auto mode, DropoutMode(ctx));
  const auto [training, ratio] = mode;
  const bool want_mask = ctx.output_wanted(1);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  Tensor* mask = nullptr;
  if (want_mask) {
    STRATA_ASSIGN_OR_RETURN(mask, ctx.Output(1, ctx.opset() < 10 ? x.dtype() : DType::kBool, x.shape()));
  }
  const int64_t n = x.num_elements();
  if (!training || ratio == 0) {
    STRATA_RETURN_IF_ERROR(CopyElements(x, y));
    if (mask == nullptr) return Status::OK();
    if (mask->dtype() == DType::kBool) {
      std::fill_n(mask->data<bool>(), n, true);
      return Status::OK();
    }
    Tensor ones = Tensor::Empty(DType::kFloat32, x.shape());
    std::fill_n(ones.data<float>(), n, 1.0f);
    return ConvertElements(ones, mask);
  }
  NumpyRandom rng(OpSeed(ctx.node()));
  std::vector<bool> keep(n);
  for (int64_t i = 0; i < n; ++i) keep[i] = rng.Uniform() >= ratio;
  if (mask != nullptr)
    for (int64_t i = 0; i < n; ++i) mask->data<bool>()[i] = keep[i];
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const C scale = static_cast<C>(1.0 / (1.0 - ratio));
    const T* in = x.data<T>();
    T* out = y->data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = keep[i] ? T(C(ToCompute(in[i]) * scale)) : T(C(0));
    return Status::OK();
  });
}

// Inference mode passes dY through. Training mode: dX = dY * mask / (1 - ratio), with the mask the forward node drew
// (its optional output 1 is named for the purpose when the graph did not use it). When training_mode is only known
// at run time, the scale is chosen at run time too (the inference-mode mask is all true).
Status DropoutGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  const std::string& dy = ctx.output_grad(0);
  std::optional<std::vector<int64_t>> training;
  if (node.has_input(2)) {
    const ValueType& vt = ctx.input_type(2);
    if (vt.has_value() && vt.value->dtype() == DType::kBool && vt.value->num_elements() == 1)
      training = std::vector<int64_t>{vt.value->data<bool>()[0] ? 1 : 0};
  }
  if (node.opset < 12 || !node.has_input(2) || (training && (*training)[0] == 0)) {
    ctx.SetInputGrad(0, dy);
    return Status::OK();
  }
  const DType t = InType(ctx, 0);
  std::string scale;
  if (!node.has_input(1)) {
    scale = ScalarConst(ctx, t, 2.0);
  } else if (auto r = KnownInputScalar(ctx, 1)) {
    scale = ScalarConst(ctx, t, 1.0 / (1.0 - *r));
  } else {
    const std::string one = ScalarConst(ctx, t, 1.0);
    scale = EDiv(ctx, one, ESub(ctx, one, Emit1(ctx, "CastLike", {In(ctx, 1), In(ctx, 0)})));
  }
  if (!training) scale = EWhere(ctx, In(ctx, 2), scale, ScalarConst(ctx, t, 1.0));
  const std::string mask = ctx.ForwardOutput(1);
  ctx.SetInputGrad(0, EWhere(ctx, mask, EMul(ctx, dy, scale), ScalarConst(ctx, t, 0.0)));
  return Status::OK();
}

}  // namespace

void RegisterDropout(OpRegistry* r) {
  OpSchema s;
  s.name = "Dropout";
  s.since_version = 7;
  s.max_inputs = 3;
  s.max_outputs = 2;
  s.infer = DropoutInfer;
  s.reference = DropoutCompute;
  s.deterministic = false;  // training mode draws random masks
  s.grad = DropoutGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
