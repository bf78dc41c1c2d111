// strata.ConvMaxPool on channels-last data (a strata.ChannelsLast node wrapping it; X and Y are [N, H, W, C]),
// float32, 2-D: a direct convolution for layers with few input taps (C * KH * KW <= 32, the first layer of an image
// model), whose activated outputs go into a small per-task buffer of a few rows that the max pool then reads. The
// convolution's output never reaches memory: for the Fashion-MNIST CNN's first layer at batch 32 that is 2.8 MB
// written and read back, and a second parallel region (oneDNN runs the convolution and the pool as two primitives).
//
// Per task (one image, one row of pooled outputs, a tile of pooled columns): every convolution output the tile's
// windows need is computed once (all output channels at a time: the input value is broadcast and multiplied with a
// vector of 16 output channels' weights, kept in registers), activated with the reference's ApplyActivation, then
// each window's maximum is taken with the reference's rule (the first non-NaN value, then strictly greater ones; an
// all-NaN window gives NaN). Sums run in a different order than the reference convolution's, so results agree to
// rounding, not bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/max_window.h"
#include "ops/defs/fused/activation.h"
#include "ops/defs/fused/conv_max_pool.h"
#include "ops/defs/nn/spatial.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu ConvMaxPool (channels-last): ", why); }

constexpr int64_t kBufferFloats = 8192;  // per task: 32 KiB of convolution outputs
constexpr int64_t kMaxGroupLanes = 64;   // output channels computed together (4 vectors)
constexpr int64_t kMaxPoolTaps = 256;    // pool window size accepted

struct Geometry {
  int64_t n, h, w, c;                      // X
  int64_t oc, ocp;                         // output channels, rounded up to 16
  int64_t kh, kw, sh, sw, dh, dw, pt, pl;  // convolution
  int64_t ch, cw;                          // convolution output
  int64_t pkh, pkw, psh, psw;              // pool (no padding, no dilation)
  int64_t ph, pw;                          // Y
  int64_t tile;                            // pooled columns per task
};

// out[0..NB) = bias + sum over the valid taps of x * w, for convolution output (r, q) of image xn, output channels
// [og, og + 16 NB). Windows inside X take one flat loop over the taps (their offsets from the window's corner in
// `xoff`); windows over the border skip the taps outside.
template <int NB>
inline void ConvPoint(const Geometry& g, const int64_t* xoff, const float* xn, const float* wt, const float* bias,
                      int64_t r, int64_t q, int64_t og, bool relu, V16* out) {
  V16 acc[NB];
#pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) acc[b] = *reinterpret_cast<const V16*>(bias + og + b * kLanes);
  const int64_t h0 = r * g.sh - g.pt, w0 = q * g.sw - g.pl;
  if (h0 >= 0 && w0 >= 0 && h0 + (g.kh - 1) * g.dh < g.h && w0 + (g.kw - 1) * g.dw < g.w) {
    const float* xw = xn + (h0 * g.w + w0) * g.c;
    const float* wp = wt + og;
    const int64_t taps = g.kh * g.kw * g.c;
    for (int64_t t = 0; t < taps; ++t, wp += g.ocp) {
      const float v = xw[xoff[t]];
#pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[b] += v * *reinterpret_cast<const V16*>(wp + b * kLanes);
    }
  } else {
    int64_t h_lo, h_hi, w_lo, w_hi;
    nn::ValidTaps(h0, g.kh, g.dh, g.h, &h_lo, &h_hi);
    nn::ValidTaps(w0, g.kw, g.dw, g.w, &w_lo, &w_hi);
    for (int64_t i = h_lo; i < h_hi; ++i)
      for (int64_t j = w_lo; j < w_hi; ++j) {
        const float* xp = xn + ((h0 + i * g.dh) * g.w + (w0 + j * g.dw)) * g.c;
        const float* wp = wt + (i * g.kw + j) * g.c * g.ocp + og;
        for (int64_t k = 0; k < g.c; ++k) {
          const float v = xp[k];
          const float* wk = wp + k * g.ocp;
#pragma GCC unroll 16
          for (int b = 0; b < NB; ++b) acc[b] += v * *reinterpret_cast<const V16*>(wk + b * kLanes);
        }
      }
  }
  const V16 zero = {};
#pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) out[b] = relu ? (acc[b] > zero ? acc[b] : zero) : acc[b];  // Relu as the reference's
}

