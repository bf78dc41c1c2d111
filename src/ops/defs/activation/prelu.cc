// PRelu: y = x < 0 ? slope * x : x, where slope broadcasts unidirectionally to X (numpy rules, output shape = X's).
//   opset 6: slope is per channel: a 1-element slope is shared, and a 1-D slope of X.shape[1] elements applies along
//     axis 1 (how PyTorch exported PReLU then); any other slope must already broadcast the numpy way.
//   opset 7+: numpy unidirectional broadcasting. opset 9+: integer types (int32, int64, uint32, uint64) too.
#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

TypeClass ClassFor(int opset) { return opset >= 9 ? TypeClass::kNumeric : TypeClass::kFloat; }

// The slope's shape as numpy broadcasting should see it.
Shape SlopeShape(int opset, const Shape& x, const Shape& slope) {
  if (opset < 7 && slope.rank() == 1 && x.rank() >= 2 && slope[0] == x[1] && slope[0] != 1) {
    Shape s{slope[0]};
    for (int i = 2; i < x.rank(); ++i) s.PushBack(1);
    return s;
  }
  return slope;
}

Status PReluCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(ctx.opset())));
  if (slope.dtype() != x.dtype())
    return ctx.Error("slope must have X's element type ", DTypeName(x.dtype()), ", got ", DTypeName(slope.dtype()));
  const Shape slope_shape = SlopeShape(ctx.opset(), x.shape(), slope.shape());
  auto out = BroadcastShapes(x.shape(), slope_shape);
  if (!out.ok() || *out != x.shape())
    return ctx.Error("slope of shape ", slope.shape().ToString(), " does not broadcast to X of shape ",
                     x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    ew::BroadcastBinary(x.data<T>(), x.shape(), slope.data<T>(), slope_shape, y->data<T>(), x.shape(), [](T a, T s) {
      const C v = static_cast<C>(a);
      return v < C(0) ? T(static_cast<C>(ew::WrapMul(static_cast<C>(s), v))) : a;
    });
    return Status::OK();
  });
}

Status InferPRelu(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(ctx.opset())));
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  const PartialShape& xs = ctx.input_shape(0);
  const PartialShape& ss = ctx.input_shape(1);
  if (xs.IsFullyKnown() && ss.IsFullyKnown()) {
    const Shape slope_shape = SlopeShape(ctx.opset(), xs.ToShape(), ss.ToShape());
    auto out = BroadcastShapes(xs.ToShape(), slope_shape);
    if (!out.ok() || *out != xs.ToShape())
      return ctx.Error("slope of shape ", ss.ToString(), " does not broadcast to X of shape ", xs.ToString());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), xs);
  return Status::OK();
}

// dX = dY where X >= 0, dY * slope elsewhere; dslope = the sum of dY * X over the negative X it scaled. Opset 6
// per-channel slopes are viewed as [C, 1, ...] for the arithmetic (shapes must be known then).
Status PReluGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const std::string& x = In(ctx, 0);
  std::string slope = In(ctx, 1);
  bool per_channel = false;
  if (ctx.node().opset < 7) {
    const PartialShape& xs = ctx.input_type(0).shape;
    const PartialShape& ss = ctx.input_type(1).shape;
    if (!xs.IsFullyKnown() || !ss.IsFullyKnown())
      return UnimplementedError(ctx.node().Describe(), ": the gradient of opset ", ctx.node().opset,
                                " PRelu needs known shapes");
    const Shape view = SlopeShape(ctx.node().opset, xs.ToShape(), ss.ToShape());
    per_channel = view != ss.ToShape();
    if (per_channel) slope = Emit1(ctx, "Reshape", {slope, ConstInts(ctx, view.ToVector())});
  }
  const std::string zero = ScalarConst(ctx, InType(ctx, 0), 0.0);
  const std::string neg = Emit1(ctx, "Less", {x, zero});
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, EWhere(ctx, neg, EMul(ctx, dy, slope), dy));
  if (ctx.needs_input_grad(1)) {
    const std::string g = EWhere(ctx, neg, EMul(ctx, dy, x), zero);
    std::string target = Emit1(ctx, "Shape", {slope});
    std::string ds = Emit1(ctx, "ReduceSumTo", {g, target}, {}, graph::kStrataDomain);
    if (per_channel) ds = Emit1(ctx, "Reshape", {ds, Emit1(ctx, "Shape", {In(ctx, 1)})});
    ctx.SetInputGrad(1, ds);
  }
  return Status::OK();
}

}  // namespace

void RegisterPRelu(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("PRelu", 6, 2, 2, InferPRelu, PReluCompute), PReluGrad));
}

}  // namespace strata::ops
