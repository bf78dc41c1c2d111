// NegativeLogLikelihoodLoss (opset 12, 13: bfloat16): input [N, C, d1..dk] holds log-probabilities, target
// [N, d1..dk] class indices, optional weight [C]; attributes reduction (none/sum/mean, default mean) and ignore_index.
// loss = -weight[t] * input[n, t, d...], reduced as loss_util.h describes.
#include "ops/defs/loss/loss_util.h"
#include "ops/grad_util.h"

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

// dInput = strata.NegativeLogLikelihoodLossGrad(dloss, Shape(input), target, weight).
Status NllGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(2))
    return UnimplementedError(ctx.node().Describe(),
                              ": the gradient with respect to the class weights is not supported");
  std::vector<std::string> ins{ctx.output_grad(0), Emit1(ctx, "Shape", {In(ctx, 0)}), In(ctx, 1)};
  if (ctx.node().has_input(2)) ins.push_back(In(ctx, 2));
  ctx.SetInputGrad(0, Emit1(ctx, "NegativeLogLikelihoodLossGrad", ins,
                            CopyAttrs(ctx.node(), {"reduction", "ignore_index"}), graph::kStrataDomain));
  return Status::OK();
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
  s.grad = NllGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
