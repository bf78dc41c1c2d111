// ConvInteger (opset 10): Y = conv(x - x_zero_point, w - w_zero_point) in int32, with Conv's attributes (group,
// strides, dilations, pads, auto_pad, kernel_shape). x and w are int8 or uint8; x_zero_point is a scalar and
// w_zero_point a scalar or one value per output channel. Padding contributes nothing (it holds the zero point).
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status ConvIntegerInfer(InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const DType t = ctx.input_dtype(i);
    if (t != DType::kUndefined && t != DType::kInt8 && t != DType::kUInt8)
      return ctx.Error("input ", i, " must be int8 or uint8, got ", DTypeName(t));
  }
  STRATA_ASSIGN_OR_RETURN(PartialShape out, quant::InferIntConvShape(ctx, ctx.input_shape(0), ctx.input_shape(1)));
  ctx.SetOutput(0, DType::kInt32, std::move(out));
  return Status::OK();
}

Status ConvIntegerCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  STRATA_ASSIGN_OR_RETURN(quant::IntConv conv, quant::SetupIntConv(node, x.shape(), w.shape()));
  std::vector<int32_t> xzp{0}, wzp{0};
  Shape wzs;
  if (ctx.has_input(2)) {
    if (ctx.input(2).num_elements() != 1)
      return ctx.Error("x_zero_point must be a scalar, got shape ", ctx.input(2).shape().ToString());
    STRATA_ASSIGN_OR_RETURN(xzp, quant::ReadZeroPoints(node, ctx.input(2), "x_zero_point"));
  }
  if (ctx.has_input(3)) {
    STRATA_ASSIGN_OR_RETURN(wzp, quant::ReadZeroPoints(node, ctx.input(3), "w_zero_point"));
    STRATA_ASSIGN_OR_RETURN(wzs, quant::ChannelShape(node, ctx.input(3), w, "w_zero_point"));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor xq, quant::SubtractZeroPoint(node, x, xzp, Shape{}, ctx.allocator(), "x"));
  STRATA_ASSIGN_OR_RETURN(Tensor wq, quant::SubtractZeroPoint(node, w, wzp, wzs, ctx.allocator(), "w"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt32, conv.out));
  return quant::RunIntConv(conv, xq, wq, ctx.allocator(), y);
}

}  // namespace

void RegisterConvInteger(OpRegistry* r) {
  OpSchema s;
  s.name = "ConvInteger";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = ConvIntegerInfer;
  s.reference = ConvIntegerCompute;
  s.no_grad_reason = "integer inputs and output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
