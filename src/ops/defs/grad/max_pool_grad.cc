// strata.MaxPoolGrad(dY, X) -> dX, with MaxPool's attributes (kernel_shape, strides, pads, auto_pad, dilations,
// ceil_mode): the gradient of MaxPool. Each output's gradient is added to the first maximum of its window (the
// element MaxPool picked; NaN never wins), so overlapping windows accumulate. float32/float64, 1-3 spatial dims,
// parallel over (n, c) planes. With relu_input=1, X is a Relu output and the result is also Relu's gradient
// (ReluGrad(MaxPoolGrad(dY, X), X)): windows whose maximum is not positive pass nothing. The trainer fuses that pair.
#include <limits>

#include "core/parallel.h"
#include "ops/defs/nn/spatial.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kPoolOptions{
    .kernel_from_attr = true, .allow_dilations = true, .allow_ceil_mode = true, .pads_below_kernel = true};

Status MaxPoolGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(1), ctx.input_shape(1));
  return Status::OK();
}

// Whether v replaces the current maximum m: larger, or m is NaN and v is not (the first maximum wins ties).
template <typename T>
inline bool Takes(T v, T m) {
  return (v > m) | ((m != m) & (v == v));
}

// 2-D windows without dilation (the common case): direct bounds, no tap bookkeeping.
template <typename T>
void Plane2D(const T* x, const T* dy, T* dx, const nn::Geometry3& g, bool relu) {
  const int64_t H = g.in[1], W = g.in[2];
  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
    const int64_t hs = oh * g.stride[1] - g.pad_begin[1];
    const int64_t h0 = std::max<int64_t>(hs, 0), h1 = std::min<int64_t>(hs + g.kernel[1], H);
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      const int64_t ws = ow * g.stride[2] - g.pad_begin[2];
      const int64_t w0 = std::max<int64_t>(ws, 0), w1 = std::min<int64_t>(ws + g.kernel[2], W);
      if (h0 >= h1 || w0 >= w1) continue;
      // Branchless argmax (random data makes the comparisons unpredictable): the first maximum, NaN never wins.
      int64_t best = h0 * W + w0;
      T best_v = x[best];
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) {
          const T v = x[h * W + w];
          const bool take = Takes(v, best_v);
          best = take ? h * W + w : best;
          best_v = take ? v : best_v;
        }
      if (!relu || best_v > T(0)) dx[best] += dy[oh * g.out[2] + ow];
    }
  }
}

// 2x2 windows, stride 2, no padding (the usual pool): disjoint windows, four taps unrolled.
template <typename T>
void Plane2x2(const T* x, const T* dy, T* dx, const nn::Geometry3& g, bool relu) {
  const int64_t W = g.in[2];
  for (int64_t oh = 0; oh < g.out[1]; ++oh)
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      const int64_t i = 2 * oh * W + 2 * ow;
      int64_t best = i;
      T m = x[i];
      const int64_t taps[3] = {i + 1, i + W, i + W + 1};
      for (int64_t t : taps) {
        const T v = x[t];
        const bool take = Takes(v, m);
        best = take ? t : best;
        m = take ? v : m;
      }
      if (!relu || m > T(0)) dx[best] += dy[oh * g.out[2] + ow];
    }
}

template <typename T>
void Plane(const T* x, const T* dy, T* dx, const nn::Geometry3& g, bool relu) {
  std::fill(dx, dx + g.in_size(), T(0));
  if (g.in[0] == 1 && g.out[0] == 1 && g.kernel[1] == 2 && g.kernel[2] == 2 && g.stride[1] == 2 && g.stride[2] == 2 &&
      g.dilation[1] == 1 && g.dilation[2] == 1 && g.pad_begin[1] == 0 && g.pad_begin[2] == 0 &&
      2 * g.out[1] <= g.in[1] && 2 * g.out[2] <= g.in[2]) {
    Plane2x2(x, dy, dx, g, relu);
    return;
  }
  if (g.in[0] == 1 && g.out[0] == 1 && g.kernel[0] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1) {
    Plane2D(x, dy, dx, g, relu);
    return;
  }
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
        const int64_t s0 = o0 * g.stride[0] - g.pad_begin[0], s1 = o1 * g.stride[1] - g.pad_begin[1],
                      s2 = o2 * g.stride[2] - g.pad_begin[2];
        int64_t lo0, hi0, lo1, hi1, lo2, hi2;
        nn::ValidTaps(s0, g.kernel[0], g.dilation[0], g.in[0], &lo0, &hi0);
        nn::ValidTaps(s1, g.kernel[1], g.dilation[1], g.in[1], &lo1, &hi1);
        nn::ValidTaps(s2, g.kernel[2], g.dilation[2], g.in[2], &lo2, &hi2);
        int64_t best = -1;
        T best_v = T(0);
        for (int64_t k0 = lo0; k0 < hi0; ++k0)
          for (int64_t k1 = lo1; k1 < hi1; ++k1)
            for (int64_t k2 = lo2; k2 < hi2; ++k2) {
              const int64_t i = ((s0 + k0 * g.dilation[0]) * g.in[1] + (s1 + k1 * g.dilation[1])) * g.in[2] +
                                (s2 + k2 * g.dilation[2]);
              const T v = x[i];
              if (best < 0 || v > best_v || (best_v != best_v && v == v)) best = i, best_v = v;
            }
        if (best >= 0 && (!relu || best_v > T(0))) dx[best] += dy[(o0 * g.out[1] + o1) * g.out[2] + o2];
      }
}

Status MaxPoolGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::PoolGeometry(ctx.node(), x, kPoolOptions, &out_shape));
  if (dy.shape() != out_shape || dy.dtype() != x.dtype())
    return ctx.Error("dY must be ", DTypeName(x.dtype()), out_shape.ToString(), " (MaxPool's output), got ",
                     dy.TypeString());
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t planes = x.dim(0) * x.dim(1);
  const bool relu = ctx.node().GetInt("relu_input", 0) != 0;
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* px = x.data<T>();
      const T* pdy = dy.data<T>();
      T* pdx = dx->data<T>();
      ParallelFor(planes, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          Plane<T>(px + p * g.in_size(), pdy + p * g.out_size(), pdx + p * g.in_size(), g, relu);
      });
      return Status::OK();
    }
    return ctx.Error("MaxPoolGrad supports float32 and float64, got ", DTypeName(x.dtype()));
  });
}

}  // namespace

void RegisterMaxPoolGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "MaxPoolGrad";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = MaxPoolGradInfer;
  s.reference = MaxPoolGradCompute;
  s.no_grad_reason = "second derivatives are not needed for training";
  r->Add(std::move(s));
}

}  // namespace strata::ops
