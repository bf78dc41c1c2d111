// MaxPool on channels-last data (a strata.ChannelsLast node wrapping MaxPool; X and Y are [N, H, W, C]), float32,
// 2-D, any kernel, strides, pads, dilations and ceil_mode, without the Indices output: per output pixel, the window's
// valid taps, then the reference's maximum across them (max_window.h), vectorised across the channels. One read of X.
// oneDNN's max pooling differs from the reference on NaN (an all-NaN window), so that kernel scans X for NaN before
// every run and falls back to the reference when it finds one: a second read of X (squeezenet1_1 batch 32: the pool
// after the second Fire module reads 50 MB).
// Under --precision bf16 (SessionOptions::precision, on a CPU with native bfloat16 kernels) the kernel says it computes
// in bfloat16 (Kernel::computes_bf16), so the plan may store X and Y in bfloat16 (Plan::StoreBf16): the ResNet stem
// convolution then writes its output, the largest activation, in bfloat16 and the next convolutions read the pool's
// output with no conversion. The maximum of bfloat16 values is exact (taken in float32, stored back unchanged); a
// float32 X with a bfloat16 Y gives the float32 maximum rounded to nearest even, which equals the maximum of the
// rounded values (rounding is monotonic), i.e. what a bfloat16 convolution reading a float32 Y would have used.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "core/parallel.h"
#include "ops/bf16_output.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/max_window.h"
#include "ops/defs/nn/spatial.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu MaxPool (channels-last): ", why); }

constexpr int64_t kMaxTaps = 256;

// In, Out: float (float32) or uint16_t (bfloat16).
template <typename In, typename Out>
class MaxPoolNhwc final : public Kernel {
 public:
  MaxPoolNhwc(const nn::Geometry3& g, int64_t n, int64_t c, bool bf16) : g_(g), n_(n), c_(c), bf16_(bf16) {}

  std::string_view name() const override { return bf16_ ? "cpu-bf16" : "cpu"; }
  bool computes_bf16() const override { return bf16_; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t ih = g_.in[1], iw = g_.in[2], oh = g_.out[1], ow = g_.out[2];
    if (x.shape() != Shape{n_, ih, iw, c_})
      return ctx.Error("X ", x.shape().ToString(), " differs from the shape the plan was made for");
    if (x.dtype() != kInType)
      return ctx.Error("X is ", DTypeName(x.dtype()), "; the plan made it ", DTypeName(kInType));
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, kOutType, Shape{n_, oh, ow, c_}));
    const In* px = static_cast<const In*>(x.raw_data());
    Out* py = static_cast<Out*>(y->raw_data());
    const int64_t work = ow * g_.kernel_size() * c_;
    ParallelFor(n_ * oh, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)), [&](int64_t begin, int64_t end) {
      const In* taps[kMaxTaps];
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
  void Pixel(const In* const* taps, int64_t n_taps, Out* y) const {
    int64_t k = 0;
    for (; k + 4 * kLanes <= c_; k += 4 * kLanes) MaxOverTaps<4>(taps, n_taps, k, y + k, 4 * kLanes);
    for (; k + kLanes <= c_; k += kLanes) MaxOverTaps<1>(taps, n_taps, k, y + k, kLanes);
    if (k < c_) MaxOverTapsScalar(taps, n_taps, k, y + k, c_ - k);
  }

  static constexpr DType kInType = std::is_same_v<In, float> ? DType::kFloat32 : DType::kBFloat16;
  static constexpr DType kOutType = std::is_same_v<Out, float> ? DType::kFloat32 : DType::kBFloat16;

  nn::Geometry3 g_;
  int64_t n_, c_;
  bool bf16_;  // computes_bf16: X and Y may be stored in bfloat16
};

template <typename In>
std::unique_ptr<Kernel> MakeMaxPoolNhwc(const nn::Geometry3& g, int64_t n, int64_t c, bool bf16, bool bf16_y) {
  if (bf16_y) return std::make_unique<MaxPoolNhwc<In, uint16_t>>(g, n, c, bf16);
  return std::make_unique<MaxPoolNhwc<In, float>>(g, n, c, bf16);
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.GetString("op_domain", "").empty() || node.GetString("op", "") != "MaxPool")
    return Decline("not a channels-last MaxPool");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("X and Y must be channels-last");
  if (init.outputs.size() > 1 && node.has_output(1)) return Decline("the Indices output is not computed here");
  // bfloat16 X or Y only where the plan stores them so, which it does only for a kernel that computes in bfloat16.
  const bool bf16 = init.precision == graph::Precision::kBf16 && NativeBf16Kernels();
  auto float_type = [&](DType t) { return t == DType::kFloat32 || (bf16 && t == DType::kBFloat16); };
  if (init.inputs.size() != 1 || !float_type(init.inputs[0].dtype) || !init.inputs[0].shape.IsFullyKnown())
    return Decline(bf16 ? "a float32 or bfloat16 X of known shape only" : "a float32 X of known shape only");
  // Y: the type the plan stores it in (bfloat16 only where it asks); float32 otherwise, as the reference infers it.
  const bool bf16_y = !init.outputs.empty() && init.outputs[0].dtype == DType::kBFloat16;
  if (bf16_y && !bf16) return Decline("a float32 Y only");
  if (node.GetInt("storage_order", 0) != 0) return Decline("storage_order");
  const Shape x = init.inputs[0].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("X must be a non-empty 4-D tensor");
  Shape out;
  auto g = MaxPoolGeometry(node, Shape{x[0], x[3], x[1], x[2]}, &out);
  if (!g.ok()) return Decline(g.status().message());
  if (g->kernel_size() > kMaxTaps) return Decline("windows of more than 256 values");
  if (out.NumElements() == 0) return Decline("an empty output");
  if (init.inputs[0].dtype == DType::kBFloat16) return MakeMaxPoolNhwc<uint16_t>(*g, x[0], x[3], bf16, bf16_y);
  return MakeMaxPoolNhwc<float>(*g, x[0], x[3], bf16, bf16_y);
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
