// strata.SoftmaxGrad(dY, Y): the gradient of Softmax from its output, dX = Y * (dY - sum(dY * Y)) along the
// normalised axes (attributes axis and flatten; softmax_grad.h).
#include "ops/defs/grad/softmax_grad.h"

namespace strata::ops {
namespace {

Status SoftmaxGradRef(KernelContext& ctx) { return SoftmaxGradCompute(ctx, /*log=*/false); }

}  // namespace

void RegisterSoftmaxGrad(OpRegistry* r) { r->Add(SoftmaxGradSchema("SoftmaxGrad", SoftmaxGradRef, nullptr)); }

}  // namespace strata::ops
