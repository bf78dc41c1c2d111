// strata.ChannelsLast wrapping strata.ConvBackwardFilter (dY, X, w_shape) -> dW[, dB] of a 2-D convolution with one
// input channel (an image model's first layer on grey images: the Fashion-MNIST CNN's 1 -> 32, 3x3), dY
// [N, OH, OW, M] and X [N, H, W, 1] channels-last, float32, M a multiple of 16, a 3x3 kernel, one group; dW
// [M, 1, KH, KW] and dB [M] plain.
//
// Why: oneDNN 2.6 runs this layer's backward weights on its blocked layout (nChw16c), so dY (the max pool gradient
// just written, 5.5 MB at batch 64) was reordered from nhwc first: the reorder took as long as the convolution
// (0.30 and 0.31 ms of a 9 ms Fashion CNN step on one thread), and oneDNN's nhwc implementation took as long as
// both (0.55 ms). Here the sums read dY where it is: 0.43-0.45 ms.
//
// Per task (a fixed range of (image, output row) pairs, so the sums do not depend on the number of threads), per
// output row, per vector of 16 output channels: every tap's float sum over the row of dY times the X value that tap
// read (X has one channel, so that is one broadcast value per tap; taps over the border read 0), kept in registers,
// then added into the task's double sums; the tasks' sums are added in task order and rounded once. The reference
// (a float gemm) agrees to float rounding.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/isa_begin.h"
#include "ops/defs/grad/conv_grad_util.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) {
  return UnimplementedError("cpu one-input-channel ConvBackwardFilter (channels-last): ", why);
}

typedef float F16 __attribute__((vector_size(64)));
typedef double D8 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));