// P horizontally adjacent convolution outputs (r, q..q+P-1), all with windows inside X, output channels
// [og, og + 16 NB): NB * P independent accumulators, so the FMAs of one tap do not wait for each other.
template <int NB, int P>
inline void ConvBlock(const Geometry& g, const int64_t* xoff, const float* xn, const float* wt, const float* bias,
                      int64_t r, int64_t q, int64_t og, bool relu, float* out) {
  V16 acc[P][NB];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) acc[p][b] = *reinterpret_cast<const V16*>(bias + og + b * kLanes);
  const float* xw = xn + ((r * g.sh - g.pt) * g.w + (q * g.sw - g.pl)) * g.c;
  const int64_t step = g.sw * g.c;
  const float* wp = wt + og;
  const int64_t taps = g.kh * g.kw * g.c;
  for (int64_t t = 0; t < taps; ++t, wp += g.ocp) {
    V16 w[NB];
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) w[b] = *reinterpret_cast<const V16*>(wp + b * kLanes);
    const float* xt = xw + xoff[t];
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const float v = xt[p * step];
#pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[p][b] += v * w[b];
    }
  }
  const V16 zero = {};
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b)
      *reinterpret_cast<V16*>(out + p * g.ocp + b * kLanes) = relu ? (acc[p][b] > zero ? acc[p][b] : zero) : acc[p][b];
}

// Convolution outputs (r, q) for q in [q0, q1) into row[(q - q0) * OCP ...], output channels [og, og + 16 NB).
template <int NB>
void ConvRow(const Geometry& g, const int64_t* xoff, const float* xn, const float* wt, const float* bias, int64_t r,
             int64_t q0, int64_t q1, int64_t og, bool relu, float* row) {
  constexpr int P = NB == 1 ? 8 : NB == 2 ? 8 : NB == 3 ? 5 : 4;
  // Columns whose windows lie inside X (when the row's do): [in_lo, in_hi).
  const int64_t h0 = r * g.sh - g.pt;
  int64_t in_lo = q1, in_hi = q1;
  if (h0 >= 0 && h0 + (g.kh - 1) * g.dh < g.h) {
    in_lo = std::max(q0, (g.pl + g.sw - 1) / g.sw);
    const int64_t last = g.w - 1 - (g.kw - 1) * g.dw + g.pl;  // w0 + extent < W  <=>  q * sw <= last
    in_hi = last < 0 ? in_lo : std::min(q1, last / g.sw + 1);
    if (in_hi < in_lo) in_lo = in_hi = q1;
  }
  auto point = [&](int64_t q) {
    ConvPoint<NB>(g, xoff, xn, wt, bias, r, q, og, relu, reinterpret_cast<V16*>(row + (q - q0) * g.ocp + og));
  };
  int64_t q = q0;
  for (; q < in_lo; ++q) point(q);
  for (; q + P <= in_hi; q += P) ConvBlock<NB, P>(g, xoff, xn, wt, bias, r, q, og, relu, row + (q - q0) * g.ocp + og);
  for (; q < q1; ++q) point(q);
}

