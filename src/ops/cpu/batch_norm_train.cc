// Batch normalization in training mode on channels-first float32 tensors (X [N, C, D1..Dn], statistics per channel):
// BatchNormalization with the batch statistics (opset >= 14: training_mode=1; opset 9-13: the running outputs
// requested) and strata.BatchNormalizationGrad with training_mode=1. The training graphs' batch norm ran the scalar
// reference kernel forward and oneDNN 2.6's `ncsp_bnorm` (not vectorised, a forward-training pass writing a full
// temporary, then the backward pass) for the gradient; these read X (and dY) in contiguous rows of D1*..*Dn values
// per (n, c), vectorised by the compiler (16 independent float lanes; the AVX-512 variant, isa.h), channels split
// across threads.
//
// Statistics: one pass accumulating x - s and (x - s)^2 (s: the channel's first value, so that a large mean does not
// cancel), per row in float lanes and across rows in double; mean = s + S1/M, var = S2/M - (S1/M)^2 (population
// variance, clamped at 0). The reference's two passes accumulate in float; both agree to float rounding.
// Forward: y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a (the reference's formula); the running
// outputs are input * momentum + batch * (1 - momentum). Backward, in one pass over X and dY for the four sums and
// one for dX: dB = sum(dY), dScale = istd * sum(dY (x - mean)), dX = a dY - a (dB + xhat dScale) / M written as
// k1 dY + k2 x + k3 per channel.
// Channels-last, under mixed_bfloat16 (Plan::StoreBf16, ops/bf16_output.h): X may be bfloat16 (a bfloat16
// convolution's output), widened as it is read, and the forward's Y and the gradient's dX may be written in bfloat16
// (rounded to nearest even) where every reader takes them so; the arithmetic stays float32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/bf16_output.h"
#include "ops/cpu/bf16.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

constexpr int kLanes = 16;

Status Decline(std::string_view op, std::string_view why) { return UnimplementedError("cpu ", op, ": ", why); }

// Sums over the channel: S1 = sum(x - s), S2 = sum((x - s)^2), and with dy, Sd = sum(dy), Sdx = sum(dy (x - s)).
struct Sums {
  double s1 = 0, s2 = 0, sd = 0, sdx = 0;
};

void AddRowMoments(const float* x, int64_t n, float s, Sums* out) {
  float a1[kLanes] = {}, a2[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - s;
      a1[j] += d;
      a2[j] += d * d;
    }
  double t1 = 0, t2 = 0;
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - s;
    t1 += d;
    t2 += d * d;
  }
  for (int j = 0; j < kLanes; ++j) {
    t1 += a1[j];
    t2 += a2[j];
  }
  out->s1 += t1;
  out->s2 += t2;
}

void AddRowMomentsWithGrad(const float* x, const float* dy, int64_t n, float s, Sums* out) {
  float a1[kLanes] = {}, a2[kLanes] = {}, ad[kLanes] = {}, adx[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - s, g = dy[i + j];
      a1[j] += d;
      a2[j] += d * d;
      ad[j] += g;
      adx[j] += g * d;
    }
  double t1 = 0, t2 = 0, td = 0, tdx = 0;
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - s, g = dy[i];
    t1 += d;
    t2 += d * d;
    td += g;
    tdx += g * d;
  }
  for (int j = 0; j < kLanes; ++j) {
    t1 += a1[j];
    t2 += a2[j];
    td += ad[j];
    tdx += adx[j];
  }
  out->s1 += t1;
  out->s2 += t2;
  out->sd += td;
  out->sdx += tdx;
}

// The geometry both kernels share: X [N, C, inner...] float32 with every dimension known, N * inner > 0.
struct Geometry {
  Shape x;
  int64_t n = 0, c = 0, inner = 0;
  int64_t count() const { return n * inner; }
  // Channels per ParallelFor chunk: about 32k values of X each.
  int64_t grain() const { return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, count())); }
};

