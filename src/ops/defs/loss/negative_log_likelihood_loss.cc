// NegativeLogLikelihoodLoss (opset 12, 13: bfloat16): input [N, C, d1..dk] holds log-probabilities, target
// [N, d1..dk] class indices, optional weight [C]; attributes reduction (none/sum/mean, default mean) and ignore_index.
// loss = -weight[t] * input[n, t, d...], reduced as loss_util.h describes.
#include "ops/defs/loss/loss_util.h"

namespace strata::ops {
namespace {

Status NllCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(LossAttrs attrs, ParseLossAttrs(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(LossDims dims, CheckLossShapes(ctx));
  const Tensor& x = ctx.input(0);
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return WeightedNll<T>(ctx, attrs, dims, x.data<T>());
  });
}

}  // namespace

void RegisterNegativeLogLikelihoodLoss(OpRegistry* r) {
  OpSchema s;
  s.name = "NegativeLogLikelihoodLoss";
  s.since_version = 12;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = InferLoss;
  s.reference = NllCompute;
  r->Add(std::move(s));
}

}  // namespace strata::ops
