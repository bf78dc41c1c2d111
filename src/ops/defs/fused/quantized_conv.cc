// strata.QuantizedConv: a QDQ convolution, written by graph/passes/fuse_quantized.cc from
//   DequantizeLinear(x) -> Conv(., DequantizeLinear(w), B) [-> Add(., Z)] [-> activation] [-> QuantizeLinear]
// Inputs: 0 x (uint8/int8), 1 x_scale, 2 x_zero_point (per tensor), 3 w (int8 [M, C/group, k...]), 4 w_scale (per
// tensor or [M]; w's zero point is 0), 5 B (float32 [M], optional), 6 Z (optional residual of Y's shape: float32, or
// uint8/int8 with 7 z_scale and 8 z_zero_point), 9 y_scale and 10 y_zero_point (optional: Y is then quantized to
// y_zero_point's type, else float32). Attributes: Conv's and the fused activation's (ops/defs/fused/activation.h).
// The reference kernel is the QDQ interpretation itself: it dequantizes x, w and Z, runs the reference Conv in
// float32, adds Z, applies the activation and quantizes (ONNX's DequantizeLinear/QuantizeLinear reference kernels).
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

bool IsQuantized(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

Status QuantizedConvInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(ctx.node()).status());
  for (int i : {1, 3, 4})
    if (!ctx.has_input(i))
      return ctx.Error("input ", i, " (",
                       i == 1   ? "the input's scale"
                       : i == 3 ? "the int8 weights"
                                : "their scale",
                       ") is required");
  const DType xt = ctx.input_dtype(0), wt = ctx.input_dtype(3);
  if (xt != DType::kUndefined && !IsQuantized(xt)) return ctx.Error("x must be uint8 or int8, got ", DTypeName(xt));
  if (wt != DType::kUndefined && wt != DType::kInt8) return ctx.Error("w must be int8, got ", DTypeName(wt));
  if (ctx.has_input(6) && IsQuantized(ctx.input_dtype(6)) && !ctx.has_input(7))
    return ctx.Error("a quantized Z needs z_scale (input 7)");
  ValueType xf{DType::kFloat32, ctx.input_shape(0), nullptr}, wf{DType::kFloat32, ctx.input_shape(3), nullptr};
  STRATA_ASSIGN_OR_RETURN(const OpSchema* conv, BaseSchema("Conv"));
  InferContext sub(ctx.node(), {&xf, &wf}, 1);
  STRATA_RETURN_IF_ERROR(conv->infer(sub));
  DType yt = DType::kFloat32;
  if (ctx.has_input(9)) {
    yt = ctx.has_input(10) ? ctx.input_dtype(10) : DType::kUInt8;
    if (yt != DType::kUndefined && !IsQuantized(yt)) return ctx.Error("y_zero_point must be uint8 or int8");
  }
  ctx.SetOutput(0, yt, sub.output(0).shape);
  return Status::OK();
}

Status QuantizedConvCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Activation act, ReadFusedActivation(ctx.node()));
  auto in = [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
  STRATA_ASSIGN_OR_RETURN(Tensor x, RunReferenceOp(ctx, "DequantizeLinear", {}, {in(0), in(1), in(2)}));
  Tensor w_zp = Tensor::Zeros(DType::kInt8, ctx.input(4).shape());
  AttributeMap axis0 = {{"axis", graph::Attribute::Int(0)}};
  STRATA_ASSIGN_OR_RETURN(Tensor w, RunReferenceOp(ctx, "DequantizeLinear", axis0, {in(3), in(4), &w_zp}));
  AttributeMap conv_attrs;
  for (const auto& [k, v] : ctx.node().attrs)
    if (k.rfind("activation", 0) != 0) conv_attrs[k] = v;
  STRATA_ASSIGN_OR_RETURN(Tensor y, RunReferenceOp(ctx, "Conv", conv_attrs, {&x, &w, in(5)}));
  Tensor z;
  if (ctx.has_input(6)) {
    if (IsQuantized(ctx.input(6).dtype())) {
      STRATA_ASSIGN_OR_RETURN(z, RunReferenceOp(ctx, "DequantizeLinear", {}, {in(6), in(7), in(8)}));
    } else {
      z = ctx.input(6);
    }
    if (z.shape() != y.shape())
      return ctx.Error("Z ", z.shape().ToString(), " must have the output's shape ", y.shape().ToString());
  }
  STRATA_RETURN_IF_ERROR(FinishInPlace(ctx.node(), &y, z.defined() ? &z : nullptr, act));
  return WriteQuantizedOutput(ctx, y, 9);
}

}  // namespace

void RegisterQuantizedConv(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "QuantizedConv";
  s.min_inputs = 1;  // the zero points (2) are optional; 1, 3 and 4 are checked by inference
  s.max_inputs = 11;
  s.infer = QuantizedConvInfer;
  s.reference = QuantizedConvCompute;
  s.no_grad_reason = "inference-only: quantized (integer) operands, written by the fusion passes";
  r->Add(std::move(s));
}

}  // namespace strata::ops
