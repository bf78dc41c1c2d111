// QLinearMatMul (opset 10): matmul of quantized tensors with a quantized result:
//   acc = (a - a_zero_point) @ (b - b_zero_point)    (int32, numpy matmul broadcasting)
//   y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zero_point)   (round half to even)
// a, b, y are int8 or uint8 (y takes y_zero_point's type). a's and y's scale/zero point are per tensor or per row of
// a (1-D with M values), b's per tensor or per column (1-D with N values). The multiplier is computed in float32.
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status QLinearMatMulInfer(InferContext& ctx) {
  for (int i : {0, 2, 3, 5, 7}) {
    const DType t = ctx.input_dtype(i);
    if (t != DType::kUndefined && t != DType::kInt8 && t != DType::kUInt8)
      return ctx.Error("input ", i, " must be int8 or uint8, got ", DTypeName(t));
  }
  STRATA_ASSIGN_OR_RETURN(PartialShape out, quant::InferMatMulShape(ctx.node(), ctx.input_shape(0), ctx.input_shape(3)));
  ctx.SetOutput(0, ctx.input_dtype(7), std::move(out));
  return Status::OK();
}

// Reads a scale or zero point that is a scalar or 1-D with `len` values; returns its values.
template <typename V, typename Read>
StatusOr<std::vector<V>> ReadVector(KernelContext& ctx, int i, int64_t len, const char* what, const char* per,
                                    Read read) {
  const Tensor& t = ctx.input(i);
  if (!(t.num_elements() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.dim(0) == len))
    return ctx.Error(what, " must be a scalar or 1-D with one value per ", per, " (", len, "), got shape ",
                     t.shape().ToString());
  return read(ctx.node(), t, what);
}

template <typename Q>
void Requantize(const int32_t* acc, Q* y, int64_t n_out, int64_t m, int64_t n, const std::vector<float>& as,
                const std::vector<float>& bs, const std::vector<float>& ys, const std::vector<int32_t>& yzp) {
  for (int64_t e = 0; e < n_out; ++e) {
    const int64_t i = (e / n) % m, j = e % n;
    const size_t ai = as.size() == 1 ? 0 : i, bj = bs.size() == 1 ? 0 : j, yi = ys.size() == 1 ? 0 : i;
    const size_t zi = yzp.size() == 1 ? 0 : i;
    const float mul = as[ai] * bs[bj] / ys[yi];
    y[e] = quant::Saturate<Q>(quant::RoundHalfEven(static_cast<float>(acc[e]) * mul) + static_cast<float>(yzp[zi]));
  }
}

Status QLinearMatMulCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  STRATA_ASSIGN_OR_RETURN(Shape out, quant::MatMulShape(node, a.shape(), b.shape()));
  const int64_t m = a.rank() == 1 ? 1 : a.dim(a.rank() - 2), n = b.rank() == 1 ? 1 : b.dim(b.rank() - 1);
  auto scales = [](const Node& nd, const Tensor& t, std::string_view w) { return quant::ReadScales(nd, t, w); };
  auto zps = [](const Node& nd, const Tensor& t, std::string_view w) { return quant::ReadZeroPoints(nd, t, w); };
  STRATA_ASSIGN_OR_RETURN(std::vector<float> as, ReadVector<float>(ctx, 1, m, "a_scale", "row of a", scales));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> azp, ReadVector<int32_t>(ctx, 2, m, "a_zero_point", "row of a", zps));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> bs, ReadVector<float>(ctx, 4, n, "b_scale", "column of b", scales));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> bzp, ReadVector<int32_t>(ctx, 5, n, "b_zero_point", "column of b", zps));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> ys, ReadVector<float>(ctx, 6, m, "y_scale", "row of a", scales));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> yzp, ReadVector<int32_t>(ctx, 7, m, "y_zero_point", "row of a", zps));
  if (ctx.input(2).dtype() != a.dtype() || ctx.input(5).dtype() != b.dtype())
    return ctx.Error("each zero point must have its input's element type");
  const DType yt = ctx.input(7).dtype();
  if (yt != DType::kUInt8 && yt != DType::kInt8) return ctx.Error("y_zero_point must be int8 or uint8");
  const Shape azs = azp.size() == 1 ? Shape{} : Shape{m, 1};
  const Shape bzs = bzp.size() == 1 ? Shape{} : Shape{n};
  STRATA_ASSIGN_OR_RETURN(Tensor aq, quant::SubtractZeroPoint(node, a, azp, a.rank() == 1 ? Shape{} : azs,
                                                              ctx.allocator(), "a"));
  STRATA_ASSIGN_OR_RETURN(Tensor bq, quant::SubtractZeroPoint(node, b, bzp, b.rank() == 1 ? Shape{} : bzs,
                                                              ctx.allocator(), "b"));
  STRATA_ASSIGN_OR_RETURN(Tensor acc, Tensor::Create(DType::kInt32, out, ctx.allocator()));
  quant::MatMulInt32(aq, bq, &acc);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, yt, out));
  if (yt == DType::kUInt8)
    Requantize(acc.data<int32_t>(), y->data<uint8_t>(), acc.num_elements(), m, n, as, bs, ys, yzp);
  else
    Requantize(acc.data<int32_t>(), y->data<int8_t>(), acc.num_elements(), m, n, as, bs, ys, yzp);
  return Status::OK();
}

}  // namespace

void RegisterQLinearMatMul(OpRegistry* r) {
  OpSchema s;
  s.name = "QLinearMatMul";
  s.since_version = 10;
  s.min_inputs = 8;
  s.max_inputs = 8;
  s.infer = QLinearMatMulInfer;
  s.reference = QLinearMatMulCompute;
  s.no_grad_reason = "quantized (integer) inputs and output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
