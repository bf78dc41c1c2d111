// strata.QuantizedMatMul: a QDQ MatMul or Gemm, written by graph/passes/fuse_quantized.cc from
//   DequantizeLinear(a) -> MatMul/Gemm(., DequantizeLinear(b) [, C]) [-> activation] [-> QuantizeLinear]
// Inputs: 0 a (uint8/int8 [..., K]; per tensor), 1 a_scale, 2 a_zero_point, 3 b (int8, 2-D: [K, N], or [N, K] with
// transB = 1), 4 b_scale (per tensor or [N]; b's zero point is 0), 5 bias (float32 [N], optional), 6 y_scale and
// 7 y_zero_point (optional: Y is then quantized to y_zero_point's type, else float32). Attributes: transB and the
// fused activation (ops/defs/fused/activation.h). Y = a @ b (+ bias) over the last axis of a.
// The reference kernel is the QDQ interpretation: DequantizeLinear of a and b, the reference MatMul, bias,
// activation, QuantizeLinear.
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

bool IsQuantized(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

Status QuantizedMatMulInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(ctx.node()).status());
  for (int i : {1, 3, 4})
    if (!ctx.has_input(i))
      return ctx.Error("input ", i, " (",
                       i == 1   ? "the input's scale"
                       : i == 3 ? "the int8 weights"
                                : "their scale",
                       ") is required");
  const DType at = ctx.input_dtype(0), bt = ctx.input_dtype(3);
  if (at != DType::kUndefined && !IsQuantized(at)) return ctx.Error("a must be uint8 or int8, got ", DTypeName(at));
  if (bt != DType::kUndefined && bt != DType::kInt8) return ctx.Error("b must be int8, got ", DTypeName(bt));
  const PartialShape& a = ctx.input_shape(0);
  const PartialShape& b = ctx.input_shape(3);
  if (b.rank_known && b.rank() != 2) return ctx.Error("b must be 2-D, got ", b.ToString());
  if (!a.rank_known || !b.rank_known) {
    ctx.SetOutput(0, DType::kFloat32, PartialShape::Unknown());
    return Status::OK();
  }
  if (a.rank() < 1) return ctx.Error("a must have at least one axis");
  const bool trans_b = ctx.node().GetInt("transB", 0) != 0;
  const Dim k = trans_b ? b.dims[1] : b.dims[0], n = trans_b ? b.dims[0] : b.dims[1];
  const Dim ak = a.dims[a.rank() - 1];
  if (ak.known() && k.known() && ak.value != k.value)
    return ctx.Error("a's last axis ", ak.value, " does not match b's K ", k.value);
  std::vector<Dim> out(a.dims.begin(), a.dims.end() - 1);
  out.push_back(n);
  DType yt = DType::kFloat32;
  if (ctx.has_input(6)) yt = ctx.has_input(7) ? ctx.input_dtype(7) : DType::kUInt8;
  ctx.SetOutput(0, yt, PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status QuantizedMatMulCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Activation act, ReadFusedActivation(ctx.node()));
  auto in = [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
  STRATA_ASSIGN_OR_RETURN(Tensor a, RunReferenceOp(ctx, "DequantizeLinear", {}, {in(0), in(1), in(2)}));
  const bool trans_b = ctx.node().GetInt("transB", 0) != 0;
  Tensor b_zp = Tensor::Zeros(DType::kInt8, ctx.input(4).shape());
  AttributeMap axis = {{"axis", graph::Attribute::Int(trans_b ? 0 : 1)}};
  STRATA_ASSIGN_OR_RETURN(Tensor b, RunReferenceOp(ctx, "DequantizeLinear", axis, {in(3), in(4), &b_zp}));
  if (trans_b) {
    STRATA_ASSIGN_OR_RETURN(b, RunReferenceOp(ctx, "Transpose", {}, {&b}));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor y, RunReferenceOp(ctx, "MatMul", {}, {&a, &b}));
  STRATA_RETURN_IF_ERROR(FinishInPlace(ctx.node(), &y, in(5), act));
  return WriteQuantizedOutput(ctx, y, 6);
}

}  // namespace

void RegisterQuantizedMatMul(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "QuantizedMatMul";
  s.min_inputs = 1;  // the zero points (2) are optional; 1, 3 and 4 are checked by inference
  s.max_inputs = 8;
  s.infer = QuantizedMatMulInfer;
  s.reference = QuantizedMatMulCompute;
  s.no_grad_reason = "inference-only: quantized (integer) operands, written by the fusion passes";
  r->Add(std::move(s));
}

}  // namespace strata::ops
