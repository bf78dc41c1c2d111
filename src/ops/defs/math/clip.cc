// Clip: y = min(max(x, lo), hi).
//   opset 6: bounds are float attributes min/max (defaults: the type's lowest/highest value); float inputs.
//   opset 11: bounds are optional scalar inputs 1 and 2 of x's type; float inputs. opset 12+: every numeric type.
// When lo > hi every element becomes hi (numpy.clip, the spec from opset 13 on says the same). NaN stays NaN.
#include <limits>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

TypeClass ClassFor(int opset) { return opset >= 12 ? TypeClass::kNumeric : TypeClass::kFloat; }

// Checks a bound input: x's dtype and one element.
Status CheckBound(const KernelContext& ctx, int i, std::string_view what) {
  if (!ctx.has_input(i)) return Status::OK();
  const Tensor& b = ctx.input(i);
  if (b.dtype() != ctx.input(0).dtype())
    return ctx.Error("input '", what, "' must have the input's element type ", DTypeName(ctx.input(0).dtype()),
                     ", got ", DTypeName(b.dtype()));
  if (b.num_elements() != 1)
    return ctx.Error("input '", what, "' must be a scalar, got shape ", b.shape().ToString());
  return Status::OK();
}

Status ClipCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(ctx.opset())));
  const bool attrs = ctx.opset() < 11;
  if (attrs && ctx.num_inputs() > 1)
    return ctx.Error("opset ", ctx.opset(), " takes the bounds as attributes min/max, not as inputs (", ctx.num_inputs(),
                     " inputs given)");
  if (!attrs) {
    STRATA_RETURN_IF_ERROR(CheckBound(ctx, 1, "min"));
    STRATA_RETURN_IF_ERROR(CheckBound(ctx, 2, "max"));
  }
  return DispatchNumeric(t, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if (attrs) {
      if constexpr (std::is_floating_point_v<C>) {
        if (ctx.node().HasAttr("min")) lo = static_cast<C>(ctx.node().GetFloat("min", 0));
        if (ctx.node().HasAttr("max")) hi = static_cast<C>(ctx.node().GetFloat("max", 0));
      }
    } else {
      if (ctx.has_input(1)) lo = static_cast<C>(ctx.input(1).data<T>()[0]);
      if (ctx.has_input(2)) hi = static_cast<C>(ctx.input(2).data<T>()[0]);
    }
    return UnaryMap<T, T>(ctx, DType::kUndefined, [lo, hi](T x) {
      C v = static_cast<C>(x);
      v = v < lo ? lo : v;
      v = hi < v ? hi : v;
      return T(v);
    });
  });
}

Status InferClip(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(ctx.opset())));
  if (ctx.opset() < 11 && ctx.num_inputs() > 1)
    return ctx.Error("opset ", ctx.opset(), " takes the bounds as attributes min/max, not as inputs (", ctx.num_inputs(),
                     " inputs given)");
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    const DType bt = ctx.input_dtype(i);
    if (bt != DType::kUndefined && ctx.input_dtype(0) != DType::kUndefined && bt != ctx.input_dtype(0))
      return ctx.Error("input '", i == 1 ? "min" : "max", "' must have the input's element type ",
                       DTypeName(ctx.input_dtype(0)), ", got ", DTypeName(bt));
    const PartialShape& s = ctx.input_shape(i);
    if (s.IsFullyKnown() && s.ToShape().NumElements() != 1)
      return ctx.Error("input '", i == 1 ? "min" : "max", "' must be a scalar, got shape ", s.ToString());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// The gradient passes where the input was not clipped (y == x); a bound input gets the gradient of the elements it
// replaced (below the lower bound, above the upper one).
Status ClipGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const std::string& x = In(ctx, 0);
  const std::string& y = Out(ctx, 0);
  const std::string zero = ScalarConst(ctx, InType(ctx, 0), 0.0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, EWhere(ctx, Emit1(ctx, "Equal", {x, y}), dy, zero));
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.needs_input_grad(i)) continue;
    const std::string replaced = Emit1(ctx, i == 1 ? "Less" : "Greater", {x, y});
    ctx.SetInputGrad(i, ReduceGradTo(ctx, EWhere(ctx, replaced, dy, zero), i));
  }
  return Status::OK();
}

}  // namespace

void RegisterClip(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Clip", 6, 1, 3, InferClip, ClipCompute), ClipGrad));
}

}  // namespace strata::ops
