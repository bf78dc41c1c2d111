// DequantizeLinear (opset 10, 13): y = (x - x_zero_point) * x_scale as float32. x is int8, uint8 or int32 (int32
// takes no zero point other than 0). Opset 13 adds per-axis dequantization: a 1-D x_scale/x_zero_point along `axis`
// (default 1).
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status DequantizeLinearInfer(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (xt != DType::kUndefined && xt != DType::kUInt8 && xt != DType::kInt8 && xt != DType::kInt32)
    return ctx.Error("x must be int8, uint8 or int32, got ", DTypeName(xt));
  if (ctx.has_input(2) && xt != DType::kUndefined && ctx.input_dtype(2) != DType::kUndefined &&
      ctx.input_dtype(2) != xt)
    return ctx.Error("x_zero_point must have x's element type ", DTypeName(xt), ", got ", DTypeName(ctx.input_dtype(2)));
  const PartialShape& s = ctx.input_shape(1);
  if (s.rank_known && s.rank() > 1) return ctx.Error("x_scale must be a scalar or 1-D, got ", s.ToString());
  if (ctx.opset() < 13 && s.IsFullyKnown() && s.ToShape().NumElements() != 1)
    return ctx.Error("x_scale must be a scalar before opset 13 (per-axis dequantization), got ", s.ToString());
  ctx.SetOutput(0, DType::kFloat32, ctx.input_shape(0));
  return Status::OK();
}

template <typename Q>
void Dequantize(const Q* x, float* y, int64_t n, const quant::QuantParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = p.axis < 0 ? 0 : (i / p.inner) % p.len;
    y[i] = static_cast<float>(static_cast<int64_t>(x[i]) - p.zero_point[c]) * p.scale[c];
  }
}

Status DequantizeLinearCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (zp != nullptr && zp->dtype() != x.dtype())
    return ctx.Error("x_zero_point must have x's element type ", DTypeName(x.dtype()), ", got ", zp->TypeString());
  STRATA_ASSIGN_OR_RETURN(quant::QuantParams p, quant::ReadQuantParams(node, x.shape(), ctx.input(1), zp,
                                                                       node.GetInt("axis", 1), ctx.opset() >= 13,
                                                                       "x_scale"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, x.shape()));
  float* py = y->data<float>();
  switch (x.dtype()) {
    case DType::kUInt8: Dequantize(x.data<uint8_t>(), py, x.num_elements(), p); break;
    case DType::kInt8: Dequantize(x.data<int8_t>(), py, x.num_elements(), p); break;
    case DType::kInt32:
      for (int32_t z : p.zero_point)
        if (z != 0) return ctx.Error("an int32 x takes no zero point other than 0, got ", z);
      Dequantize(x.data<int32_t>(), py, x.num_elements(), p);
      break;
    default: return ctx.Error("x must be int8, uint8 or int32, got ", x.TypeString());
  }
  return Status::OK();
}

}  // namespace

void RegisterDequantizeLinear(OpRegistry* r) {
  OpSchema s;
  s.name = "DequantizeLinear";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = DequantizeLinearInfer;
  s.reference = DequantizeLinearCompute;
  s.no_grad_reason = "integer input";
  r->Add(std::move(s));
}

}  // namespace strata::ops
