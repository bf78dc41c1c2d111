// Shared by strata.SoftmaxCrossEntropyLossGrad and strata.NegativeLogLikelihoodLossGrad: the derivative of the
// weighted negative log-likelihood (loss_util.h) with respect to its [N, C, D] input.
//
// With a[n, d] = w[t] * s, t = target[n, d] (0 where t is ignore_index) and s = dloss[n, d] (reduction none),
// dloss (sum) or dloss / sum of the weights used (mean):
//   NLL:  dInput[n, c, d] = -a[n, d] * [c == t]
//   SCE:  dScores[n, c, d] = a[n, d] * (exp(log_prob[n, c, d]) - [c == t])
// Inputs: dloss, then log_prob (SCE) or the input's shape (NLL, int64), target [N, d1..dk], optional weight [C].
// Attributes reduction and ignore_index, as the forward op.
#pragma once

#include "ops/op.h"

namespace strata::ops {

Status InferLossGrad(InferContext& ctx, bool softmax);
Status LossGradCompute(KernelContext& ctx, bool softmax);
OpSchema LossGradSchema(const char* name);

}  // namespace strata::ops