class ConvMaxPoolNhwc final : public Kernel {
 public:
  ConvMaxPoolNhwc(const Geometry& g, Activation act, bool has_bias)
      : g_(g), act_(std::move(act)), relu_(act_.op == "Relu"), has_bias_(has_bias) {
    for (int64_t i = 0, t = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        for (int64_t k = 0; k < g.c; ++k) xoff_[t++] = (i * g.dh * g.w + j * g.dw) * g.c + k;
  }

  std::string_view name() const override { return "cpu"; }

  // Packed weights [KH][KW][C][OCP] and the bias [OCP], zero-padded to whole vectors.
  size_t scratch_bytes() const override {
    return sizeof(float) * static_cast<size_t>(g_.kh * g_.kw * g_.c * g_.ocp + g_.ocp) + 64;
  }

  Status Run(KernelContext& ctx) const override {
    const Geometry& g = g_;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.shape() != Shape{g.n, g.h, g.w, g.c} || w.shape() != Shape{g.oc, g.c, g.kh, g.kw})
      return ctx.Error("X ", x.shape().ToString(), " and W ", w.shape().ToString(),
                       " differ from the shapes the plan was made for");
    if (has_bias_ && ctx.input(2).shape() != Shape{g.oc})
      return ctx.Error("B ", ctx.input(2).shape().ToString(), " must be [", g.oc, "]");
    STRATA_ASSIGN_OR_RETURN(void* scratch, ctx.Scratch(scratch_bytes()));
    float* wt = static_cast<float*>(scratch);
    float* bias = wt + g.kh * g.kw * g.c * g.ocp;
    const float* pw = w.data<float>();
    std::memset(wt, 0, sizeof(float) * static_cast<size_t>(g.kh * g.kw * g.c * g.ocp + g.ocp));
    for (int64_t o = 0; o < g.oc; ++o)
      for (int64_t k = 0; k < g.c; ++k)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j)
            wt[((i * g.kw + j) * g.c + k) * g.ocp + o] = pw[((o * g.c + k) * g.kh + i) * g.kw + j];
    if (has_bias_) std::memcpy(bias, ctx.input(2).data<float>(), sizeof(float) * static_cast<size_t>(g.oc));

    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, Shape{g.n, g.ph, g.pw, g.oc}));
    const float* px = x.data<float>();
    float* py = y->data<float>();
    const int64_t tiles = (g.pw + g.tile - 1) / g.tile;
    const int64_t work = g.tile * g.pkh * g.pkw * g.kh * g.kw * g.c * g.ocp;
    ParallelFor(g.n * g.ph * tiles, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work)),
                [&](int64_t begin, int64_t end) {
                  alignas(64) float buf[kBufferFloats];
                  for (int64_t t = begin; t < end; ++t) Task(px, wt, bias, py, t, tiles, buf);
                });
    return Status::OK();
  }

 private:
  void Task(const float* px, const float* wt, const float* bias, float* py, int64_t t, int64_t tiles,
            float* buf) const {
    const Geometry& g = g_;
    const int64_t n = t / (g.ph * tiles), rest = t % (g.ph * tiles);
    const int64_t prow = rest / tiles, p0 = (rest % tiles) * g.tile, p1 = std::min(g.pw, p0 + g.tile);
    // The convolution outputs the windows need: rows [r0, r1), columns [q0, q1) (windows clipped to the output, as
    // ceil_mode's last window is).
    const int64_t r0 = prow * g.psh, r1 = std::min(g.ch, r0 + g.pkh);
    const int64_t q0 = p0 * g.psw, q1 = std::min(g.cw, (p1 - 1) * g.psw + g.pkw);
    const int64_t cols = q1 - q0;
    const float* xn = px + n * g.h * g.w * g.c;
    for (int64_t r = r0; r < r1; ++r) {
      float* row = buf + (r - r0) * cols * g.ocp;
      for (int64_t og = 0; og < g.ocp; og += kMaxGroupLanes) {
        switch (std::min<int64_t>(kMaxGroupLanes, g.ocp - og) / kLanes) {
          case 1:
            ConvRow<1>(g, xoff_, xn, wt, bias, r, q0, q1, og, relu_, row);
            break;
          case 2:
            ConvRow<2>(g, xoff_, xn, wt, bias, r, q0, q1, og, relu_, row);
            break;
          case 3:
            ConvRow<3>(g, xoff_, xn, wt, bias, r, q0, q1, og, relu_, row);
            break;
          default:
            ConvRow<4>(g, xoff_, xn, wt, bias, r, q0, q1, og, relu_, row);
            break;
        }
      }
      if (!act_.op.empty() && !relu_) ApplyActivation(act_, row, cols * g.ocp);
    }
    // Each window's maximum (the reference's rule, max_window.h).
    const float* taps[kMaxPoolTaps];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c0 = p * g.psw - q0, c1 = std::min(g.cw, p * g.psw + g.pkw) - q0;
      int64_t n_taps = 0;
      for (int64_t r = 0; r < r1 - r0; ++r)
        for (int64_t c = c0; c < c1; ++c) taps[n_taps++] = buf + (r * cols + c) * g.ocp;
      float* yp = py + ((n * g.ph + prow) * g.pw + p) * g.oc;
      for (int64_t v = 0; v < g.ocp; v += kMaxGroupLanes) {
        switch (std::min<int64_t>(kMaxGroupLanes, g.ocp - v) / kLanes) {
          case 1:
            MaxOverTaps<1>(taps, n_taps, v, yp + v, g.oc - v);
            break;
          case 2:
            MaxOverTaps<2>(taps, n_taps, v, yp + v, g.oc - v);
            break;
          case 3:
            MaxOverTaps<3>(taps, n_taps, v, yp + v, g.oc - v);
            break;
          default:
            MaxOverTaps<4>(taps, n_taps, v, yp + v, g.oc - v);
            break;
        }
      }
    }
  }

  Geometry g_;
  Activation act_;
  bool relu_;  // applied in ConvPoint; other activations by ApplyActivation on each row
  bool has_bias_;
  int64_t xoff_[kConvMaxPoolMaxTaps] = {};  // tap t's offset in X from the window's corner
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConvMaxPool(const KernelInit& init) {
  const Node& node = init.node;
  if (node.GetString("op_domain", "") != "strata" || node.GetString("op", "") != "ConvMaxPool")
    return Decline("not a channels-last ConvMaxPool");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("X and Y must be channels-last, W and B as Conv defines them");
  if (init.inputs.size() < 2 || init.inputs.size() > 3 || init.outputs.size() != 1)
    return Decline("takes X, W and an optional B, and gives one output");
  if (Status fits = ConvMaxPoolFastFits(node, init.inputs[0], init.inputs[1]); !fits.ok())
    return Decline(fits.message());
  for (const ValueType& vt : init.inputs)
    if (vt.dtype != DType::kFloat32 || !vt.shape.IsFullyKnown()) return Decline("float32 inputs of known shape only");
  const Shape x = init.inputs[0].shape.ToShape(), w = init.inputs[1].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("2-D convolutions on non-empty X only");
  if (w[1] != x[3]) return Decline("W's input channels differ from X's");
  if (init.inputs.size() == 3 && init.inputs[2].shape.ToShape() != Shape{w[0]}) return Decline("B must be [M]");
  auto act = ReadFusedActivation(node);
  if (!act.ok()) return Decline(act.status().message());

  // The convolution (on the NCHW view of X) and the pool (on the convolution's output).
  Node conv, pool;
  SplitConvMaxPool(node, &conv, &pool);
  const Shape nchw{x[0], x[3], x[1], x[2]};
  const std::vector<int64_t> w_kernel{w[2], w[3]};
  auto conv_attrs = nn::ReadSpatialAttrs(conv, 2, nn::SpatialOptions{.kernel_from_attr = false}, &w_kernel);
  if (!conv_attrs.ok()) return Decline(conv_attrs.status().message());
  Shape mid;
  auto cg = nn::ForwardGeometry(conv, *conv_attrs, nchw, w[0], &mid);
  if (!cg.ok()) return Decline(cg.status().message());
  Shape out;
  auto pg = MaxPoolGeometry(pool, mid, &out);
  if (!pg.ok()) return Decline(pg.status().message());
  for (int a = 1; a < 3; ++a)
    if (pg->pad_begin[a] != 0 || pg->dilation[a] != 1) return Decline("pools with padding or dilation");
  if (init.outputs[0].shape.IsFullyKnown() && init.outputs[0].shape.ToShape() != Shape{out[0], out[2], out[3], out[1]})
    return Decline("Y does not have the pooled shape");

  Geometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = x[3];
  g.oc = w[0], g.ocp = (w[0] + kLanes - 1) / kLanes * kLanes;
  g.kh = w[2], g.kw = w[3], g.sh = cg->stride[1], g.sw = cg->stride[2], g.dh = cg->dilation[1], g.dw = cg->dilation[2];
  g.pt = cg->pad_begin[1], g.pl = cg->pad_begin[2];
  g.ch = mid[2], g.cw = mid[3];
  g.pkh = pg->kernel[1], g.pkw = pg->kernel[2], g.psh = pg->stride[1], g.psw = pg->stride[2];
  g.ph = out[2], g.pw = out[3];
  if (g.ph <= 0 || g.pw <= 0) return Decline("empty output");
  // Pooled columns per task: as many as the buffer holds (the windows' rows x the columns they span x OCP).
  const int64_t per_column = g.pkh * g.ocp;
  const int64_t max_cols = kBufferFloats / std::max<int64_t>(1, per_column);
  if (max_cols < g.pkw) return Decline("the pool window's outputs do not fit the task buffer");
  if (g.pkh * g.pkw > kMaxPoolTaps) return Decline("pool windows of more than 256 values");
  g.tile = std::min(g.pw, (max_cols - g.pkw) / std::max<int64_t>(1, g.psw) + 1);
  return std::unique_ptr<Kernel>(std::make_unique<ConvMaxPoolNhwc>(g, *std::move(act), init.inputs.size() == 3));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
