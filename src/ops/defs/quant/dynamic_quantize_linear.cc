// DynamicQuantizeLinear (opset 11): quantizes float32 x to uint8 with a scale and zero point computed from x's range
// (extended to include 0):
//   y_scale = (max - min) / 255,  y_zero_point = round(saturate(0 - min / y_scale)),
//   y = saturate(round(x / y_scale) + y_zero_point),  rounding half to even.
// When the range is empty (x all zero) the scale is 1, as ONNX Runtime does, so y and the zero point are 0. NaN
// elements are ignored for the range.
#include <algorithm>

#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status DynamicQuantizeLinearInfer(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (xt != DType::kUndefined && xt != DType::kFloat32) return ctx.Error("x must be float32, got ", DTypeName(xt));
  ctx.SetOutput(0, DType::kUInt8, ctx.input_shape(0));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, DType::kFloat32, PartialShape::Of(Shape{}));
  if (ctx.num_outputs() > 2) ctx.SetOutput(2, DType::kUInt8, PartialShape::Of(Shape{}));
  return Status::OK();
}

Status DynamicQuantizeLinearCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kFloat32) return ctx.Error("x must be float32, got ", x.TypeString());
  const float* px = x.data<float>();
  const int64_t n = x.num_elements();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::fmin(lo, px[i]);
    hi = std::fmax(hi, px[i]);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zp = quant::RoundHalfEven(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kUInt8, x.shape()));
  uint8_t* py = y->data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) py[i] = quant::Saturate<uint8_t>(quant::RoundHalfEven(px[i] / scale) + zp);
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * s, ctx.Output(1, DType::kFloat32, Shape{}));
    s->data<float>()[0] = scale;
  }
  if (ctx.output_wanted(2)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(2, DType::kUInt8, Shape{}));
    z->data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  }
  return Status::OK();
}

}  // namespace

void RegisterDynamicQuantizeLinear(OpRegistry* r) {
  OpSchema s;
  s.name = "DynamicQuantizeLinear";
  s.since_version = 11;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.min_outputs = 3;
  s.max_outputs = 3;
  s.infer = DynamicQuantizeLinearInfer;
  s.reference = DynamicQuantizeLinearCompute;
  s.no_grad_reason = "integer output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
