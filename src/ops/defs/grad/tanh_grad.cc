// strata.TanhGrad(dY, Y): dX = dY * (1 - Y^2), the gradient of Tanh from its output.
#include "ops/defs/grad/activation_grad.h"

namespace strata::ops {
namespace {

Status TanhGradCompute(KernelContext& ctx) {
  return ActivationGradKernel(ctx, [](auto dy, auto y) { return dy * (decltype(y)(1) - y * y); });
}

}  // namespace

void RegisterTanhGrad(OpRegistry* r) { r->Add(ActivationGradSchema("TanhGrad", TanhGradCompute)); }

}  // namespace strata::ops