StatusOr<Geometry> ReadGeometry(std::string_view op, const ValueType& x) {
  if (x.dtype != DType::kFloat32) return Decline(op, "X is not float32");
  if (!x.shape.rank_known || !x.shape.IsFullyKnown()) return Decline(op, "X's shape is not known at plan time");
  Geometry g;
  g.x = x.shape.ToShape();
  if (g.x.rank() < 2) return Decline(op, "X has rank below 2");
  g.n = g.x[0];
  g.c = g.x[1];
  g.inner = g.x.Product(2, g.x.rank());
  if (g.count() == 0 || g.c == 0) return Decline(op, "X is empty");
  return g;
}

Status RequireChannelVector(std::string_view op, const ValueType& v, int64_t c, std::string_view what) {
  if (v.dtype != DType::kFloat32) return Decline(op, std::string(what) + " is not float32");
  if (!v.shape.IsFullyKnown() || v.shape.ToShape() != Shape{c})
    return Decline(op, std::string(what) + " is not one float32 value per channel");
  return Status::OK();
}

// Run-time checks of both layouts' kernels against the plan: X (and dY) of the planned shape, the per-channel inputs
// (forward: scale, B, input mean and variance; gradient: scale) C float32 values.
// X is float32, or bfloat16 where the plan stores it so (`xt`).
Status CheckForwardInputs(KernelContext& ctx, const Shape& xs, int64_t c, DType xt = DType::kFloat32) {
  const Tensor& x = ctx.input(0);
  if (x.shape() != xs || x.dtype() != xt)
    return ctx.Error("X is ", x.TypeString(), ", the plan was made for ", DTypeName(xt), xs.ToString());
  for (int i = 1; i < 5; ++i)
    if (ctx.input(i).dtype() != DType::kFloat32 || ctx.input(i).num_elements() != c)
      return ctx.Error("input ", i, " is ", ctx.input(i).TypeString(), ", the plan was made for float32[", c, "]");
  return Status::OK();
}

Status CheckGradInputs(KernelContext& ctx, const Shape& xs, int64_t c, DType xt = DType::kFloat32,
                       DType dyt = DType::kFloat32) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& sc = ctx.input(2);
  if (x.shape() != xs || x.dtype() != xt || dy.shape() != xs || dy.dtype() != dyt || sc.dtype() != DType::kFloat32 ||
      sc.num_elements() != c)
    return ctx.Error("dY ", dy.TypeString(), ", X ", x.TypeString(), ", scale ", sc.TypeString(),
                     "; the plan was made for ", DTypeName(dyt), xs.ToString(), ", ", DTypeName(xt), xs.ToString(),
                     " and float32[", c, "]");
  return Status::OK();
}

// A channel's batch mean and (population) variance from its shifted sums over m values.
void ChannelMoments(double s1, double s2, float shift, double m, float* mean, float* var) {
  const double d = s1 / m;
  *mean = static_cast<float>(shift + d);
  *var = static_cast<float>(std::max(0.0, s2 / m - d * d));
}

// A channel's gradient from its shifted sums over m values: dScale, dB and dX = k1 dY + k2 x + k3.
struct ChannelGrad {
  float dscale, dbias, k1, k2, k3;
};
ChannelGrad ChannelGradient(const Sums& sums, float shift, double m, float scale, float eps) {
  const double d = sums.s1 / m;
  const double mean = shift + d;
  // Variance as the forward computed it (rounded to float), so that istd matches the forward's.
  const float var = static_cast<float>(std::max(0.0, sums.s2 / m - d * d));
  const double istd = 1.0 / std::sqrt(static_cast<double>(var + eps));
  const double db = sums.sd;                           // sum(dY)
  const double dsc = (sums.sdx - d * sums.sd) * istd;  // sum(dY (x - mean)) * istd
  const double a = scale * istd;
  return {static_cast<float>(dsc), static_cast<float>(db), static_cast<float>(a),
          static_cast<float>(-a * istd * dsc / m), static_cast<float>(-a * db / m + a * istd * dsc * mean / m)};
}

