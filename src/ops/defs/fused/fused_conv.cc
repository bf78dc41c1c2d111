// strata.FusedConv: Y = activation(Conv(X, W, B) + Z), written by the fusion passes (graph/passes/fuse_conv.cc).
// Inputs X, W, B (optional) and attributes are Conv's (or ConvTranspose's when `transpose` = 1); Z (optional) is a
// residual of Y's shape; the activation is given by `activation`, `activation_alpha`, `activation_beta`
// (ops/defs/fused/activation.h). The reference kernel runs the base op's reference kernel and finishes in place.
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

std::string_view BaseOp(const Node& node) { return node.GetInt("transpose", 0) != 0 ? "ConvTranspose" : "Conv"; }

Status FusedConvInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema(BaseOp(ctx.node())));
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(ctx.node()).status());
  STRATA_RETURN_IF_ERROR(InferLikeBase(ctx, *base, 3));
  if (ctx.has_input(3)) {
    const ValueType& z = ctx.input(3);
    const ValueType& y = ctx.output(0);
    if (z.dtype != DType::kUndefined && z.dtype != y.dtype)
      return ctx.Error("Z must have the element type of X (", DTypeName(y.dtype), "), got ", DTypeName(z.dtype));
    if (z.shape.IsFullyKnown() && y.shape.IsFullyKnown() && z.shape.ToShape() != y.shape.ToShape())
      return ctx.Error("Z ", z.shape.ToString(), " must have the output's shape ", y.shape.ToString());
  }
  return Status::OK();
}

Status FusedConvCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema(BaseOp(ctx.node())));
  STRATA_ASSIGN_OR_RETURN(Activation act, ReadFusedActivation(ctx.node()));
  DelegateContext sub(ctx, 3);
  STRATA_RETURN_IF_ERROR(base->reference(sub));
  Tensor* y = sub.produced(0);
  if (y == nullptr) return InternalError(ctx.node().Describe(), ": the base op produced no output");
  const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (z != nullptr && z->shape() != y->shape())
    return ctx.Error("Z ", z->shape().ToString(), " must have the output's shape ", y->shape().ToString());
  return FinishInPlace(ctx.node(), y, z, act);
}

}  // namespace

void RegisterFusedConv(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "FusedConv";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = FusedConvInfer;
  s.reference = FusedConvCompute;
  s.no_grad_reason = "inference-only: the fusion passes run on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
