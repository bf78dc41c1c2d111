// strata.ChannelsLast wrapping strata.ConvBackwardFilter (dY, X, w_shape) -> dW[, dB] of a 2-D depthwise
// convolution (group = C = M, W [C, 1, KH, KW]) with dY [N, OH, OW, C] and X [N, H, W, C] channels-last, float32;
// dW and dB are plain.
//
// Why: MobileNetV3 and EfficientNetV2 train with depthwise layers over up to 112x112 pixels. Without this kernel
// their filter gradients left the channels-last regions (oneDNN 2.6's nhwc backward weights takes its gemm
// implementation for some of them, docs/engine.md): each one transposed dY and X back to NCHW, and the channels-first
// kernel (depthwise_conv_backward_filter.cc, one channel at a time, scalar) then took 80-130 ms per layer on
// MobileNetV3Large at batch 32.
//
// Per task (a fixed range of (image, output row) pairs, so the sums do not depend on the number of threads), per
// output row, per vector of channels, per tap: the sum over the row's outputs of dY times the X value the tap read,
// in float lanes across the channels (one row, at most OW terms), then added into the task's double sums; the tasks'
// sums are added in task order and rounded once. The reference (a float gemm) agrees to float rounding.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/isa_begin.h"
#include "ops/defs/grad/conv_grad_util.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) {
  return UnimplementedError("cpu depthwise ConvBackwardFilter (channels-last): ", why);
}

// Vectors of 16, 8 and 1 floats. As template arguments they lose any alignment attribute, so loads go through
// Load (unaligned).
typedef float F16 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F1 __attribute__((vector_size(4)));

template <typename V>
inline V Load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

constexpr int64_t kTasks = 8;  // row ranges; fixed, so that results do not depend on the thread count

struct DwGeometry {
  int64_t n, h, w, c;              // X [N, H, W, C]
  int64_t kh, kw, sh, sw, dh, dw;  // kernel, strides, dilations
  int64_t pt, pl;                  // pads at the top and left
  int64_t oh, ow;                  // dY [N, OH, OW, C]
};

