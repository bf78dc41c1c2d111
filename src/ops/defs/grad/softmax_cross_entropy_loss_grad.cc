// strata.SoftmaxCrossEntropyLossGrad(dloss, log_prob, target[, weight]), attributes reduction and ignore_index: the
// gradient of SoftmaxCrossEntropyLoss with respect to its scores, from the forward op's log_prob output:
// dScores = a * (softmax - onehot(target)), a = weight[target] * (dloss, or dloss / sum of weights for "mean"), zero
// at ignored positions. See loss_grad.h.
#include "ops/defs/grad/loss_grad.h"

namespace strata::ops {
namespace {

Status SceGradInfer(InferContext& ctx) { return InferLossGrad(ctx, /*softmax=*/true); }
Status SceGradCompute(KernelContext& ctx) { return LossGradCompute(ctx, /*softmax=*/true); }

}  // namespace

void RegisterSoftmaxCrossEntropyLossGrad(OpRegistry* r) {
  OpSchema s = LossGradSchema("SoftmaxCrossEntropyLossGrad");
  s.infer = SceGradInfer;
  s.reference = SceGradCompute;
  r->Add(std::move(s));
}

}  // namespace strata::ops
