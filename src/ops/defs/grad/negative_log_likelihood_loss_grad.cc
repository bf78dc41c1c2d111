// strata.NegativeLogLikelihoodLossGrad(dloss, input_shape, target[, weight]), attributes reduction and ignore_index:
// the gradient of NegativeLogLikelihoodLoss with respect to its input (of shape input_shape, int64):
// dInput = -a * onehot(target), a = weight[target] * (dloss, or dloss / sum of weights for "mean"), zero at ignored
// positions. See loss_grad.h.
#include "ops/defs/grad/loss_grad.h"

namespace strata::ops {
namespace {

Status NllGradInfer(InferContext& ctx) { return InferLossGrad(ctx, /*softmax=*/false); }
Status NllGradCompute(KernelContext& ctx) { return LossGradCompute(ctx, /*softmax=*/false); }

}  // namespace

void RegisterNegativeLogLikelihoodLossGrad(OpRegistry* r) {
  OpSchema s = LossGradSchema("NegativeLogLikelihoodLossGrad");
  s.infer = NllGradInfer;
  s.reference = NllGradCompute;
  r->Add(std::move(s));
}

}  // namespace strata::ops
