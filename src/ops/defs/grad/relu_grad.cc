// strata.ReluGrad(dY, Y): dX = dY where Y > 0, else 0 (Y = Relu(X), so Y > 0 exactly where X > 0). The gradient of
// Relu; reading Y instead of X lets the planner free X early. Its own gradient wrt dY is ReluGrad again.
#include "ops/defs/grad/activation_grad.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ReluGradCompute(KernelContext& ctx) {
  return ActivationGradKernel(ctx, [](auto dy, auto y) { return y > decltype(y)(0) ? dy : decltype(y)(0); });
}

// ReluGrad is linear in dY with a piecewise-constant mask: d/d(dY) = ReluGrad(ddX, Y), d/dY = 0 almost everywhere.
Status ReluGradGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(0, Emit1(ctx, "ReluGrad", {ctx.output_grad(0), In(ctx, 1)}, {}, graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterReluGrad(OpRegistry* r) { r->Add(ActivationGradSchema("ReluGrad", ReluGradCompute, ReluGradGrad)); }

}  // namespace strata::ops
