// Depthwise convolution on channels-last data: a strata.ChannelsLast node wrapping Conv or strata.FusedConv (no
// residual input) with group == C == M (W [C, 1, KH, KW]), float32, 2-D, C a whole number of 16-float vectors.
//
// Why: these layers (mobilenet_v2's 3x3 convolutions over 32 to 960 channels) move far more memory than they
// compute (9 multiply-adds per value read), and oneDNN 2.6's nhwc depthwise implementation (brdgmm_dw) ran them at
// about half the speed ONNX Runtime's NCHWc kernels did at batch 32 (e.g. 96 channels, 112x112, stride 2: 10-15 ms
// vs 7.5 ms). This kernel reads each input row from cache, writes each output once, and keeps the tap weights of one
// channel vector in registers while it sweeps a row.
//
// Per task (a range of (image, output row) pairs), per vector of 16 channels: the taps' weights are loaded once, then
// the row's outputs are computed P at a time (independent accumulators). Outputs whose windows cross the border skip
// the taps outside, as the reference does. Relu and Clip are applied in registers with the reference's NaN rules
// (Clip keeps NaN; oneDNN's fused Clip maps it to the bound, which made the oneDNN kernel scan its input for NaN);
// other activations go through the reference's ApplyActivation on the finished row. Sums run in a different order
// than the reference convolution's (bias first, with fused multiply-adds), so results agree to rounding.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/vec_epilogue.h"
#include "ops/defs/fused/activation.h"
#include "ops/defs/nn/spatial.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu depthwise Conv (channels-last): ", why); }

constexpr int64_t kMaxTaps = 49;                      // kernels up to 7x7
constexpr int64_t kMinInputBytes = int64_t{8} << 20;  // see CreateChannelsLastDepthwiseConv

struct DwGeometry {
  int64_t n, h, w, c;              // X [N, H, W, C]
  int64_t kh, kw, sh, sw, dh, dw;  // kernel, strides, dilations
  int64_t pt, pl;                  // pads at the top and left
  int64_t oh, ow;                  // Y [N, OH, OW, C]
};

