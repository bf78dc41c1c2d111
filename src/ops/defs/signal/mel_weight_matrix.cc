// MelWeightMatrix (opset 17): the [dft_length/2 + 1, num_mel_bins] matrix of triangular mel filters that maps a
// one-sided magnitude spectrum to mel bands. num_mel_bins + 2 points evenly spaced on the mel scale
// (mel = 2595 log10(1 + hz/700)) between lower_edge_hertz and upper_edge_hertz are mapped to spectrogram bins
// floor((dft_length + 1) * hz / sample_rate); filter i rises linearly from point i to point i+1 and falls to point
// i+2 (as the ONNX reference). Rows past the spectrum (bins of frequencies above sample_rate / 2) are dropped.
// output_datatype (default float32) sets the element type.
#include <algorithm>
#include <cmath>

#include "ops/defs/signal/signal_util.h"

namespace strata::ops {
namespace {

Status MelInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dt, signal::ReadOutputDatatype(ctx.node()));
  auto scalar = [&](int i) -> int64_t {
    const Tensor* t = ctx.input_value(i);
    if (t == nullptr || t->num_elements() != 1) return -1;
    auto v = ReadInts(*t, "");
    return v.ok() ? (*v)[0] : -1;
  };
  const int64_t mels = scalar(0), dft = scalar(1);
  ctx.SetOutput(0, dt, PartialShape::Of({dft >= 0 ? Dim(dft / 2 + 1) : Dim(), mels >= 0 ? Dim(mels) : Dim()}));
  return Status::OK();
}

Status MelCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dt, signal::ReadOutputDatatype(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(int64_t mels, signal::ReadIntScalar(ctx, 0, "num_mel_bins"));
  STRATA_ASSIGN_OR_RETURN(int64_t dft, signal::ReadIntScalar(ctx, 1, "dft_length"));
  STRATA_ASSIGN_OR_RETURN(int64_t rate, signal::ReadIntScalar(ctx, 2, "sample_rate"));
  STRATA_ASSIGN_OR_RETURN(double lower, ReadScalar(ctx.input(3), "lower_edge_hertz"));
  STRATA_ASSIGN_OR_RETURN(double upper, ReadScalar(ctx.input(4), "upper_edge_hertz"));
  if (mels < 1 || dft < 1 || rate < 1 || mels > (1 << 20) || dft > (1 << 26))
    return ctx.Error("num_mel_bins, dft_length and sample_rate must be positive (and sensible), got ", mels, ", ", dft,
                     " and ", rate);
  if ((dft / 2 + 1) * mels > (int64_t{1} << 28))
    return ctx.Error("the matrix of ", dft / 2 + 1, " x ", mels, " values is too large");
  if (!(lower >= 0 && lower < upper && std::isfinite(upper)))
    return ctx.Error("expected 0 <= lower_edge_hertz < upper_edge_hertz, got ", lower, " and ", upper);
  const int64_t rows = dft / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(lower), step = (to_mel(upper) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    // Bins far past the spectrum only matter through the slopes they give; clamping keeps the cast defined.
    const double bin = std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate));
    bins[i] = static_cast<int64_t>(std::min(bin, 1e15));
  }
  std::vector<double> m(static_cast<size_t>(rows * mels), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < rows) m[row * mels + col] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = bins[i], center = bins[i + 1], hi = bins[i + 2];
    if (center == lo) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = lo; j <= std::min(center, rows - 1); ++j)
        set(j, i, static_cast<double>(j - lo) / static_cast<double>(center - lo));
    }
    for (int64_t j = center; j < std::min(hi, rows); ++j) set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - center));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dt, Shape{rows, mels}));
  return signal::FillFromDoubles(m, y);
}

}  // namespace

void RegisterMelWeightMatrix(OpRegistry* r) {
  OpSchema s;
  s.name = "MelWeightMatrix";
  s.since_version = 17;
  s.min_inputs = 5;
  s.max_inputs = 5;
  s.infer = MelInfer;
  s.reference = MelCompute;
  s.no_grad_reason = "generator: a constant filter bank";
  r->Add(std::move(s));
}

}  // namespace strata::ops