// Outputs 1 and 2 where wanted: the forward's running mean and variance (input * momentum + batch * (1 -
// momentum), from inputs 3 and 4), or the gradient's dScale and dB (shaped as the scale, input 2).
Status WriteRunningStats(KernelContext& ctx, const std::vector<float>& mean, const std::vector<float>& var,
                         float momentum) {
  for (int out = 1; out <= 2; ++out) {
    if (!ctx.output_wanted(out)) continue;
    const Tensor& prev = ctx.input(out + 2);
    STRATA_ASSIGN_OR_RETURN(Tensor * r, ctx.Output(out, DType::kFloat32, prev.shape()));
    const float* pp = prev.data<float>();
    const std::vector<float>& batch = out == 1 ? mean : var;
    float* pr = r->data<float>();
    for (size_t ch = 0; ch < batch.size(); ++ch) pr[ch] = pp[ch] * momentum + batch[ch] * (1.0f - momentum);
  }
  return Status::OK();
}

Status WriteParameterGrads(KernelContext& ctx, const std::vector<float>& dscale, const std::vector<float>& dbias) {
  for (int j = 1; j <= 2; ++j) {
    if (!ctx.output_wanted(j)) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(j, DType::kFloat32, ctx.input(2).shape()));
    std::copy_n((j == 1 ? dscale : dbias).data(), dscale.size(), t->data<float>());
  }
  return Status::OK();
}

class BatchNormTraining final : public Kernel {
 public:
  BatchNormTraining(Geometry g, float eps, float momentum) : g_(std::move(g)), eps_(eps), momentum_(momentum) {}
  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    STRATA_RETURN_IF_ERROR(CheckForwardInputs(ctx, g_.x, g_.c));
    const float* px = ctx.input(0).data<float>();
    const float* scale = ctx.input(1).data<float>();
    const float* bias = ctx.input(2).data<float>();
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kFloat32, g_.x));
    float* py = y->data<float>();
    std::vector<float> mean(g_.c), var(g_.c);
    const int64_t n = g_.n, c = g_.c, inner = g_.inner;
    const double m = static_cast<double>(g_.count());
    ParallelFor(c, g_.grain(), [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        const float s = px[ch * inner];
        Sums sums;
        for (int64_t b = 0; b < n; ++b) AddRowMoments(px + (b * c + ch) * inner, inner, s, &sums);
        ChannelMoments(sums.s1, sums.s2, s, m, &mean[ch], &var[ch]);
        const float a = scale[ch] / std::sqrt(var[ch] + eps_);
        const float sh = bias[ch] - mean[ch] * a;
        for (int64_t b = 0; b < n; ++b) {
          const float* src = px + (b * c + ch) * inner;
          float* dst = py + (b * c + ch) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] = src[i] * a + sh;
        }
      }
    });
    return WriteRunningStats(ctx, mean, var, momentum_);
  }

 private:
  Geometry g_;
  float eps_, momentum_;
};

class BatchNormTrainingGrad final : public Kernel {
 public:
  BatchNormTrainingGrad(Geometry g, float eps) : g_(std::move(g)), eps_(eps) {}
  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    STRATA_RETURN_IF_ERROR(CheckGradInputs(ctx, g_.x, g_.c));
    const float* pdy = ctx.input(0).data<float>();
    const float* px = ctx.input(1).data<float>();
    const float* scale = ctx.input(2).data<float>();
    STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, DType::kFloat32, g_.x));
    float* pdx = dx->data<float>();
    std::vector<float> dscale(g_.c), dbias(g_.c);
    const int64_t n = g_.n, c = g_.c, inner = g_.inner;
    const double m = static_cast<double>(g_.count());
    ParallelFor(c, g_.grain(), [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        const float s = px[ch * inner];
        Sums sums;
        for (int64_t b = 0; b < n; ++b)
          AddRowMomentsWithGrad(px + (b * c + ch) * inner, pdy + (b * c + ch) * inner, inner, s, &sums);
        const ChannelGrad k = ChannelGradient(sums, s, m, scale[ch], eps_);
        dbias[ch] = k.dbias;
        dscale[ch] = k.dscale;
        for (int64_t b = 0; b < n; ++b) {
          const int64_t off = (b * c + ch) * inner;
          const float* xr = px + off;
          const float* gr = pdy + off;
          float* out = pdx + off;
          for (int64_t i = 0; i < inner; ++i) out[i] = k.k1 * gr[i] + k.k2 * xr[i] + k.k3;
        }
      }
    });
    return WriteParameterGrads(ctx, dscale, dbias);
  }

 private:
  Geometry g_;
  float eps_;
};

