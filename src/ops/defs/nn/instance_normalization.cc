// InstanceNormalization (opset 1, 6): for every (n, c) plane of X (N, C, D1..Dn), rank >= 2,
//   Y = scale[c] * (X - mean) / sqrt(var + epsilon) + B[c]
// with the plane's mean and population variance. Float element types (16-bit floats compute in float32).
#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status InstanceNormInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "input"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "scale"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "B"));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() < 2) return ctx.Error("input must have rank >= 2 (N, C, ...), got ", x.ToString());
  for (int i = 1; i <= 2; ++i) {
    const PartialShape& s = ctx.input_shape(i);
    if (!s.rank_known) continue;
    if (s.rank() != 1 || (x.rank_known && s.dims[0].known() && x.dims[1].known() && s.dims[0].value != x.dims[1].value))
      return ctx.Error(i == 1 ? "scale" : "B", " must be 1-D with one value per channel, got ", s.ToString(),
                       " for input ", x.ToString());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::OK();
}

Status InstanceNormCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype()) || ctx.input(1).dtype() != x.dtype() || ctx.input(2).dtype() != x.dtype())
    return ctx.Error("input, scale and B must share one float element type");
  if (x.rank() < 2) return ctx.Error("input must have rank >= 2 (N, C, ...), got ", x.shape().ToString());
  const int64_t channels = x.dim(1), planes = x.dim(0) * channels, inner = x.shape().Product(2, x.rank());
  for (int i = 1; i <= 2; ++i)
    if (ctx.input(i).shape() != Shape{channels})
      return ctx.Error(i == 1 ? "scale" : "B", " must have shape [", channels, "], got ",
                       ctx.input(i).shape().ToString());
  const double eps = ctx.node().GetFloat("epsilon", 1e-5f);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    STRATA_ASSIGN_OR_RETURN(std::vector<C> scale, nn::ReadAs<C>(ctx.input(1)));
    STRATA_ASSIGN_OR_RETURN(std::vector<C> bias, nn::ReadAs<C>(ctx.input(2)));
    const T* px = x.data<T>();
    T* py = y->data<T>();
    ParallelFor(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner)), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* src = px + p * inner;
        T* dst = py + p * inner;
        C sum = C(0);
        for (int64_t i = 0; i < inner; ++i) sum += ToCompute(src[i]);
        const C mean = inner > 0 ? sum / static_cast<C>(inner) : C(0);
        C sq = C(0);
        for (int64_t i = 0; i < inner; ++i) {
          const C d = ToCompute(src[i]) - mean;
          sq += d * d;
        }
        const C var = inner > 0 ? sq / static_cast<C>(inner) : C(0);
        const C a = scale[p % channels] / std::sqrt(var + static_cast<C>(eps));
        const C b = bias[p % channels];
        for (int64_t i = 0; i < inner; ++i) dst[i] = FromCompute<T>((ToCompute(src[i]) - mean) * a + b);
      }
    });
    return Status::OK();
  });
}

// Per (n, c) plane this is a layer normalisation over the spatial axes with a per-channel scale: dX =
// strata.LayerNormalizationGrad(dY * scale[c], X) over axis 2; dScale = sum(dY * xhat) and dB = sum(dY) over every axis
// but the channels, with xhat the plane-normalised X (InstanceNormalization with unit scale and zero bias).
Status InstanceNormGrad(GradContext& ctx) {
  const int rank = ctx.input_type(0).shape.rank();
  if (rank < 3)
    return UnimplementedError(ctx.node().Describe(),
                              ": the gradient of InstanceNormalization needs X of known rank >= 3");
  const std::string& dy = ctx.output_grad(0);
  const AttributeMap eps = CopyAttrs(ctx.node(), {"epsilon"});
  std::vector<int64_t> channel_view, sum_axes{0};
  for (int i = 2; i < rank; ++i) channel_view.push_back(i - 1), sum_axes.push_back(i);
  if (ctx.needs_input_grad(0)) {
    const std::string s = Emit1(ctx, "Unsqueeze", {In(ctx, 1), ConstInts(ctx, channel_view)});
    AttributeMap attrs = eps;
    attrs["axis"] = Attribute::Int(2);
    ctx.SetInputGrad(0, Emit1(ctx, "LayerNormalizationGrad", {EMul(ctx, dy, s), In(ctx, 0)}, std::move(attrs),
                              graph::kStrataDomain));
  }
  AttributeMap keep;
  keep["keepdims"] = Attribute::Int(0);
  const std::string axes = ConstInts(ctx, sum_axes);
  if (ctx.needs_input_grad(1)) {
    const std::string shape = Emit1(ctx, "Shape", {In(ctx, 1)});
    const std::string one = Emit1(ctx, "Expand", {ScalarConst(ctx, InType(ctx, 1), 1.0), shape});
    const std::string zero = Emit1(ctx, "Expand", {ScalarConst(ctx, InType(ctx, 1), 0.0), shape});
    const std::string xhat = Emit1(ctx, "InstanceNormalization", {In(ctx, 0), one, zero}, eps);
    ctx.SetInputGrad(1, Emit1(ctx, "ReduceSum", {EMul(ctx, dy, xhat), axes}, keep));
  }
  if (ctx.needs_input_grad(2)) ctx.SetInputGrad(2, Emit1(ctx, "ReduceSum", {dy, axes}, keep));
  return Status::OK();
}

}  // namespace

void RegisterInstanceNormalization(OpRegistry* r) {
  OpSchema s;
  s.name = "InstanceNormalization";
  s.since_version = 6;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = InstanceNormInfer;
  s.reference = InstanceNormCompute;
  s.grad = InstanceNormGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
