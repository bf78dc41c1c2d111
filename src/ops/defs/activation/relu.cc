// Relu: max(x, 0).
#include "ops/elementwise.h"

namespace strata::ops {
namespace {

Status ReluCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  if (IsInteger(t) && !IsSignedInteger(t)) return ctx.Error("Relu does not accept unsigned ", DTypeName(t));
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    return UnaryMap<T, T>(ctx, DType::kUndefined, [](T x) { return C(x) > C(0) ? x : T(C(0)); });
  });
}

}  // namespace

void RegisterRelu(OpRegistry* r) {
  OpSchema s;
  s.name = "Relu";
  s.infer = InferSameAsInput0;
  s.reference = ReluCompute;
  r->Add(std::move(s));
}

}  // namespace strata::ops