// Channels-last (strata.ChannelsLast wrapping the ops above; X, dY and dX [N, H, W, C]): rows of C values. The sums
// run over blocks of rows in parallel, per channel in float lanes along C within a block and in double across blocks;
// the elementwise passes split the rows across threads.
struct RowBlocks {
  int64_t rows = 0, blocks = 0, per_block = 0;
  explicit RowBlocks(int64_t r) : rows(r) {
    blocks = std::min<int64_t>(64, std::max<int64_t>(1, r / 16));
    per_block = (r + blocks - 1) / blocks;
    blocks = (r + per_block - 1) / per_block;
  }
};

// Per channel, over every row: S1, S2 (and with dy: Sd, Sdx), shifted by the first row's values.
// dY float32, or bfloat16 (a bfloat16 gradient under mixed_bfloat16, Plan::StoreBf16).
template <typename In, typename G = float>
void ChannelSumsNhwc(const In* x, const G* dy, int64_t rows, int64_t c, std::vector<double>* out) {
  const RowBlocks rb(rows);
  const int k = dy == nullptr ? 2 : 4;
  std::vector<double> partial(static_cast<size_t>(rb.blocks * k * c));
  ParallelFor(rb.blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(k * c));
    for (int64_t blk = begin; blk < end; ++blk) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      float* a1 = acc.data();
      float* a2 = a1 + c;
      float* ad = a2 + c;
      float* adx = dy == nullptr ? nullptr : ad + c;
      const int64_t r0 = blk * rb.per_block, r1 = std::min(rows, r0 + rb.per_block);
      for (int64_t r = r0; r < r1; ++r) {
        const In* xr = x + r * c;
        if (dy == nullptr) {
#pragma omp simd
          for (int64_t j = 0; j < c; ++j) {
            const float d = LoadF(xr, j) - LoadF(x, j);
            a1[j] += d;
            a2[j] += d * d;
          }
        } else {
          const G* gr = dy + r * c;
#pragma omp simd
          for (int64_t j = 0; j < c; ++j) {
            const float d = LoadF(xr, j) - LoadF(x, j), g = LoadF(gr, j);
            a1[j] += d;
            a2[j] += d * d;
            ad[j] += g;
            adx[j] += g * d;
          }
        }
      }
      std::copy(acc.begin(), acc.end(), partial.begin() + blk * k * c);
    }
  });
  out->assign(static_cast<size_t>(k * c), 0.0);
  for (int64_t blk = 0; blk < rb.blocks; ++blk)
    for (int64_t j = 0; j < k * c; ++j) (*out)[j] += partial[blk * k * c + j];
}

// y[r, j] = x[r, j] * a[j] + b[j] (and + k2[j] * x2[r, j] when x2 is given), rows split across threads.
// float32 stored as float32, or rounded to bfloat16 (nearest even, as oneDNN's f32 -> bf16 reorder; StoreF,
// cpu/bf16.h).

// x and x2 float32 or bfloat16 (In, In2), y float32 or bfloat16 (Out).
template <typename In, typename In2, typename Out>
void AffineRowsNhwc(const In* x, const In2* x2, const float* a, const float* b, const float* k2, Out* y, int64_t rows,
                    int64_t c) {
  ParallelFor(rows, std::max<int64_t>(1, 16384 / c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const In* xr = x + r * c;
      Out* yr = y + r * c;
      if (x2 == nullptr) {
#pragma omp simd
        for (int64_t j = 0; j < c; ++j) StoreF(yr, j, LoadF(xr, j) * a[j] + b[j]);
      } else {
        const In2* zr = x2 + r * c;
#pragma omp simd
        for (int64_t j = 0; j < c; ++j) StoreF(yr, j, LoadF(xr, j) * a[j] + LoadF(zr, j) * k2[j] + b[j]);
      }
    }
  });
}

