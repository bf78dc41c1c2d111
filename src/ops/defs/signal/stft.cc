// STFT (opset 17): short-time Fourier transform of signal [batch, signal_length, 1 or 2]: frames of frame_length
// samples every frame_step samples, each multiplied by `window` (optional; rectangular when omitted) and transformed.
// frame_length defaults to the window's length (they must agree when both are given). onesided (default 1) keeps the
// first frame_length/2 + 1 frequencies (real signals only). Output: [batch, frames, bins, 2] with
// frames = 1 + (signal_length - frame_length) / frame_step. Computed in double precision.
#include "ops/defs/signal/signal_util.h"

namespace strata::ops {
namespace {

Status StftInfer(InferContext& ctx) {
  const PartialShape& x = ctx.input_shape(0);
  if (!IsFloatingPoint(ctx.input_dtype(0)) && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.Error("signal must be a float tensor, got ", DTypeName(ctx.input_dtype(0)));
  if (x.rank_known && x.rank() != 3) return ctx.Error("signal must have shape [batch, length, 1 or 2], got ", x.ToString());
  const bool onesided = ctx.node().GetInt("onesided", 1) != 0;
  Dim batch = x.rank_known ? x.dims[0] : Dim(), frames, bins;
  int64_t length = -1, step = -1;
  if (const Tensor* s = ctx.input_value(1); s != nullptr && s->num_elements() == 1) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*s, "frame_step"));
    step = v[0];
  }
  if (const Tensor* l = ctx.input_value(3); l != nullptr && l->num_elements() == 1) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*l, "frame_length"));
    length = v[0];
  } else if (!ctx.has_input(3) && ctx.has_input(2) && ctx.input_shape(2).rank() == 1 &&
             ctx.input_shape(2).dims[0].known()) {
    length = ctx.input_shape(2).dims[0].value;
  }
  if (length > 0) bins = Dim(onesided ? length / 2 + 1 : length);
  if (length > 0 && step > 0 && x.rank_known && x.dims[1].known() && x.dims[1].value >= length)
    frames = Dim(1 + (x.dims[1].value - length) / step);
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of({batch, frames, bins, Dim(2)}));
  return Status::OK();
}

Status StftCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype()) || x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    return ctx.Error("signal must be a float tensor [batch, length, 1 or 2], got ", x.TypeString());
  const bool onesided = ctx.node().GetInt("onesided", 1) != 0;
  const int64_t comps = x.dim(2), sig_len = x.dim(1), batch = x.dim(0);
  if (onesided && comps == 2) return ctx.Error("onesided = 1 needs a real signal, got a complex one");
  STRATA_ASSIGN_OR_RETURN(int64_t step, signal::ReadIntScalar(ctx, 1, "frame_step"));
  if (step < 1) return ctx.Error("frame_step must be >= 1, got ", step);
  int64_t length = -1;
  std::vector<double> window;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || w.dtype() != x.dtype())
      return ctx.Error("window must be 1-D with the signal's element type, got ", w.TypeString());
    length = w.dim(0);
    window.resize(static_cast<size_t>(length));
    STRATA_RETURN_IF_ERROR(DispatchFloat(w.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < length; ++i) window[i] = static_cast<double>(ToCompute(w.data<T>()[i]));
      return Status::OK();
    }));
  }
  if (ctx.has_input(3)) {
    STRATA_ASSIGN_OR_RETURN(int64_t fl, signal::ReadIntScalar(ctx, 3, "frame_length"));
    if (length >= 0 && fl != length)
      return ctx.Error("frame_length ", fl, " differs from the window's length ", length);
    length = fl;
  }
  if (length < 1) return ctx.Error("frame_length (or a window) must be given and >= 1, got ", length);
  if (length > sig_len) return ctx.Error("frame_length ", length, " is longer than the signal (", sig_len, ")");
  if (window.empty()) window.assign(static_cast<size_t>(length), 1.0);
  const int64_t frames = 1 + (sig_len - length) / step, bins = onesided ? length / 2 + 1 : length;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{batch, frames, bins, 2}));
  const signal::Dft dft(length, false);
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    std::vector<signal::Complex> buf;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        buf.resize(static_cast<size_t>(length));
        for (int64_t k = 0; k < length; ++k) {
          const T* e = px + (b * sig_len + f * step + k) * comps;
          const double im = comps == 2 ? static_cast<double>(ToCompute(e[1])) : 0.0;
          buf[k] = signal::Complex(ToCompute(e[0]), im) * window[k];
        }
        dft.Run(&buf);
        T* o = py + ((b * frames + f) * bins) * 2;
        for (int64_t k = 0; k < bins; ++k) {
          o[2 * k] = FromCompute<T>(static_cast<ComputeType<T>>(buf[k].real()));
          o[2 * k + 1] = FromCompute<T>(static_cast<ComputeType<T>>(buf[k].imag()));
        }
      }
    return Status::OK();
  });
}

}  // namespace

void RegisterSTFT(OpRegistry* r) {
  OpSchema s;
  s.name = "STFT";
  s.since_version = 17;
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = StftInfer;
  s.reference = StftCompute;
  s.no_grad_reason = "gradient not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
