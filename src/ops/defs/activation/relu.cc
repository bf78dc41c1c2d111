// Relu: max(x, 0).
#include "ops/elementwise.h"
#include "ops/grad_util.h"

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

// dX = strata.ReluGrad(dY, Y): passes dY where the output is positive.
Status ReluGradFn(GradContext& ctx) {
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(0, Emit1(ctx, "ReluGrad", {ctx.output_grad(0), ctx.node().outputs[0]}, {}, graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterRelu(OpRegistry* r) {
  OpSchema s;
  s.name = "Relu";
  s.infer = InferSameAsInput0;
  s.reference = ReluCompute;
  s.grad = ReluGradFn;
  r->Add(std::move(s));
}

}  // namespace strata::ops
