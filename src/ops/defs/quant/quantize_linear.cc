// QuantizeLinear (opset 10, 13): y = saturate(round(x / y_scale) + y_zero_point), rounding half to even. x is float
// (float16/bfloat16/float64 accepted too) or int32; the output type is y_zero_point's (uint8 when omitted). Opset 13
// adds per-axis quantization: a 1-D y_scale/y_zero_point along `axis` (default 1). NaN quantizes to the lowest value.
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status QuantizeLinearInfer(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (xt != DType::kUndefined && !IsFloatingPoint(xt) && xt != DType::kInt32)
    return ctx.Error("x must be a float or int32 tensor, got ", DTypeName(xt));
  DType yt = DType::kUInt8;
  if (ctx.has_input(2)) {
    yt = ctx.input_dtype(2);
    if (yt != DType::kUndefined && yt != DType::kUInt8 && yt != DType::kInt8)
      return ctx.Error("y_zero_point must be uint8 or int8, got ", DTypeName(yt));
  }
  const PartialShape& s = ctx.input_shape(1);
  if (s.rank_known && s.rank() > 1) return ctx.Error("y_scale must be a scalar or 1-D, got ", s.ToString());
  if (ctx.opset() < 13 && s.IsFullyKnown() && s.ToShape().NumElements() != 1)
    return ctx.Error("y_scale must be a scalar before opset 13 (per-axis quantization), got ", s.ToString());
  ctx.SetOutput(0, yt, ctx.input_shape(0));
  return Status::OK();
}

template <typename Q, typename T>
void Quantize(const T* x, Q* y, int64_t n, const quant::QuantParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = p.axis < 0 ? 0 : (i / p.inner) % p.len;
    const float v = static_cast<float>(ToCompute(x[i])) / p.scale[c];
    y[i] = quant::Saturate<Q>(quant::RoundHalfEven(v) + static_cast<float>(p.zero_point[c]));
  }
}

Status QuantizeLinearCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const DType yt = zp ? zp->dtype() : DType::kUInt8;
  if (yt != DType::kUInt8 && yt != DType::kInt8) return ctx.Error("y_zero_point must be uint8 or int8, got ", zp->TypeString());
  STRATA_ASSIGN_OR_RETURN(quant::QuantParams p, quant::ReadQuantParams(node, x.shape(), ctx.input(1), zp,
                                                                       node.GetInt("axis", 1), ctx.opset() >= 13,
                                                                       "y_scale"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, yt, x.shape()));
  auto run = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (yt == DType::kUInt8)
      Quantize(x.data<T>(), y->data<uint8_t>(), x.num_elements(), p);
    else
      Quantize(x.data<T>(), y->data<int8_t>(), x.num_elements(), p);
    return Status::OK();
  };
  if (x.dtype() == DType::kInt32) return run(TypeTag<int32_t>{});
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("x must be a float or int32 tensor, got ", x.TypeString());
  return DispatchFloat(x.dtype(), run);
}

}  // namespace

void RegisterQuantizeLinear(OpRegistry* r) {
  OpSchema s;
  s.name = "QuantizeLinear";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = QuantizeLinearInfer;
  s.reference = QuantizeLinearCompute;
  s.no_grad_reason = "integer output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