// Outputs q in [q0, q0 + P) of the row whose windows lie inside X horizontally; rows [i_lo, i_hi) of the kernel are
// inside X vertically. `xr` points at X's row h0 (the window's top row, possibly outside X: only rows i_lo.. are
// read), column 0, channel vector cb; `wv` holds the taps' weight vectors.
template <int P>
inline void DwBlock(const DwGeometry& g, const float* xr, const V16* wv, V16 bias, int64_t i_lo, int64_t i_hi,
                    int64_t q0, const VecEpilogue& act, float* yr) {
  V16 acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  const int64_t col_step = g.sw * g.c;
  for (int64_t i = i_lo; i < i_hi; ++i) {
    const float* xi = xr + i * g.dh * g.w * g.c + (q0 * g.sw - g.pl) * g.c;
    const V16* wi = wv + i * g.kw;
    for (int64_t j = 0; j < g.kw; ++j) {
      const float* xj = xi + j * g.dw * g.c;
      const V16 wj = wi[j];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[p] += *reinterpret_cast<const V16*>(xj + p * col_step) * wj;
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) StoreVector(yr + (q0 + p) * g.c, Activate(acc[p], act), act.stream);
}

// The same for 3x3 kernels with all three rows inside X and stride S (1 or 2): each input column of the block is
// loaded once and added into every output whose window holds it; the nine weights stay in registers.
template <int P, int S>
inline void DwBlock3x3(const DwGeometry& g, const float* xr, const V16* wv, V16 bias, int64_t q0,
                       const VecEpilogue& act, float* yr) {
  constexpr int kCols = (P - 1) * S + 3;
  V16 acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  const int64_t c = g.c;
  const float* xi = xr + (q0 * S - g.pl) * c;
#pragma GCC unroll 3
  for (int i = 0; i < 3; ++i, xi += g.w * c) {
    const V16 w0 = wv[i * 3], w1 = wv[i * 3 + 1], w2 = wv[i * 3 + 2];
    const float* xk = xi;
#pragma GCC unroll 32
    for (int k = 0; k < kCols; ++k, xk += c) {
      const V16 v = *reinterpret_cast<const V16*>(xk);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const int j = k - p * S;
        if (j == 0) acc[p] += v * w0;
        if (j == 1) acc[p] += v * w1;
        if (j == 2) acc[p] += v * w2;
      }
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) StoreVector(yr + (q0 + p) * c, Activate(acc[p], act), act.stream);
}

// One output whose window may cross any border: only the taps inside X.
inline void DwPoint(const DwGeometry& g, const float* xr, const V16* wv, V16 bias, int64_t i_lo, int64_t i_hi,
                    int64_t q, const VecEpilogue& act, float* yr) {
  V16 acc = bias;
  const int64_t w0 = q * g.sw - g.pl;
  int64_t j_lo, j_hi;
  nn::ValidTaps(w0, g.kw, g.dw, g.w, &j_lo, &j_hi);
  for (int64_t i = i_lo; i < i_hi; ++i)
    for (int64_t j = j_lo; j < j_hi; ++j)
      acc += *reinterpret_cast<const V16*>(xr + (i * g.dh * g.w + w0 + j * g.dw) * g.c) * wv[i * g.kw + j];
  *reinterpret_cast<V16*>(yr + q * g.c) = Activate(acc, act);
}

class DepthwiseConvNhwc final : public Kernel {
 public:
  DepthwiseConvNhwc(const DwGeometry& g, Activation act, bool has_bias)
      : g_(g), act_(std::move(act)), params_(EpilogueFor(act_)), has_bias_(has_bias) {
    // Output columns whose windows lie inside X horizontally: [in_lo_, in_hi_).
    in_lo_ = std::min(g.ow, (g.pl + g.sw - 1) / g.sw);
    const int64_t last = g.w - 1 - (g.kw - 1) * g.dw + g.pl;  // q * sw - pl + extent < W  <=>  q * sw <= last
    in_hi_ = last < 0 ? in_lo_ : std::min(g.ow, last / g.sw + 1);
    if (in_hi_ < in_lo_) in_hi_ = in_lo_;
  }

  std::string_view name() const override { return "cpu"; }

  // Packed weights [KH * KW][C] and the bias [C].
  size_t scratch_bytes() const override { return sizeof(float) * static_cast<size_t>((g_.kh * g_.kw + 1) * g_.c) + 64; }

  Status Run(KernelContext& ctx) const override {
    const DwGeometry& g = g_;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.shape() != Shape{g.n, g.h, g.w, g.c} || w.shape() != Shape{g.c, 1, g.kh, g.kw})
      return ctx.Error("X ", x.shape().ToString(), " and W ", w.shape().ToString(),
                       " differ from the shapes the plan was made for");
    if (has_bias_ && ctx.input(2).shape() != Shape{g.c})
      return ctx.Error("B ", ctx.input(2).shape().ToString(), " must be [", g.c, "]");
    STRATA_ASSIGN_OR_RETURN(void* scratch, ctx.Scratch(scratch_bytes()));
    float* wt = static_cast<float*>(scratch);
    float* bias = wt + g.kh * g.kw * g.c;
    const float* pw = w.data<float>();
    const int64_t taps = g.kh * g.kw;
    for (int64_t ch = 0; ch < g.c; ++ch)
      for (int64_t t = 0; t < taps; ++t) wt[t * g.c + ch] = pw[ch * taps + t];
    if (has_bias_) {
      std::memcpy(bias, ctx.input(2).data<float>(), sizeof(float) * static_cast<size_t>(g.c));
    } else {
      std::memset(bias, 0, sizeof(float) * static_cast<size_t>(g.c));
    }
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, Shape{g.n, g.oh, g.ow, g.c}));
    const float* px = x.data<float>();
    float* py = y->data<float>();
    const int64_t row_work = g.ow * g.c * taps;
    // Outputs too large to stay in the last-level cache are streamed to memory (about a third faster on
    // mobilenet_v2's 56x56x144 layer at batch 32: no read of each line before it is written).
    VecEpilogue ap = params_;
    ap.stream = StreamsOutput(params_, y->num_elements() * static_cast<int64_t>(sizeof(float)), py);
    ParallelFor(g.n * g.oh, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, row_work)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) Row(px, wt, bias, py, t, ap);