// The tensor's data as float32 or bfloat16 (uint16_t), by `bf16`; `f(ptr)` is called with the one it is.
template <typename F>
void WithFloatOrBf16(const Tensor& t, bool bf16, F&& f) {
  if (bf16) {
    f(static_cast<const uint16_t*>(t.raw_data()));
  } else {
    f(t.data<float>());
  }
}

// X float32, or bfloat16 where the plan stores it so (the output of a bfloat16 convolution: Bf16InputKernel); Y
// float32, or bfloat16 where every reader takes it so (Bf16OutputKernel). The statistics and y = x * a + b are
// float32 either way.
class BatchNormTrainingNhwc final : public Kernel, public Bf16InputKernel, public Bf16OutputKernel {
 public:
  BatchNormTrainingNhwc(Shape x, float eps, float momentum, bool bf16_x, bool bf16_y)
      : x_(std::move(x)), eps_(eps), momentum_(momentum), bf16_x_(bf16_x), bf16_y_(bf16_y) {}
  std::string_view name() const override { return "cpu"; }
  bool reads_bf16(int input) const override { return input == 0; }

  Status Run(KernelContext& ctx) const override {
    const int64_t c = x_[3], rows = x_[0] * x_[1] * x_[2];
    STRATA_RETURN_IF_ERROR(CheckForwardInputs(ctx, x_, c, bf16_x_ ? DType::kBFloat16 : DType::kFloat32));
    const float* scale = ctx.input(1).data<float>();
    const float* bias = ctx.input(2).data<float>();
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, bf16_y_ ? DType::kBFloat16 : DType::kFloat32, x_));
    std::vector<float> mean(c), var(c);
    WithFloatOrBf16(ctx.input(0), bf16_x_, [&](const auto* px) {
      std::vector<double> sums;
      ChannelSumsNhwc(px, static_cast<const float*>(nullptr), rows, c, &sums);
      std::vector<float> a(c), b(c);
      const double m = static_cast<double>(rows);
      for (int64_t j = 0; j < c; ++j) {
        ChannelMoments(sums[j], sums[c + j], LoadF(px, j), m, &mean[j], &var[j]);
        a[j] = scale[j] / std::sqrt(var[j] + eps_);
        b[j] = bias[j] - mean[j] * a[j];
      }
      constexpr const float* kNone = nullptr;
      if (bf16_y_) {
        AffineRowsNhwc(px, kNone, a.data(), b.data(), nullptr, static_cast<uint16_t*>(y->raw_data()), rows, c);
      } else {
        AffineRowsNhwc(px, kNone, a.data(), b.data(), nullptr, y->data<float>(), rows, c);
      }
    });
    return WriteRunningStats(ctx, mean, var, momentum_);
  }

 private:
  Shape x_;
  float eps_, momentum_;
  bool bf16_x_, bf16_y_;
};

// dX in float32, or in bfloat16 when the plan stores it so (its readers, the bfloat16 backward convolutions, round
// their dY to bfloat16 anyway: ops/bf16_output.h).
// X (input 1) float32, or bfloat16 where the plan stores it so (Bf16InputKernel), as for the forward; dY (input 0)
// likewise (a bfloat16 gradient under mixed_bfloat16: the output of ReluGrad or of a bfloat16 backward convolution),
// widened exactly as it is read: the sums and dX are computed in float32 either way.
class BatchNormTrainingGradNhwc final : public Kernel, public Bf16InputKernel, public Bf16OutputKernel {
 public:
  BatchNormTrainingGradNhwc(Shape x, float eps, bool bf16_dy, bool bf16_x, bool bf16_dx)
      : x_(std::move(x)), eps_(eps), bf16_dy_(bf16_dy), bf16_x_(bf16_x), bf16_dx_(bf16_dx) {}
  std::string_view name() const override { return "cpu"; }
  bool reads_bf16(int input) const override { return input == 0 || input == 1; }

