// Add, Sub, Mul, Div: broadcasting arithmetic (ONNX opsets 6-14; opset < 7 models use the legacy broadcast/axis
// attributes). Signed integer overflow wraps (two's complement) instead of being undefined behaviour. Integer Div
// truncates toward zero, as C does; integer division by zero gives InvalidArgument instead of crashing. Gradients are
// graph to graph (each reduced to its input's shape when the op broadcast it).
#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

template <typename Fn>
Status ArithKernel(KernelContext& ctx, Fn fn) {
  const DType t = ctx.input(0).dtype();
  if (ctx.input(1).dtype() != t)
    return ctx.Error("inputs must have the same element type, got ", DTypeName(t), " and ",
                     DTypeName(ctx.input(1).dtype()));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, t, out_shape));
    ew::BroadcastBinary(ctx.input(0).data<T>(), ctx.input(0).shape(), ctx.input(1).data<T>(), b_shape, y->data<T>(),
                        out_shape, [&](T a, T b) { return T(static_cast<C>(fn(C(a), C(b)))); });
    return Status::OK();
  });
}

Status AddCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return ew::WrapAdd(a, b); });
}
Status SubCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return ew::WrapSub(a, b); });
}
Status MulCompute(KernelContext& ctx) {
  return ArithKernel(ctx, [](auto a, auto b) { return ew::WrapMul(a, b); });
}

Status IntegerDiv(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  bool div_by_zero = false;
  Status s = DispatchInteger(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, t, out_shape));
    ew::BroadcastBinary(ctx.input(0).data<T>(), ctx.input(0).shape(), ctx.input(1).data<T>(), b_shape, y->data<T>(),
                        out_shape, [&](T a, T b) -> T {
                          if (b == 0) {
                            div_by_zero = true;
                            return 0;
                          }
                          if constexpr (std::is_signed_v<T>) {
                            if (b == -1) return ew::WrapSub(T(0), a);  // no overflow trap on MIN / -1
                          }
                          return static_cast<T>(a / b);
                        });
    return Status::OK();
  });
  if (s.ok() && div_by_zero) return ctx.Error("integer division by zero");
  return s;
}

Status DivCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  if (IsInteger(t) && ctx.input(1).dtype() == t) return IntegerDiv(ctx);
  return ArithKernel(ctx, [](auto a, auto b) { return a / b; });
}

Status InferArith(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ew::TypeClass::kNumeric));
  return ew::InferBinaryShape(ctx, DType::kUndefined);
}

// d(a+b) = (dy, dy); d(a-b) = (dy, -dy); d(a*b) = (dy*b, dy*a); d(a/b) = (dy/b, -dy*a/b^2); each reduced to its
// input's shape when the op broadcast it.
Status AddGrad(GradContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckNumpyBroadcast(ctx));
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, dy, 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, dy, 1));
  return Status::OK();
}
Status SubGrad(GradContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckNumpyBroadcast(ctx));
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, dy, 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, Emit1(ctx, "Neg", {dy}), 1));
  return Status::OK();
}
Status MulGrad(GradContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckNumpyBroadcast(ctx));
  const std::string& dy = ctx.output_grad(0);
  const auto& in = ctx.node().inputs;
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, Emit1(ctx, "Mul", {dy, in[1]}), 0));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, Emit1(ctx, "Mul", {dy, in[0]}), 1));
  return Status::OK();
}
Status DivGrad(GradContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckNumpyBroadcast(ctx));
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
  OpSchema s = ew::MakeSchema(name, 7, 2, 2, InferArith, fn);
  s.grad = grad;
  return s;
}

}  // namespace

void RegisterAdd(OpRegistry* r) { r->Add(Arith("Add", AddCompute, AddGrad)); }
void RegisterSub(OpRegistry* r) { r->Add(Arith("Sub", SubCompute, SubGrad)); }
void RegisterMul(OpRegistry* r) { r->Add(Arith("Mul", MulCompute, MulGrad)); }
void RegisterDiv(OpRegistry* r) { r->Add(Arith("Div", DivCompute, DivGrad)); }

}  // namespace strata::ops
