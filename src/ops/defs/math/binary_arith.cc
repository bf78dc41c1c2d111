// Add, Sub, Mul, Div: broadcasting arithmetic (ONNX opsets 7-14). Integer Div truncates toward zero, as C does;
// integer division by zero gives InvalidArgument instead of crashing.
#include "ops/elementwise.h"
#include "ops/grad_util.h"

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

// d(a+b) = (dy, dy); d(a-b) = (dy, -dy); d(a*b) = (dy*b, dy*a); d(a/b) = (dy/b, -dy*a/b^2); each reduced to its
// input's shape when the op broadcast it.
Status AddGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, dy, 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, dy, 1));
  return Status::OK();
}
Status SubGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, dy, 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, Emit1(ctx, "Neg", {dy}), 1));
  return Status::OK();
}
Status MulGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const auto& in = ctx.node().inputs;
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, Emit1(ctx, "Mul", {dy, in[1]}), 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, Emit1(ctx, "Mul", {dy, in[0]}), 1));
  return Status::OK();
}
Status DivGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const auto& in = ctx.node().inputs;
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, Emit1(ctx, "Div", {dy, in[1]}), 0));
  if (ctx.needs_input_grad(1)) {
    // -dy * y / b, with y = a / b the op's own output.
    const std::string t = Emit1(ctx, "Mul", {dy, ctx.node().outputs[0]});
    ctx.SetInputGrad(1, ReduceGradTo(ctx, Emit1(ctx, "Neg", {Emit1(ctx, "Div", {t, in[1]})}), 1));
  }
  return Status::OK();
}

OpSchema Arith(const char* name, ComputeFn fn, GradFn grad) {
  OpSchema s;
  s.name = name;
  s.since_version = 7;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = InferBroadcast;
  s.reference = fn;
  s.grad = grad;
  return s;
}

}  // namespace

void RegisterAdd(OpRegistry* r) { r->Add(Arith("Add", AddCompute, AddGrad)); }
void RegisterSub(OpRegistry* r) { r->Add(Arith("Sub", SubCompute, SubGrad)); }
void RegisterMul(OpRegistry* r) { r->Add(Arith("Mul", MulCompute, MulGrad)); }
void RegisterDiv(OpRegistry* r) { r->Add(Arith("Div", DivCompute, DivGrad)); }

}  // namespace strata::ops
