// strata.FusedGemm: Y = activation(Gemm(A, B, C)), written by the fusion passes (graph/passes/fuse_gemm.cc). Inputs
// and attributes are Gemm's plus `activation`, `activation_alpha`, `activation_beta` (ops/defs/fused/activation.h).
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

Status FusedGemmInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema("Gemm"));
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(ctx.node()).status());
  return InferLikeBase(ctx, *base, 3);
}

Status FusedGemmCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* base, BaseSchema("Gemm"));
  STRATA_ASSIGN_OR_RETURN(Activation act, ReadFusedActivation(ctx.node()));
  DelegateContext sub(ctx, 3);
  STRATA_RETURN_IF_ERROR(base->reference(sub));
  Tensor* y = sub.produced(0);
  if (y == nullptr) return InternalError(ctx.node().Describe(), ": Gemm produced no output");
  return FinishInPlace(ctx.node(), y, nullptr, act);
}

}  // namespace

void RegisterFusedGemm(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "FusedGemm";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = FusedGemmInfer;
  s.reference = FusedGemmCompute;
  s.no_grad_reason = "inference-only: the fusion passes run on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
