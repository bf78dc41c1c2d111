// QLinearConv (opset 10): convolution of quantized tensors with a quantized result:
//   acc = conv(x - x_zero_point, w - w_zero_point) + B     (int32; B optional, one value per output channel)
//   y = saturate(round(acc * (x_scale * w_scale / y_scale)) + y_zero_point)   (round half to even)
// x, w, y are int8 or uint8 (y takes y_zero_point's type); w_scale and w_zero_point are per tensor or per output
// channel; the rest per tensor. The requantization multiplier is computed in float32, as ONNX Runtime does.
#include "ops/defs/quant/quant_util.h"

namespace strata::ops {
namespace {

Status QLinearConvInfer(InferContext& ctx) {
  for (int i : {0, 2, 3, 5, 7}) {
    const DType t = ctx.input_dtype(i);
    if (t != DType::kUndefined && t != DType::kInt8 && t != DType::kUInt8)
      return ctx.Error("input ", i, " must be int8 or uint8, got ", DTypeName(t));
  }
  if (ctx.has_input(8) && ctx.input_dtype(8) != DType::kUndefined && ctx.input_dtype(8) != DType::kInt32)
    return ctx.Error("B must be int32, got ", DTypeName(ctx.input_dtype(8)));
  STRATA_ASSIGN_OR_RETURN(PartialShape out, quant::InferIntConvShape(ctx, ctx.input_shape(0), ctx.input_shape(3)));
  ctx.SetOutput(0, ctx.input_dtype(7), std::move(out));
  return Status::OK();
}

template <typename Q>
void Requantize(const int32_t* acc, Q* y, int64_t channels, int64_t per_channel, int64_t batch,
                const std::vector<float>& multiplier, float zp) {
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < channels; ++m) {
      const float mul = multiplier[multiplier.size() == 1 ? 0 : m];
      const int64_t base = (n * channels + m) * per_channel;
      for (int64_t i = 0; i < per_channel; ++i)
        y[base + i] = quant::Saturate<Q>(quant::RoundHalfEven(static_cast<float>(acc[base + i]) * mul) + zp);
    }
}

Status QLinearConvCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  STRATA_ASSIGN_OR_RETURN(quant::IntConv conv, quant::SetupIntConv(node, x.shape(), w.shape()));
  const int64_t m = w.dim(0);
  auto scalar = [&](int i, const char* what) -> Status {
    if (ctx.input(i).num_elements() != 1)
      return ctx.Error(what, " must be a scalar (per-tensor), got shape ", ctx.input(i).shape().ToString());
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(scalar(1, "x_scale"));
  STRATA_RETURN_IF_ERROR(scalar(2, "x_zero_point"));
  STRATA_RETURN_IF_ERROR(scalar(6, "y_scale"));
  STRATA_RETURN_IF_ERROR(scalar(7, "y_zero_point"));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> xs, quant::ReadScales(node, ctx.input(1), "x_scale"));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> ws, quant::ReadScales(node, ctx.input(4), "w_scale"));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> ys, quant::ReadScales(node, ctx.input(6), "y_scale"));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> xzp, quant::ReadZeroPoints(node, ctx.input(2), "x_zero_point"));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> wzp, quant::ReadZeroPoints(node, ctx.input(5), "w_zero_point"));
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> yzp, quant::ReadZeroPoints(node, ctx.input(7), "y_zero_point"));
  STRATA_ASSIGN_OR_RETURN(Shape wss, quant::ChannelShape(node, ctx.input(4), w, "w_scale"));
  STRATA_ASSIGN_OR_RETURN(Shape wzs, quant::ChannelShape(node, ctx.input(5), w, "w_zero_point"));
  (void)wss;
  const DType yt = ctx.input(7).dtype();
  if (yt != DType::kUInt8 && yt != DType::kInt8) return ctx.Error("y_zero_point must be int8 or uint8");
  STRATA_ASSIGN_OR_RETURN(Tensor xq, quant::SubtractZeroPoint(node, x, xzp, Shape{}, ctx.allocator(), "x"));
  STRATA_ASSIGN_OR_RETURN(Tensor wq, quant::SubtractZeroPoint(node, w, wzp, wzs, ctx.allocator(), "w"));
  STRATA_ASSIGN_OR_RETURN(Tensor acc, Tensor::Create(DType::kInt32, conv.out, ctx.allocator()));
  STRATA_RETURN_IF_ERROR(quant::RunIntConv(conv, xq, wq, ctx.allocator(), &acc));
  const int64_t per_channel = conv.out.Product(2, conv.out.rank()), batch = conv.out[0];
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.input(8);
    if (b.dtype() != DType::kInt32 || b.rank() != 1 || b.dim(0) != m)
      return ctx.Error("B must be int32 with shape [", m, "], got ", b.TypeString());
    int32_t* pa = acc.data<int32_t>();
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < m; ++c)
        for (int64_t i = 0; i < per_channel; ++i) pa[(n * m + c) * per_channel + i] += b.data<int32_t>()[c];
  }
  std::vector<float> mul(ws.size());
  for (size_t c = 0; c < ws.size(); ++c) mul[c] = xs[0] * ws[c] / ys[0];
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, yt, conv.out));
  if (yt == DType::kUInt8)
    Requantize(acc.data<int32_t>(), y->data<uint8_t>(), m, per_channel, batch, mul, static_cast<float>(yzp[0]));
  else
    Requantize(acc.data<int32_t>(), y->data<int8_t>(), m, per_channel, batch, mul, static_cast<float>(yzp[0]));
  return Status::OK();
}

}  // namespace

void RegisterQLinearConv(OpRegistry* r) {
  OpSchema s;
  s.name = "QLinearConv";
  s.since_version = 10;
  s.min_inputs = 8;
  s.max_inputs = 9;
  s.infer = QLinearConvInfer;
  s.reference = QLinearConvCompute;
  s.no_grad_reason = "quantized (integer) inputs and output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