class DepthwiseBackwardFilterNhwc final : public Kernel {
 public:
  DepthwiseBackwardFilterNhwc(const DwGeometry& g, Shape w) : g_(g), w_(std::move(w)) {
    // Per kernel column j: the output columns [lo, hi) whose tap j reads inside X.
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t off = j * g.dw - g.pl;  // input column of output 0's tap j
      int64_t lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
      int64_t hi = g.w - 1 - off < 0 ? 0 : std::min(g.ow, (g.w - 1 - off) / g.sw + 1);
      lo = std::min(lo, g.ow);
      cols_.push_back({lo, std::max(lo, hi)});
    }
    tasks_ = std::min<int64_t>(kTasks, g.n * g.oh);
  }

  std::string_view name() const override { return "cpu"; }

  // Per task: double sums of every tap and the bias, [taps + 1][C].
  size_t scratch_bytes() const override { return FilterGradScratchBytes(tasks_, g_.kh * g_.kw, g_.c); }

  Status Run(KernelContext& ctx) const override {
    const DwGeometry& g = g_;
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (x.shape() != Shape{g.n, g.h, g.w, g.c} || dy.shape() != Shape{g.n, g.oh, g.ow, g.c})
      return ctx.Error("dY ", dy.shape().ToString(), " and X ", x.shape().ToString(),
                       " differ from the shapes the plan was made for (dY [", g.n, ",", g.oh, ",", g.ow, ",", g.c,
                       "], X [", g.n, ",", g.h, ",", g.w, ",", g.c, "])");
    const float* px = x.data<float>();
    const float* pdy = dy.data<float>();
    return RunFilterGradTasks(ctx, w_, tasks_, g.n * g.oh, g.kh * g.kw, g.c,
                              [&](int64_t r, bool bias, double* acc) { Row(px, pdy, r, bias, acc); });
  }

 private:
  struct Cols {
    int64_t lo, hi;
  };

  // Output row r (image r / OH): every channel, in vectors of 16, then 8, then single channels.
  void Row(const float* px, const float* pdy, int64_t r, bool bias, double* acc) const {
    const DwGeometry& g = g_;
    int64_t cb = 0;
    for (; cb + 16 <= g.c; cb += 16) RowVector<F16, 16>(px, pdy, r, cb, bias, acc);
    for (; cb + 8 <= g.c; cb += 8) RowVector<F8, 8>(px, pdy, r, cb, bias, acc);
    for (; cb < g.c; ++cb) RowVector<F1, 1>(px, pdy, r, cb, bias, acc);
  }

  // Channels [cb, cb + L) of output row r: per tap inside X vertically, the float sum over the row's outputs whose
  // tap reads inside X horizontally (four independent partial sums), added into acc[tap][cb ..] in double.
  template <typename V, int L>
  void RowVector(const float* px, const float* pdy, int64_t r, int64_t cb, bool bias, double* acc) const {
    const DwGeometry& g = g_;
    const int64_t n = r / g.oh, oh = r % g.oh, c = g.c;
    const int64_t h0 = oh * g.sh - g.pt;
    int64_t i_lo, i_hi;
    nn::ValidTaps(h0, g.kh, g.dh, g.h, &i_lo, &i_hi);
    const float* yr = pdy + (n * g.oh + oh) * g.ow * c + cb;
    auto add = [&](double* a, V s) {
      for (int l = 0; l < L; ++l) a[l] += static_cast<double>(s[l]);
    };
    if (bias) {
      V s0 = {}, s1 = {};
      int64_t q = 0;
      for (; q + 2 <= g.ow; q += 2) {
        s0 += Load<V>(yr + q * c);
        s1 += Load<V>(yr + (q + 1) * c);
      }
      if (q < g.ow) s0 += Load<V>(yr + q * c);
      add(acc + g.kh * g.kw * c + cb, s0 + s1);
    }
    const int64_t xstep = g.sw * c;
    for (int64_t i = i_lo; i < i_hi; ++i) {
      const float* xrow = px + ((n * g.h + h0 + i * g.dh) * g.w) * c + cb;
      for (int64_t j = 0; j < g.kw; ++j) {
        const Cols& col = cols_[static_cast<size_t>(j)];
        const float* xq = xrow + (col.lo * g.sw + j * g.dw - g.pl) * c;
        const float* yq = yr + col.lo * c;
        V s0 = {}, s1 = {}, s2 = {}, s3 = {};
        int64_t q = col.lo;
        for (; q + 4 <= col.hi; q += 4, xq += 4 * xstep, yq += 4 * c) {
          s0 += Load<V>(yq) * Load<V>(xq);
          s1 += Load<V>(yq + c) * Load<V>(xq + xstep);
          s2 += Load<V>(yq + 2 * c) * Load<V>(xq + 2 * xstep);
          s3 += Load<V>(yq + 3 * c) * Load<V>(xq + 3 * xstep);
        }
        for (; q < col.hi; ++q, xq += xstep, yq += c) s0 += Load<V>(yq) * Load<V>(xq);
        add(acc + (i * g.kw + j) * c + cb, (s0 + s1) + (s2 + s3));
      }
    }
  }

  DwGeometry g_;
  Shape w_;
  std::vector<Cols> cols_;
  int64_t tasks_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConvBackwardFilter(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(const ChannelsLastConvGrad r, ReadChannelsLastConvGrad(init, Decline));
  const Shape &x = r.x, &y = r.dy, &w = r.w;
  const int64_t c = x[3];
  if (init.node.GetInt("group", 1) != c || w[0] != c || w[1] != 1) return Decline("not a depthwise convolution");
  const nn::Geometry3& f = r.f;
  DwGeometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = c;
  g.kh = w[2], g.kw = w[3], g.sh = f.stride[1], g.sw = f.stride[2], g.dh = f.dilation[1], g.dw = f.dilation[2];
  g.pt = f.pad_begin[1], g.pl = f.pad_begin[2];
  g.oh = y[1], g.ow = y[2];
  return std::unique_ptr<Kernel>(std::make_unique<DepthwiseBackwardFilterNhwc>(g, w));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
