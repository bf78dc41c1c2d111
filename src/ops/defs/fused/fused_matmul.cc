// strata.FusedMatMul: Y = activation(MatMul(A, B) + C), written by the fusion passes (graph/passes/fuse_matmul.cc).
// C (optional) broadcasts to MatMul's output without changing its shape (a bias [N], a row [1, N], or a full
// tensor); the activation is given by `activation`, `activation_alpha`, `activation_beta`
// (ops/defs/fused/activation.h).
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

Status FusedMatMulInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema("MatMul"));
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(ctx.node()).status());
  STRATA_RETURN_IF_ERROR(InferLikeBase(ctx, *base, 2));
  if (ctx.has_input(2)) {
    const ValueType& c = ctx.input(2);
    const ValueType& y = ctx.output(0);
    if (c.dtype != DType::kUndefined && c.dtype != y.dtype)
      return ctx.Error("C must have the element type of A (", DTypeName(y.dtype), "), got ", DTypeName(c.dtype));
    if (c.shape.IsFullyKnown() && y.shape.IsFullyKnown()) {
      auto s = BroadcastShapes(y.shape.ToShape(), c.shape.ToShape());
      if (!s.ok() || *s != y.shape.ToShape())
        return ctx.Error("C ", c.shape.ToString(), " does not broadcast to the output ", y.shape.ToString());
    }
  }
  return Status::OK();
}

Status FusedMatMulCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema("MatMul"));
  STRATA_ASSIGN_OR_RETURN(Activation act, ReadFusedActivation(ctx.node()));
  DelegateContext sub(ctx, 2);
  STRATA_RETURN_IF_ERROR(base->reference(sub));
  Tensor* y = sub.produced(0);
  if (y == nullptr) return InternalError(ctx.node().Describe(), ": MatMul produced no output");
  return FinishInPlace(ctx.node(), y, ctx.has_input(2) ? &ctx.input(2) : nullptr, act);
}

}  // namespace

void RegisterFusedMatMul(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "FusedMatMul";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = FusedMatMulInfer;
  s.reference = FusedMatMulCompute;
  s.no_grad_reason = "inference-only: the fusion passes run on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
