// strata.LogSoftmaxGrad(dY, Y): the gradient of LogSoftmax from its output, dX = dY - exp(Y) * sum(dY) along the
// normalised axes (attributes axis and flatten; softmax_grad.h).
#include "ops/defs/grad/softmax_grad.h"

namespace strata::ops {
namespace {

Status LogSoftmaxGradRef(KernelContext& ctx) { return SoftmaxGradCompute(ctx, /*log=*/true); }

}  // namespace

void RegisterLogSoftmaxGrad(OpRegistry* r) { r->Add(SoftmaxGradSchema("LogSoftmaxGrad", LogSoftmaxGradRef, nullptr)); }

}  // namespace strata::ops
