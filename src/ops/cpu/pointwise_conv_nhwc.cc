// 1x1 convolution on channels-last data: a strata.ChannelsLast node wrapping Conv or strata.FusedConv (optionally
// with its channels-last residual Z) with a 1x1 kernel, stride 1, no padding, one group, float32, 2-D. On [N, H, W, C]
// data that is a matrix product, Y[pixels, M] = X[pixels, C] * W^T + B (+ Z), then the activation.
//
// Why: layers with few input or output channels over many pixels are memory-bound, and oneDNN 2.6's nhwc
// brgconv_1x1 ran mobilenet_v2's (32 -> 16, 96 -> 24, 144 -> 24 channels at 112x112 and 56x56, batch 32) at 1.7-2.7x
// ONNX Runtime's time (32 -> 16: 5.0 vs 2.0 ms). This kernel sweeps X and Y once in memory order: per block of 6
// pixels and pair of output vectors, 6 x 2 accumulators in registers, each input value broadcast against the two
// vectors of packed weights, with X prefetched two blocks ahead. It takes only the layers where it measured faster
// (see CreateChannelsLastPointwiseConv); the code handles any channel counts.
//
// Relu and Clip are applied in registers with the reference's NaN rules, other activations by the reference's
// ApplyActivation per block. Y may be Z's memory (the planner's in-place residual): each vector of Z is read just
// before the same vector of Y is written. Sums run in a different order than the reference convolution's (bias
// first, fused multiply-adds), so results agree to rounding.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/vec_epilogue.h"
#include "ops/defs/fused/activation.h"
#include "ops/inplace.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu 1x1 Conv (channels-last): ", why); }

constexpr int64_t kMinBytes = int64_t{8} << 20;  // see CreateChannelsLastPointwiseConv
constexpr int64_t kMaxSmallSide = 32;            // see CreateChannelsLastPointwiseConv
constexpr int64_t kLargeOutputBytes = int64_t{64} << 20;

struct Params {
  int64_t c = 0, m = 0, mp = 0;  // input channels, output channels, output channels rounded up to 16
  VecEpilogue ep;
};

// lanes (1..16) floats of a vector at p; the rest zero.
inline V16 LoadPartial(const float* p, int64_t lanes) {
  if (lanes == kLanes) return *reinterpret_cast<const V16*>(p);
#if STRATA_CPU_HAS_AVX512
  return reinterpret_cast<V16>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << lanes) - 1), p));
#endif
  V16 v = {};
  std::memcpy(&v, p, sizeof(float) * static_cast<size_t>(lanes));
  return v;
}

inline void StorePartial(float* p, V16 v, int64_t lanes, bool stream) {
  if (lanes == kLanes) {
    StoreVector(p, v, stream);
    return;
  }
#if STRATA_CPU_HAS_AVX512
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << lanes) - 1), reinterpret_cast<__m512>(v));
#else
  std::memcpy(p, &v, sizeof(float) * static_cast<size_t>(lanes));
#endif
}

// Pixels [p0, p0 + R), output channels [og, og + 16 NB) (the last vector possibly partial: M - og - 16 b lanes).
template <int R, int NB>
inline void Block(const Params& a, const float* x, const float* wt, const float* bias, const float* z, float* y,
                  int64_t p0, int64_t og) {
  V16 acc[R][NB];
#pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    const V16 bv = *reinterpret_cast<const V16*>(bias + og + b * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r][b] = bv;
  }
  const float* xp = x + p0 * a.c;
  const float* wp = wt + og;
  for (int64_t k = 0; k < a.c; ++k, wp += a.mp) {
    V16 w[NB];
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) w[b] = *reinterpret_cast<const V16*>(wp + b * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float v = xp[r * a.c + k];
#pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[r][b] += v * w[b];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const int64_t row = (p0 + r) * a.m + og;
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) {
      const int64_t lanes = std::min<int64_t>(kLanes, a.m - og - b * kLanes);
      V16 v = acc[r][b];
      if (z != nullptr) v += LoadPartial(z + row + b * kLanes, lanes);
      StorePartial(y + row + b * kLanes, Activate(v, a.ep), lanes, a.ep.stream);
    }
  }
}

// Pixels [p0, p0 + R), all output channels, in groups of two vectors: R x 2 accumulators, the two weight vectors and
// the broadcast input stay within 16 vector registers (GCC 12 spilled larger blocks here). Also prefetches (into L2)
// X's rows for the block after next: a block reads R rows of C floats one float at a time, which the hardware
// prefetchers do not follow (144 -> 24 channels at 56x56, batch 32: 8.3 ms without, 5.5 ms with).
template <int R>
inline void Pixels(const Params& a, const float* x, const float* wt, const float* bias, const float* z, float* y,
                   int64_t p0, int64_t pixels) {
  if (p0 + 3 * R <= pixels) {
    const char* ahead = reinterpret_cast<const char*>(x + (p0 + 2 * R) * a.c);
    const int64_t bytes = R * a.c * static_cast<int64_t>(sizeof(float));
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(ahead + o, 0, 2);
  }
  int64_t og = 0;
  for (; og + 2 * kLanes <= a.mp; og += 2 * kLanes) Block<R, 2>(a, x, wt, bias, z, y, p0, og);
  if (og < a.mp) Block<R, 1>(a, x, wt, bias, z, y, p0, og);
}

