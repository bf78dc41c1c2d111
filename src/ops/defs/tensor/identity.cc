// Identity: output = input, as a view (no copy).
#include "ops/grad_util.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

Status IdentityCompute(KernelContext& ctx) {
  ctx.SetOutput(0, ctx.input(0));
  return Status::OK();
}

// dX = dY.
Status IdentityGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ctx.output_grad(0));
  return Status::OK();
}

}  // namespace

void RegisterIdentity(OpRegistry* r) {
  OpSchema s;
  s.name = "Identity";
  s.infer = InferSameAsInput0;
  s.reference = IdentityCompute;
  s.grad = IdentityGrad;
  s.view_input = 0;
  r->Add(std::move(s));
}

}  // namespace strata::ops
