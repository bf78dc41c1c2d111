// Add, Sub, Mul, Div: broadcasting arithmetic (ONNX opsets 7-14). Integer Div truncates toward zero, as C does;
// integer division by zero gives InvalidArgument instead of crashing.
#include "ops/elementwise.h"

namespace strata::ops {
namespace {

template <typename Fn>
Status ArithKernel(KernelContext& ctx, Fn fn) {
  const DType t = ctx.input(0).dtype();
  if (ctx.input(1).dtype() != t)
    return ctx.Error("inputs must have the same element type, got ", DTypeName(t), " and ",
                     DTypeName(ctx.input(1).dtype()));
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    return BinaryMap<T, T>(ctx, DType::kUndefined, [&](T a, T b) { return T(static_cast<C>(fn(C(a), C(b)))); });
  });
}

Status AddCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return a + b; });
}
Status SubCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return a - b; });
}
Status MulCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return a * b; });
}
Status DivCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  if (IsInteger(t)) {
    bool div_by_zero = false;
    Status s = DispatchInteger(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return BinaryMap<T, T>(ctx, DType::kUndefined, [&](T a, T b) -> T {
        if (b == 0) {
          div_by_zero = true;
          return 0;
        }
        if constexpr (std::is_signed_v<T>) {
          if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));  // no overflow trap on MIN/-1
        }
        return static_cast<T>(a / b);
      });
    });
    if (s.ok() && div_by_zero) return ctx.Error("integer division by zero");
    return s;
  }
  return ArithKernel(ctx, [](auto a, auto b) { return a / b; });
}

OpSchema Arith(const char* name, ComputeFn fn) {
  OpSchema s;
  s.name = name;
  s.since_version = 7;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = InferBroadcast;
  s.reference = fn;
  return s;
}

}  // namespace

void RegisterAdd(OpRegistry* r) { r->Add(Arith("Add", AddCompute)); }
void RegisterSub(OpRegistry* r) { r->Add(Arith("Sub", SubCompute)); }
void RegisterMul(OpRegistry* r) { r->Add(Arith("Mul", MulCompute)); }
void RegisterDiv(OpRegistry* r) { r->Add(Arith("Div", DivCompute)); }

}  // namespace strata::ops
