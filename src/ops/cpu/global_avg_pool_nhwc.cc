// GlobalAveragePool on channels-last data (a strata.ChannelsLast node wrapping GlobalAveragePool; X [N, H, W, C], Y
// [N, 1, 1, C]) under --precision bf16 only (SessionOptions::precision, on a CPU with native bfloat16 kernels): the
// kernel says it computes in bfloat16 (Kernel::computes_bf16), so the plan may store X in bfloat16 (Plan::StoreBf16)
// and the last convolution of a ResNet writes its output, and reads its residual, with no float32 copy. X float32 or
// bfloat16 (widened exactly), the sum per channel in float32 over the pixels in order, divided by their count, as
// the reference kernel does (bit-equal to it for float32 X); Y float32 (what the classifier's Gemm reads), or
// bfloat16 rounded to nearest even where the plan stores it so. Vectorised across the channels, images and channel
// blocks split across threads. At most 4096 pixels per plane (float32 accumulation accuracy; the oneDNN kernel has
// the same limit). Under float32 precision the node is left to the oneDNN kernel.
#include <algorithm>
#include <type_traits>

#include "core/parallel.h"
#include "ops/bf16_output.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/vec16.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu GlobalAveragePool (channels-last): ", why); }

constexpr int64_t kMaxPixels = 4096;
constexpr int64_t kBlock = 4 * kLanes;  // channels per task: four vectors of accumulators

// In, Out: float (float32) or uint16_t (bfloat16).
template <typename In, typename Out>
class GlobalAvgPoolNhwc final : public Kernel {
 public:
  GlobalAvgPoolNhwc(int64_t n, int64_t pixels, int64_t c) : n_(n), pixels_(pixels), c_(c) {}

  std::string_view name() const override { return "cpu-bf16"; }
  bool computes_bf16() const override { return true; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 4 || x.dim(0) != n_ || x.dim(1) * x.dim(2) != pixels_ || x.dim(3) != c_)
      return ctx.Error("X ", x.shape().ToString(), " differs from the shape the plan was made for");
    if (x.dtype() != kInType)
      return ctx.Error("X is ", DTypeName(x.dtype()), "; the plan made it ", DTypeName(kInType));
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, kOutType, Shape{n_, 1, 1, c_}));
    const In* px = static_cast<const In*>(x.raw_data());
    Out* py = static_cast<Out*>(y->raw_data());
    const int64_t blocks = (c_ + kBlock - 1) / kBlock;
    const float count = static_cast<float>(pixels_);
    ParallelFor(n_ * blocks, std::max<int64_t>(1, 16384 / (pixels_ * kBlock)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = t / blocks, c0 = (t % blocks) * kBlock, width = std::min(kBlock, c_ - c0);
        const In* xn = px + n * pixels_ * c_ + c0;
        Out* yn = py + n * c_ + c0;
        if (width == kBlock) {
          V16 acc[4] = {};
          for (int64_t p = 0; p < pixels_; ++p)
#pragma GCC unroll 4
            for (int b = 0; b < 4; ++b) acc[b] += LoadV16(xn + p * c_ + b * kLanes);
#pragma GCC unroll 4
          for (int b = 0; b < 4; ++b) StoreV16(yn + b * kLanes, acc[b] / count);
          continue;
        }
        for (int64_t k = 0; k < width; ++k) {
          float acc = 0.0f;
          for (int64_t p = 0; p < pixels_; ++p) acc += LoadScalar(xn + p * c_ + k);
          StoreScalar(yn + k, acc / count);
        }
      }
    });
    return Status::OK();
  }

 private:
  static constexpr DType kInType = std::is_same_v<In, float> ? DType::kFloat32 : DType::kBFloat16;
  static constexpr DType kOutType = std::is_same_v<Out, float> ? DType::kFloat32 : DType::kBFloat16;

  int64_t n_, pixels_, c_;
};

template <typename In>
std::unique_ptr<Kernel> MakeGlobalAvgPoolNhwc(int64_t n, int64_t pixels, int64_t c, bool bf16_y) {
  if (bf16_y) return std::make_unique<GlobalAvgPoolNhwc<In, uint16_t>>(n, pixels, c);
  return std::make_unique<GlobalAvgPoolNhwc<In, float>>(n, pixels, c);
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastGlobalAveragePool(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.GetString("op_domain", "").empty() || node.GetString("op", "") != "GlobalAveragePool")
    return Decline("not a channels-last GlobalAveragePool");
  if (init.precision != graph::Precision::kBf16 || !NativeBf16Kernels())
    return Decline("only under --precision bf16 with native bfloat16 kernels (float32: the oneDNN kernel)");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("X and Y must be channels-last");
  auto float_type = [](DType t) { return t == DType::kFloat32 || t == DType::kBFloat16; };
  if (init.inputs.size() != 1 || !float_type(init.inputs[0].dtype) || !init.inputs[0].shape.IsFullyKnown())
    return Decline("a float32 or bfloat16 X of known shape only");
  // Y: bfloat16 where the plan stores it so, float32 otherwise (as the reference infers it for a float32 X).
  const bool bf16_y = !init.outputs.empty() && init.outputs[0].dtype == DType::kBFloat16;
  const Shape x = init.inputs[0].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("X must be a non-empty 4-D tensor");
  const int64_t pixels = x[1] * x[2];
  if (pixels > kMaxPixels)
    return Decline(StrCat("averages ", pixels, " pixels (float32 accuracy: at most ", kMaxPixels, ")"));
  if (init.inputs[0].dtype == DType::kBFloat16) return MakeGlobalAvgPoolNhwc<uint16_t>(x[0], pixels, x[3], bf16_y);
  return MakeGlobalAvgPoolNhwc<float>(x[0], pixels, x[3], bf16_y);
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