#if STRATA_CPU_HAS_AVX512
                  if (ap.stream) _mm_sfence();  // the streamed stores are visible before the next op reads them
#endif
                });
    return Status::OK();
  }

 private:
  void Row(const float* px, const float* wt, const float* bias, float* py, int64_t t, const VecEpilogue& ap) const {
    const DwGeometry& g = g_;
    const int64_t n = t / g.oh, r = t % g.oh;
    const int64_t h0 = r * g.sh - g.pt;
    int64_t i_lo, i_hi;
    nn::ValidTaps(h0, g.kh, g.dh, g.h, &i_lo, &i_hi);
    const bool full_rows = i_lo == 0 && i_hi == g.kh;
    const int64_t taps = g.kh * g.kw;
    float* yr = py + (n * g.oh + r) * g.ow * g.c;
    // xr: X's row h0 (possibly above X; only rows i_lo.. are read), column 0.
    const float* xr = px + (n * g.h * g.w + h0 * g.w) * g.c;
    // Columns in blocks, all channel vectors of a block before the next block, so X and Y are swept in memory order.
    auto vectors = [&](auto&& f) {
      for (int64_t cb = 0; cb < g.c; cb += kLanes) {
        V16 wv[kMaxTaps];
        for (int64_t k = 0; k < taps; ++k) wv[k] = *reinterpret_cast<const V16*>(wt + k * g.c + cb);
        f(xr + cb, wv, *reinterpret_cast<const V16*>(bias + cb), yr + cb);
      }
    };
    const bool k3 = full_rows && g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2);
    for (int64_t q = 0; q < in_lo_; ++q)
      vectors([&](const float* xc, const V16* wv, V16 b, float* yc) { DwPoint(g, xc, wv, b, i_lo, i_hi, q, ap, yc); });
    int64_t q = in_lo_;
    // Each block also prefetches (into L2) its share of the input rows the next output row adds: the hardware
    // prefetchers do not follow this access pattern (one vector per pixel per pass), and without it the kernel ran
    // at about half the memory bandwidth (96 channels, 112x112, stride 2, batch 32: 13 ms, 8 ms with it).
    const int64_t blocks = (in_hi_ - in_lo_) / 8;
    const int64_t row_bytes = g.w * g.c * static_cast<int64_t>(sizeof(float));
    const bool prefetch = r + 1 < g.oh && blocks > 0;
    for (; q + 8 <= in_hi_; q += 8) {
      if (prefetch) {
        const int64_t blk = (q - in_lo_) / 8;
        const int64_t lo = row_bytes * blk / blocks / 64 * 64, hi = row_bytes * (blk + 1) / blocks;
        for (int64_t i = std::max<int64_t>(0, g.kh - g.sh); i < g.kh; ++i) {
          const int64_t row = h0 + g.sh + i * g.dh;
          if (row < 0 || row >= g.h) continue;
          const char* base = reinterpret_cast<const char*>(px + (n * g.h + row) * g.w * g.c);
          for (int64_t o = lo; o < hi; o += 64) __builtin_prefetch(base + o, 0, 2);
        }
      }
      if (k3 && g.sw == 1) {
        vectors([&](const float* xc, const V16* wv, V16 b, float* yc) { DwBlock3x3<8, 1>(g, xc, wv, b, q, ap, yc); });
      } else if (k3) {
        vectors([&](const float* xc, const V16* wv, V16 b, float* yc) { DwBlock3x3<8, 2>(g, xc, wv, b, q, ap, yc); });
      } else {
        vectors(
            [&](const float* xc, const V16* wv, V16 b, float* yc) { DwBlock<8>(g, xc, wv, b, i_lo, i_hi, q, ap, yc); });
      }
    }
    for (; q < in_hi_; ++q)
      vectors(
          [&](const float* xc, const V16* wv, V16 b, float* yc) { DwBlock<1>(g, xc, wv, b, i_lo, i_hi, q, ap, yc); });
    for (; q < g.ow; ++q)
      vectors([&](const float* xc, const V16* wv, V16 b, float* yc) { DwPoint(g, xc, wv, b, i_lo, i_hi, q, ap, yc); });
    if (ap.act == VecEpilogue::Act::kOther) ApplyActivation(act_, yr, g.ow * g.c);
  }

  DwGeometry g_;
  Activation act_;
  VecEpilogue params_;
  bool has_bias_;
  int64_t in_lo_ = 0, in_hi_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConv(const KernelInit& init) {
  const Node& node = init.node;
  const std::string op = node.GetString("op", ""), domain = node.GetString("op_domain", "");
  const bool fused = domain == "strata" && op == "FusedConv";
  if (!fused && !(domain.empty() && op == "Conv")) return Decline("not a channels-last Conv or FusedConv");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("X and Y must be channels-last, W and B as Conv defines them");
  if (init.inputs.size() < 2 || init.inputs.size() > 3 || init.outputs.size() != 1)
    return Decline("takes X, W and an optional B (no residual input), and gives one output");
  if (fused && node.GetInt("transpose", 0) != 0) return Decline("ConvTranspose");
  for (const ValueType& vt : init.inputs)
    if (vt.dtype != DType::kFloat32 || !vt.shape.IsFullyKnown()) return Decline("float32 inputs of known shape only");
  const Shape x = init.inputs[0].shape.ToShape(), w = init.inputs[1].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("2-D convolutions on non-empty X only");
  const int64_t c = x[3];
  if (node.GetInt("group", 1) != c || w.rank() != 4 || w[0] != c || w[1] != 1)
    return Decline("not depthwise (group == C == M, W [C, 1, KH, KW])");
  if (c % kLanes != 0) return Decline("channels not a multiple of 16");
  if (w[2] * w[3] > kMaxTaps || w[2] < 1 || w[3] < 1) return Decline("kernels of more than 49 taps");
  if (init.inputs.size() == 3 && init.inputs[2].shape.ToShape() != Shape{c}) return Decline("B must be [C]");
  Activation act;
  if (fused) {
    auto a = ReadFusedActivation(node);
    if (!a.ok()) return Decline(a.status().message());
    act = *std::move(a);
  }

  const Shape nchw{x[0], c, x[1], x[2]};
  const std::vector<int64_t> w_kernel{w[2], w[3]};
  auto attrs = nn::ReadSpatialAttrs(node, 2, nn::SpatialOptions{.kernel_from_attr = false}, &w_kernel);
  if (!attrs.ok()) return Decline(attrs.status().message());
  Shape out;
  auto cg = nn::ForwardGeometry(node, *attrs, nchw, c, &out);
  if (!cg.ok()) return Decline(cg.status().message());
  if (init.outputs[0].shape.IsFullyKnown() && init.outputs[0].shape.ToShape() != Shape{out[0], out[2], out[3], out[1]})
    return Decline("Y does not have the convolution's shape");

  DwGeometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = c;
  g.kh = w[2], g.kw = w[3], g.sh = cg->stride[1], g.sw = cg->stride[2], g.dh = cg->dilation[1], g.dw = cg->dilation[2];
  g.pt = cg->pad_begin[1], g.pl = cg->pad_begin[2];
  g.oh = out[2], g.ow = out[3];
  if (g.oh <= 0 || g.ow <= 0) return Decline("empty output");
  // Where this kernel is the faster one (measured on mobilenet_v2's layers, BENCHMARKS.md): inputs too large for the
  // caches, where its prefetching pays, and rows of at least 14 outputs (narrower rows spend their time on border
  // outputs). On smaller inputs oneDNN's kernel was faster (batch 1: 0.09 vs 0.13 ms for 96 channels at 112x112).
  if (x.NumElements() * static_cast<int64_t>(sizeof(float)) < kMinInputBytes)
    return Decline("X fits in the caches (under 8 MiB): oneDNN's kernel is faster there");
  if (g.ow < 14) return Decline("rows of fewer than 14 outputs");
  return std::unique_ptr<Kernel>(std::make_unique<DepthwiseConvNhwc>(g, std::move(act), init.inputs.size() == 3));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