  Status Run(KernelContext& ctx) const override {
    const int64_t c = x_[3], rows = x_[0] * x_[1] * x_[2];
    STRATA_RETURN_IF_ERROR(CheckGradInputs(ctx, x_, c, bf16_x_ ? DType::kBFloat16 : DType::kFloat32,
                                           bf16_dy_ ? DType::kBFloat16 : DType::kFloat32));
    const float* scale = ctx.input(2).data<float>();
    std::vector<float> dscale(c), dbias(c);
    STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, bf16_dx_ ? DType::kBFloat16 : DType::kFloat32, x_));
    WithFloatOrBf16(ctx.input(0), bf16_dy_, [&](const auto* pdy) {
      WithFloatOrBf16(ctx.input(1), bf16_x_, [&](const auto* px) {
        std::vector<double> sums;
        ChannelSumsNhwc(px, pdy, rows, c, &sums);
        std::vector<float> k1(c), k2(c), k3(c);
        const double m = static_cast<double>(rows);
        for (int64_t j = 0; j < c; ++j) {
          const Sums sj{sums[j], sums[c + j], sums[2 * c + j], sums[3 * c + j]};
          const ChannelGrad k = ChannelGradient(sj, LoadF(px, j), m, scale[j], eps_);
          dbias[j] = k.dbias;
          dscale[j] = k.dscale;
          k1[j] = k.k1;
          k2[j] = k.k2;
          k3[j] = k.k3;
        }
        if (bf16_dx_) {
          AffineRowsNhwc(pdy, px, k1.data(), k3.data(), k2.data(), static_cast<uint16_t*>(dx->raw_data()), rows, c);
        } else {
          AffineRowsNhwc(pdy, px, k1.data(), k3.data(), k2.data(), dx->data<float>(), rows, c);
        }
      });
    });
    return WriteParameterGrads(ctx, dscale, dbias);
  }

 private:
  Shape x_;
  float eps_;
  bool bf16_dy_, bf16_x_, bf16_dx_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTraining(const KernelInit& init) {
  constexpr std::string_view op = "BatchNormalization";
  const Node& node = init.node;
  if (!node.domain.empty() || node.op_type != op) return Decline(op, "not BatchNormalization");
  if (node.opset < 9) return Decline(op, "opset below 9 (spatial, is_test)");
  const bool training =
      node.opset >= 14 ? node.GetInt("training_mode", 0) == 1 : node.has_output(1) || node.has_output(2);
  if (!training) return Decline(op, "inference mode (the oneDNN kernel's)");
  if (node.has_output(3) || node.has_output(4)) return Decline(op, "saved mean/var outputs");
  if (init.inputs.size() != 5) return Decline(op, "needs X, scale, B, mean, var");
  STRATA_ASSIGN_OR_RETURN(Geometry g, ReadGeometry(op, init.inputs[0]));
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) STRATA_RETURN_IF_ERROR(RequireChannelVector(op, init.inputs[i], g.c, kNames[i]));
  const float eps = node.GetFloat("epsilon", 1e-5f);
  if (!(eps >= 0)) return Decline(op, "epsilon below 0 (the reference reports it)");
  return std::unique_ptr<Kernel>(
      std::make_unique<BatchNormTraining>(std::move(g), eps, node.GetFloat("momentum", 0.9f)));
}

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTrainingGrad(const KernelInit& init) {
  constexpr std::string_view op = "BatchNormalizationGrad";
  const Node& node = init.node;
  if (node.domain != "strata" || node.op_type != op) return Decline(op, "not strata.BatchNormalizationGrad");
  if (node.GetInt("training_mode", 0) == 0) return Decline(op, "inference mode (the oneDNN kernel's)");
  if (node.GetInt("spatial", 1) != 1) return Decline(op, "spatial = 0");
  if (init.inputs.size() < 3) return Decline(op, "needs dY, X, scale");
  STRATA_ASSIGN_OR_RETURN(Geometry g, ReadGeometry(op, init.inputs[1]));
  const ValueType& dy = init.inputs[0];
  if (dy.dtype != DType::kFloat32 || !dy.shape.IsFullyKnown() || dy.shape.ToShape() != g.x)
    return Decline(op, "dY is not float32 of X's shape");
  STRATA_RETURN_IF_ERROR(RequireChannelVector(op, init.inputs[2], g.c, "scale"));
  return std::unique_ptr<Kernel>(
      std::make_unique<BatchNormTrainingGrad>(std::move(g), node.GetFloat("epsilon", 1e-5f)));
}

