// strata.SigmoidGrad(dY, Y): dX = dY * Y * (1 - Y), the gradient of Sigmoid from its output.
#include "ops/defs/grad/activation_grad.h"

namespace strata::ops {
namespace {

Status SigmoidGradCompute(KernelContext& ctx) {
  return ActivationGradKernel(ctx, [](auto dy, auto y) { return dy * y * (decltype(y)(1) - y); });
}

}  // namespace

void RegisterSigmoidGrad(OpRegistry* r) { r->Add(ActivationGradSchema("SigmoidGrad", SigmoidGradCompute)); }

}  // namespace strata::ops
