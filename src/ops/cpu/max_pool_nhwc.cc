// MaxPool on channels-last data (a strata.ChannelsLast node wrapping MaxPool; X and Y are [N, H, W, C]), float32,
// 2-D, any kernel, strides, pads, dilations and ceil_mode, without the Indices output: per output pixel, the window's
// valid taps, then the reference's maximum across them (max_window.h), vectorised across the channels. One read of X.
// oneDNN's max pooling differs from the reference on NaN (an all-NaN window), so that kernel scans X for NaN before
// every run and falls back to the reference when it finds one: a second read of X (squeezenet1_1 batch 32: the pool
// after the second Fire module reads 50 MB).
#include <immintrin.h>

#include <algorithm>

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/max_window.h"
#include "ops/defs/nn/spatial.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu MaxPool (channels-last): ", why); }

constexpr int64_t kMaxTaps = 256;

class MaxPoolNhwc final : public Kernel {
 public:
  MaxPoolNhwc(const nn::Geometry3& g, int64_t n, int64_t c) : g_(g), n_(n), c_(c) {}

  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t ih = g_.in[1], iw = g_.in[2], oh = g_.out[1], ow = g_.out[2];
    if (x.shape() != Shape{n_, ih, iw, c_})
      return ctx.Error("X ", x.shape().ToString(), " differs from the shape the plan was made for");
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, Shape{n_, oh, ow, c_}));
    const float* px = x.data<float>();
    float* py = y->data<float>();
    const int64_t work = ow * g_.kernel_size() * c_;
    ParallelFor(n_ * oh, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)), [&](int64_t begin, int64_t end) {
      const float* taps[kMaxTaps];
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = t / oh, r = t % oh;
        const int64_t sh = r * g_.stride[1] - g_.pad_begin[1];
        int64_t h_lo, h_hi;
        nn::ValidTaps(sh, g_.kernel[1], g_.dilation[1], ih, &h_lo, &h_hi);
        for (int64_t q = 0; q < ow; ++q) {
          const int64_t sw = q * g_.stride[2] - g_.pad_begin[2];
          int64_t w_lo, w_hi;
          nn::ValidTaps(sw, g_.kernel[2], g_.dilation[2], iw, &w_lo, &w_hi);
          int64_t n_taps = 0;
          for (int64_t i = h_lo; i < h_hi; ++i)
            for (int64_t j = w_lo; j < w_hi; ++j)
              taps[n_taps++] = px + ((n * ih + sh + i * g_.dilation[1]) * iw + sw + j * g_.dilation[2]) * c_;
          Pixel(taps, n_taps, py + ((n * oh + r) * ow + q) * c_);
        }
      }
    });
    return Status::OK();
  }

 private:
  // All channels of one output pixel: whole groups of four vectors, then single vectors, then the lanes left.
  void Pixel(const float* const* taps, int64_t n_taps, float* y) const {
    int64_t k = 0;
    for (; k + 4 * kLanes <= c_; k += 4 * kLanes) MaxOverTaps<4>(taps, n_taps, k, y + k, 4 * kLanes);
    for (; k + kLanes <= c_; k += kLanes) MaxOverTaps<1>(taps, n_taps, k, y + k, kLanes);
    if (k < c_) MaxOverTapsScalar(taps, n_taps, k, y + k, c_ - k);
  }

  nn::Geometry3 g_;
  int64_t n_, c_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.GetString("op_domain", "").empty() || node.GetString("op", "") != "MaxPool")
    return Decline("not a channels-last MaxPool");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("X and Y must be channels-last");
  if (init.outputs.size() > 1 && node.has_output(1)) return Decline("the Indices output is not computed here");
  if (init.inputs.size() != 1 || init.inputs[0].dtype != DType::kFloat32 || !init.inputs[0].shape.IsFullyKnown())
    return Decline("a float32 X of known shape only");
  if (node.GetInt("storage_order", 0) != 0) return Decline("storage_order");
  const Shape x = init.inputs[0].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("X must be a non-empty 4-D tensor");
  Shape out;
  auto g = MaxPoolGeometry(node, Shape{x[0], x[3], x[1], x[2]}, &out);
  if (!g.ok()) return Decline(g.status().message());
  if (g->kernel_size() > kMaxTaps) return Decline("windows of more than 256 values");
  if (out.NumElements() == 0) return Decline("an empty output");
  return std::unique_ptr<Kernel>(std::make_unique<MaxPoolNhwc>(*g, x[0], x[3]));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