class PointwiseConvNhwc final : public Kernel, public InplaceKernel {
 public:
  PointwiseConvNhwc(int64_t pixels, const Params& p, Activation act, bool has_bias, bool has_z)
      : pixels_(pixels), params_(p), act_(std::move(act)), has_bias_(has_bias), has_z_(has_z) {}

  std::string_view name() const override { return "cpu"; }
  int inplace_input() const override { return has_z_ ? 3 : -1; }

  // Packed weights [C][MP] and the bias [MP], zero-padded to whole vectors.
  size_t scratch_bytes() const override {
    return sizeof(float) * static_cast<size_t>((params_.c + 1) * params_.mp) + 64;
  }

  Status Run(KernelContext& ctx) const override {
    const Params& a = params_;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.num_elements() != pixels_ * a.c || x.shape().rank() != 4 || x.shape()[3] != a.c ||
        w.shape() != Shape{a.m, a.c, 1, 1})
      return ctx.Error("X ", x.shape().ToString(), " and W ", w.shape().ToString(),
                       " differ from the shapes the plan was made for");
    if (has_bias_ && ctx.input(2).shape() != Shape{a.m})
      return ctx.Error("B ", ctx.input(2).shape().ToString(), " must be [", a.m, "]");
    const Shape y_shape{x.shape()[0], x.shape()[1], x.shape()[2], a.m};
    const float* pz = nullptr;
    if (has_z_) {
      if (ctx.input(3).shape() != y_shape)
        return ctx.Error("Z ", ctx.input(3).shape().ToString(), " must have the output's shape ", y_shape.ToString());
      pz = ctx.input(3).data<float>();
    }
    STRATA_ASSIGN_OR_RETURN(void* scratch, ctx.Scratch(scratch_bytes()));
    float* wt = static_cast<float*>(scratch);
    float* bias = wt + a.c * a.mp;
    std::memset(wt, 0, sizeof(float) * static_cast<size_t>((a.c + 1) * a.mp));
    const float* pw = w.data<float>();
    for (int64_t o = 0; o < a.m; ++o)
      for (int64_t k = 0; k < a.c; ++k) wt[k * a.mp + o] = pw[o * a.c + k];
    if (has_bias_) std::memcpy(bias, ctx.input(2).data<float>(), sizeof(float) * static_cast<size_t>(a.m));

