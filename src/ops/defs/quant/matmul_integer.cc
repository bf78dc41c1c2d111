// MatMulInteger (opset 10): Y = (A - a_zero_point) @ (B - b_zero_point) in int32, numpy matmul broadcasting. A and B
// are int8 or uint8; a_zero_point is a scalar, per row ([M], or [..., M, 1] for N-D A) and b_zero_point a scalar or
// per column ([N], or [..., 1, N]). Accumulation is in int32, as the spec's output type.
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status MatMulIntegerInfer(InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const DType t = ctx.input_dtype(i);
    if (t != DType::kUndefined && t != DType::kInt8 && t != DType::kUInt8)
      return ctx.Error("input ", i, " must be int8 or uint8, got ", DTypeName(t));
  }
  for (int i = 2; i < 4; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != DType::kUndefined && ctx.input_dtype(i - 2) != DType::kUndefined &&
        ctx.input_dtype(i) != ctx.input_dtype(i - 2))
      return ctx.Error("the zero point of input ", i - 2, " must have its element type");
  STRATA_ASSIGN_OR_RETURN(PartialShape out, quant::InferMatMulShape(ctx.node(), ctx.input_shape(0), ctx.input_shape(1)));
  ctx.SetOutput(0, DType::kInt32, std::move(out));
  return Status::OK();
}

// Zero point of A as a broadcastable shape: [M] becomes [M, 1] (per row).
Shape RowZeroPointShape(const Tensor& zp, const Tensor& a) {
  if (zp.rank() == 1 && zp.dim(0) != 1 && a.rank() >= 2) return Shape{zp.dim(0), 1};
  if (zp.num_elements() == 1) return Shape{};
  return zp.shape();
}

Status MatMulIntegerCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  STRATA_ASSIGN_OR_RETURN(Shape out, quant::MatMulShape(node, a.shape(), b.shape()));
  std::vector<int32_t> azp{0}, bzp{0};
  Shape azs, bzs;
  if (ctx.has_input(2)) {
    if (ctx.input(2).dtype() != a.dtype()) return ctx.Error("a_zero_point must have A's element type");
    STRATA_ASSIGN_OR_RETURN(azp, quant::ReadZeroPoints(node, ctx.input(2), "a_zero_point"));
    azs = RowZeroPointShape(ctx.input(2), a);
  }
  if (ctx.has_input(3)) {
    if (ctx.input(3).dtype() != b.dtype()) return ctx.Error("b_zero_point must have B's element type");
    STRATA_ASSIGN_OR_RETURN(bzp, quant::ReadZeroPoints(node, ctx.input(3), "b_zero_point"));
    bzs = ctx.input(3).num_elements() == 1 ? Shape{} : ctx.input(3).shape();
  }
  STRATA_ASSIGN_OR_RETURN(Tensor aq, quant::SubtractZeroPoint(node, a, azp, azs, ctx.allocator(), "A"));
  STRATA_ASSIGN_OR_RETURN(Tensor bq, quant::SubtractZeroPoint(node, b, bzp, bzs, ctx.allocator(), "B"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt32, out));
  quant::MatMulInt32(aq, bq, y);
  return Status::OK();
}

}  // namespace

void RegisterMatMulInteger(OpRegistry* r) {
  OpSchema s;
  s.name = "MatMulInteger";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = MatMulIntegerInfer;
  s.reference = MatMulIntegerCompute;
  s.no_grad_reason = "integer inputs and output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
