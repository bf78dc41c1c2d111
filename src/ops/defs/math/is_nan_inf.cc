// IsNaN (opset 9) and IsInf (opset 10, attributes detect_negative / detect_positive, both default 1): float input,
// bool output of the same shape. The two share a file because they are the same op with a different predicate.
#include <cmath>
#include <limits>

#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

constexpr const char* kBoolNoGrad = "bool output";

Status InferPredicate(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kFloat));
  ctx.SetOutput(0, DType::kBool, ctx.input_shape(0));
  return Status::OK();
}

template <typename F>
Status FloatPredicate(KernelContext& ctx, F&& pred) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kFloat));
  return DispatchFloat(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    return UnaryMap<T, bool>(ctx, DType::kBool, [&](T x) { return pred(static_cast<C>(x)); });
  });
}

Status IsNaNCompute(KernelContext& ctx) {
  return FloatPredicate(ctx, [](auto x) { return std::isnan(x); });
}

Status IsInfCompute(KernelContext& ctx) {
  const bool neg = ctx.node().GetInt("detect_negative", 1) != 0;
  const bool pos = ctx.node().GetInt("detect_positive", 1) != 0;
  return FloatPredicate(ctx, [&](auto x) {
    using C = decltype(x);
    constexpr C kInf = std::numeric_limits<C>::infinity();
    return (pos && x == kInf) || (neg && x == -kInf);
  });
}

}  // namespace

void RegisterIsNaN(OpRegistry* r) { r->Add(ew::MakeSchema("IsNaN", 9, 1, 1, InferPredicate, IsNaNCompute, kBoolNoGrad)); }
void RegisterIsInf(OpRegistry* r) { r->Add(ew::MakeSchema("IsInf", 10, 1, 1, InferPredicate, IsInfCompute, kBoolNoGrad)); }

}  // namespace strata::ops