    // With Z's memory taken over (in place), py == pz.
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, y_shape));
    const float* px = x.data<float>();
    float* py = y->data<float>();
    Params run = a;
    // Only whole vectors are streamed, so only when M is a whole number of them (every output line is written whole).
    run.ep.stream =
        a.m % kLanes == 0 && StreamsOutput(a.ep, y->num_elements() * static_cast<int64_t>(sizeof(float)), py);
    // Tasks of whole 6-pixel blocks (the last one takes the rest).
    constexpr int64_t kBlock = 6;
    const int64_t blocks = (pixels_ + kBlock - 1) / kBlock;
    const int64_t block_work = kBlock * a.c * a.mp;
    ParallelFor(blocks, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, block_work)),
                [&](int64_t begin, int64_t end) {
                  const int64_t p_end = std::min(pixels_, end * kBlock);
                  int64_t p = begin * kBlock;
                  for (; p + kBlock <= p_end; p += kBlock) Pixels<kBlock>(run, px, wt, bias, pz, py, p, p_end);
                  for (; p < p_end; ++p) Pixels<1>(run, px, wt, bias, pz, py, p, p_end);
                  if (a.ep.act == VecEpilogue::Act::kOther)
                    ApplyActivation(act_, py + begin * kBlock * a.m, (p_end - begin * kBlock) * a.m);
#if STRATA_CPU_HAS_AVX512
                  if (run.ep.stream) _mm_sfence();  // the streamed stores are visible before the next op reads them
#endif
                });
    return Status::OK();
  }

 private:
  int64_t pixels_;
  Params params_;
  Activation act_;
  bool has_bias_, has_z_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastPointwiseConv(const KernelInit& init) {
  const Node& node = init.node;
  const std::string op = node.GetString("op", ""), domain = node.GetString("op_domain", "");
  const bool fused = domain == "strata" && op == "FusedConv";
  if (!fused && !(domain.empty() && op == "Conv")) return Decline("not a channels-last Conv or FusedConv");
  const bool has_z = fused && init.inputs.size() == 4 && node.has_input(3);
  const std::vector<int64_t> nhwc = node.GetInts("nhwc_inputs", {0});
  if (!(has_z ? (nhwc == std::vector<int64_t>{0, 3} || nhwc == std::vector<int64_t>{3, 0})
              : nhwc == std::vector<int64_t>{0}) ||
      node.GetInt("nhwc_output", 1) != 1)
    return Decline("X, Y (and Z) must be channels-last, W and B as Conv defines them");
  if (init.inputs.size() < 2 || init.inputs.size() > 4 || init.outputs.size() != 1)
    return Decline("takes X, W, an optional B and an optional Z, and gives one output");
  if (init.inputs.size() == 4 && !has_z) return Decline("a fourth input on a plain Conv");
  if (init.inputs.size() >= 3 && !node.has_input(2)) return Decline("Z without B");
  if (fused && node.GetInt("transpose", 0) != 0) return Decline("ConvTranspose");
  for (const ValueType& vt : init.inputs)
    if (vt.dtype != DType::kFloat32 || !vt.shape.IsFullyKnown()) return Decline("float32 inputs of known shape only");
  const Shape x = init.inputs[0].shape.ToShape(), w = init.inputs[1].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("2-D convolutions on non-empty X only");
  if (w.rank() != 4 || w[2] != 1 || w[3] != 1 || w[1] != x[3]) return Decline("not a 1x1 kernel over X's channels");
  if (node.GetInt("group", 1) != 1) return Decline("grouped");
  for (int64_t s : node.GetInts("strides", {1, 1}))
    if (s != 1) return Decline("strides other than 1");
  for (int64_t p : node.GetInts("pads", {0, 0, 0, 0}))
    if (p != 0) return Decline("padding");
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    return Decline("unknown auto_pad");  // (1x1 at stride 1: every valid auto_pad means no padding)
  if (node.HasAttr("kernel_shape") && node.GetInts("kernel_shape", {}) != std::vector<int64_t>{1, 1})
    return Decline("kernel_shape differs from W's");
  const int64_t m = w[0], c = x[3];
  const Shape y{x[0], x[1], x[2], m};
  if (init.inputs.size() >= 3 && init.inputs[2].shape.ToShape() != Shape{m}) return Decline("B must be [M]");
  if (has_z && init.inputs[3].shape.ToShape() != y) return Decline("Z does not have Y's shape");
  if (init.outputs[0].shape.IsFullyKnown() && init.outputs[0].shape.ToShape() != y)
    return Decline("Y does not have the convolution's shape");
  // Where this kernel is the faster one (mobilenet_v2's and squeezenet1_1's 1x1 layers at batch 32, each timed
  // against oneDNN's in the same runs): memory-bound layers, X or Y beyond the caches, with
  //  - at most 32 output channels: 1.3-2.2 ms less per layer (32 -> 16 at 112x112: 3.5 vs 5.3 ms; 144 -> 24 with the
  //    residual at 56x56: 5.4 vs 7.6 ms; squeezenet's 128 -> 16 at 55x55: 3.6 vs 5.0 ms);
  //  - or at most 32 input channels and Y far beyond the last-level cache (64 MiB), where its streaming stores pay:
  //    16 -> 96 at 112x112 (154 MB), 12.5 vs 13.8 ms.
  // Expansions with smaller outputs (squeezenet's 16 -> 64 at 55x55, 25 MB: 2.4 vs 2.0 ms) and layers with more
  // channels on both sides (64 -> 384, 576 -> 96, 960 -> 320: oneDNN 5-20% faster) stay with oneDNN.
  const int64_t y_bytes = y.NumElements() * static_cast<int64_t>(sizeof(float));
  const int64_t bytes = std::max(x.NumElements() * static_cast<int64_t>(sizeof(float)), y_bytes);
  if (bytes < kMinBytes) return Decline("X and Y fit in the caches (under 8 MiB): oneDNN's kernel is faster there");
  if (m > kMaxSmallSide && !(c <= kMaxSmallSide && y_bytes >= kLargeOutputBytes))
    return Decline("more than 32 output channels (and not an expansion to an output of 64 MiB or more)");

  Params p;
  p.c = c, p.m = m, p.mp = (m + kLanes - 1) / kLanes * kLanes;
  Activation act;
  if (fused) {
    auto a = ReadFusedActivation(node);
    if (!a.ok()) return Decline(a.status().message());
    act = *std::move(a);
  }
  p.ep = EpilogueFor(act);
  return std::unique_ptr<Kernel>(
      std::make_unique<PointwiseConvNhwc>(x[0] * x[1] * x[2], p, std::move(act), init.inputs.size() >= 3, has_z));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