inline F16 Load(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr int64_t kTasks = 8;  // row ranges; fixed, so that results do not depend on the thread count

struct Geometry {
  int64_t n, h, w, m;              // X [N, H, W, 1], M output channels
  int64_t kh, kw, sh, sw, dh, dw;  // kernel, strides, dilations
  int64_t pt, pl;                  // pads at the top and left
  int64_t oh, ow;                  // dY [N, OH, OW, M]
};

// acc[k][0..16) += the 16 float lanes of v, in double.
inline void AddTo(double* acc, F16 v) {
  F8 lo, hi;
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
  D8 a, b;
  std::memcpy(&a, acc, sizeof a);
  std::memcpy(&b, acc + 8, sizeof b);
  a += __builtin_convertvector(lo, D8);
  b += __builtin_convertvector(hi, D8);
  std::memcpy(acc, &a, sizeof a);
  std::memcpy(acc + 8, &b, sizeof b);
}

class FirstLayerBackwardFilterNhwc final : public Kernel {
 public:
  FirstLayerBackwardFilterNhwc(const Geometry& g, Shape w) : g_(g), w_(std::move(w)) {
    tasks_ = std::min<int64_t>(kTasks, g.n * g.oh);
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) xoff_.push_back(i * g.dh * g.w + j * g.dw);
  }

  std::string_view name() const override { return "cpu"; }

  // Per task: double sums of every tap and the bias, [taps + 1][M].
  size_t scratch_bytes() const override { return FilterGradScratchBytes(tasks_, g_.kh * g_.kw, g_.m); }

  Status Run(KernelContext& ctx) const override {
    const Geometry& g = g_;
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (x.shape() != Shape{g.n, g.h, g.w, 1} || dy.shape() != Shape{g.n, g.oh, g.ow, g.m})
      return ctx.Error("dY ", dy.shape().ToString(), " and X ", x.shape().ToString(),
                       " differ from the shapes the plan was made for (dY [", g.n, ",", g.oh, ",", g.ow, ",", g.m,
                       "], X [", g.n, ",", g.h, ",", g.w, ",1])");
    const float* px = x.data<float>();
    const float* pdy = dy.data<float>();
    return RunFilterGradTasks(ctx, w_, tasks_, g.n * g.oh, g.kh * g.kw, g.m, [&](int64_t r, bool, double* acc) {
      int64_t ob = 0;  // the bias sum is a by-product of the rows' loads: kept whether or not dB is wanted
      for (; ob + 32 <= g.m; ob += 32) Row<2>(px, pdy, r, ob, acc);
      if (ob < g.m) Row<1>(px, pdy, r, ob, acc);
    });
  }

 private:
  // The X values that the 9 taps of output column q read, in the row of windows starting at X row h0 of image xn
  // (0 for taps over the border).
  void Taps(const float* xn, int64_t h0, bool rows_inside, int64_t q, float* xv) const {
    const Geometry& g = g_;
    const int64_t w0 = q * g.sw - g.pl;
    if (rows_inside && w0 >= 0 && w0 + 2 * g.dw < g.w) {
      const float* xw = xn + h0 * g.w + w0;
      for (int k = 0; k < 9; ++k) xv[k] = xw[xoff_[k]];
    } else {
      for (int k = 0; k < 9; ++k) {
        const int64_t hi = h0 + (k / 3) * g.dh, wj = w0 + (k % 3) * g.dw;
        xv[k] = hi >= 0 && hi < g.h && wj >= 0 && wj < g.w ? xn[hi * g.w + wj] : 0.0f;
      }
    }
  }

  // Output row r (image r / OH), output channels [ob, ob + 16 NB) (NB = 1 or 2): the 9 taps' sums and the bias sum
  // over the row's pixels, in registers (named: GCC keeps an array of nine vectors in memory), then into
  // acc[tap][ob ..] in double (acc[9][..]: the bias).
  template <int NB>
  void Row(const float* px, const float* pdy, int64_t r, int64_t ob, double* acc) const {
    const Geometry& g = g_;
    const int64_t n = r / g.oh, oh = r % g.oh;
    const int64_t h0 = oh * g.sh - g.pt;
    const float* xn = px + n * g.h * g.w;
    const float* yr = pdy + (n * g.oh + oh) * g.ow * g.m + ob;
    const bool rows_inside = h0 >= 0 && h0 + 2 * g.dh < g.h;
    F16 s0 = {}, s1 = {}, s2 = {}, s3 = {}, s4 = {}, s5 = {}, s6 = {}, s7 = {}, s8 = {}, b = {};
    F16 t0 = {}, t1 = {}, t2 = {}, t3 = {}, t4 = {}, t5 = {}, t6 = {}, t7 = {}, t8 = {}, c = {};
    // Unit strides and dilations along the row: the windows inside X read three consecutive values of three rows.
    const bool unit = g.sw == 1 && g.dw == 1;
    const float* x0 = xn + h0 * g.w;
    const float* x1 = x0 + g.dh * g.w;
    const float* x2 = x1 + g.dh * g.w;
    for (int64_t q = 0; q < g.ow; ++q) {
      float xv[9];
      const int64_t w0 = q - g.pl;
      if (unit && rows_inside && w0 >= 0 && w0 + 2 < g.w) {
        xv[0] = x0[w0], xv[1] = x0[w0 + 1], xv[2] = x0[w0 + 2];
        xv[3] = x1[w0], xv[4] = x1[w0 + 1], xv[5] = x1[w0 + 2];
        xv[6] = x2[w0], xv[7] = x2[w0 + 1], xv[8] = x2[w0 + 2];
      } else {
        Taps(xn, h0, rows_inside, q, xv);
      }
      const F16 d = Load(yr + q * g.m);
      b += d;
      s0 += xv[0] * d, s1 += xv[1] * d, s2 += xv[2] * d;
      s3 += xv[3] * d, s4 += xv[4] * d, s5 += xv[5] * d;
      s6 += xv[6] * d, s7 += xv[7] * d, s8 += xv[8] * d;
      if constexpr (NB == 2) {
        const F16 e = Load(yr + q * g.m + 16);
        c += e;
        t0 += xv[0] * e, t1 += xv[1] * e, t2 += xv[2] * e;
        t3 += xv[3] * e, t4 += xv[4] * e, t5 += xv[5] * e;
        t6 += xv[6] * e, t7 += xv[7] * e, t8 += xv[8] * e;
      }
    }
    const F16 sums[10] = {s0, s1, s2, s3, s4, s5, s6, s7, s8, b};
    for (int k = 0; k < 10; ++k) AddTo(acc + k * g.m + ob, sums[k]);
    if constexpr (NB == 2) {
      const F16 more[10] = {t0, t1, t2, t3, t4, t5, t6, t7, t8, c};
      for (int k = 0; k < 10; ++k) AddTo(acc + k * g.m + ob + 16, more[k]);
    }
  }

  Geometry g_;
  Shape w_;
  std::vector<int64_t> xoff_;  // per tap: its X offset from the window's corner
  int64_t tasks_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastFirstLayerConvBackwardFilter(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(const ChannelsLastConvGrad r, ReadChannelsLastConvGrad(init, Decline));
  const Shape &x = r.x, &y = r.dy, &w = r.w;
  const int64_t group = init.node.GetInt("group", 1);
  if (x[3] != 1 || w[1] != 1 || group != 1)
    return Decline(StrCat("not a convolution of one input channel (X has ", x[3], ", group ", group, ")"));
  if (w[0] % 16 != 0) return Decline(StrCat("output channels must be a multiple of 16, found ", w[0]));
  if (w[2] != 3 || w[3] != 3) return Decline(StrCat("3x3 kernels only, found ", w[2], "x", w[3]));
  const nn::Geometry3& f = r.f;
  Geometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.m = w[0];
  g.kh = w[2], g.kw = w[3], g.sh = f.stride[1], g.sw = f.stride[2], g.dh = f.dilation[1], g.dw = f.dilation[2];
  g.pt = f.pad_begin[1], g.pl = f.pad_begin[2];
  g.oh = y[1], g.ow = y[2];
  return std::unique_ptr<Kernel>(std::make_unique<FirstLayerBackwardFilterNhwc>(g, w));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