// The wrapped node of a strata.ChannelsLast with X (and dY) [N, H, W, C]: the NCHW geometry the factories above
// check, then the channels-last kernel.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTraining(const KernelInit& init) {
  constexpr std::string_view op = "ChannelsLast BatchNormalization";
  const Node& node = init.node;
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0} || node.GetInt("nhwc_output", 1) != 1)
    return Decline(op, "needs X and Y channels-last, nothing else");
  if (init.inputs.empty() || !init.inputs[0].shape.rank_known || init.inputs[0].shape.rank() != 4)
    return Decline(op, "X is not 4-D");
  Node wrapped = node;
  wrapped.op_type = "BatchNormalization";
  wrapped.domain.clear();
  std::vector<ValueType> ins(init.inputs.begin(), init.inputs.end());
  const PartialShape& t = ins[0].shape;
  ins[0].shape = PartialShape::Of({t.dims[0], t.dims[3], t.dims[1], t.dims[2]});
  // X and Y: float32, or bfloat16 where the plan stores them so (ops/bf16_output.h); the checks below see float32.
  const bool bf16_x = TakeBf16AsFloat32(ins[0]);
  std::vector<ValueType> outs(init.outputs.begin(), init.outputs.end());
  const bool bf16_y = !outs.empty() && TakeBf16AsFloat32(outs[0]);
  for (const ValueType& o : outs)
    if (o.dtype != DType::kUndefined && o.dtype != DType::kFloat32)
      return Decline(op, "an output is neither float32 nor a bfloat16 Y");
  STRATA_RETURN_IF_ERROR(CreateBatchNormTraining(KernelInit{wrapped, ins, outs}).status());
  return std::unique_ptr<Kernel>(
      std::make_unique<BatchNormTrainingNhwc>(init.inputs[0].shape.ToShape(), node.GetFloat("epsilon", 1e-5f),
                                              node.GetFloat("momentum", 0.9f), bf16_x, bf16_y));
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTrainingGrad(const KernelInit& init) {
  constexpr std::string_view op = "ChannelsLast BatchNormalizationGrad";
  const Node& node = init.node;
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0, 1} || node.GetInt("nhwc_output", 1) != 1)
    return Decline(op, "needs dY, X and dX channels-last, nothing else");
  if (init.inputs.size() < 3 || !init.inputs[1].shape.rank_known || init.inputs[1].shape.rank() != 4)
    return Decline(op, "X is not 4-D");
  Node wrapped = node;
  wrapped.op_type = "BatchNormalizationGrad";
  wrapped.domain = "strata";
  std::vector<ValueType> ins(init.inputs.begin(), init.inputs.end());
  for (int i : {0, 1}) {
    const PartialShape t = ins[i].shape;
    if (t.rank_known && t.rank() == 4) ins[i].shape = PartialShape::Of({t.dims[0], t.dims[3], t.dims[1], t.dims[2]});
  }
  // dY and X: float32, or bfloat16 where the plan stores them so (ops/bf16_output.h); the checks below see float32.
  const bool bf16_dy = TakeBf16AsFloat32(ins[0]);
  const bool bf16_x = TakeBf16AsFloat32(ins[1]);
  // dX: float32, or bfloat16 where the plan stores it so (ops/bf16_output.h); the checks below see float32.
  std::vector<ValueType> outs(init.outputs.begin(), init.outputs.end());
  const bool bf16_dx = !outs.empty() && TakeBf16AsFloat32(outs[0]);
  for (const ValueType& o : outs)
    if (o.dtype != DType::kUndefined && o.dtype != DType::kFloat32)
      return Decline(op, "an output is neither float32 nor a bfloat16 dX");
  STRATA_RETURN_IF_ERROR(CreateBatchNormTrainingGrad(KernelInit{wrapped, ins, outs}).status());
  return std::unique_ptr<Kernel>(std::make_unique<BatchNormTrainingGradNhwc>(
      init.inputs[1].shape.ToShape(), node.GetFloat("epsilon", 1e-5f), bf16_dy, bf16_x, bf16_dx));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
