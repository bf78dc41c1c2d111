// GridSample (opset 16): samples X (N, C, H, W) at the normalized (x, y) positions of grid (N, H_out, W_out, 2), -1
// and 1 being the edges of the image (align_corners = 0: the outer edges of the corner pixels; 1: their centers).
//   mode: bilinear (default), nearest (round half to even), bicubic (cubic convolution, A = -0.75, on 4x4 pixels).
//   padding_mode: zeros (outside pixels are 0), border (coordinates clamped), reflection (coordinates reflected at
//   the edges). As PyTorch's grid_sample (the model exporters' source), bilinear and nearest pad the sample position
//   and bicubic pads each of its 16 pixel positions.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

enum class Mode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridAttrs {
  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

StatusOr<GridAttrs> ReadGridAttrs(const Node& node) {
  GridAttrs a;
  const std::string mode = node.GetString("mode", "bilinear");
  if (mode == "nearest") a.mode = Mode::kNearest;
  else if (mode == "bicubic") a.mode = Mode::kBicubic;
  else if (mode != "bilinear")
    return InvalidArgumentError(node.Describe(), ": mode must be bilinear, nearest or bicubic, got '", mode, "'");
  const std::string pad = node.GetString("padding_mode", "zeros");
  if (pad == "border") a.padding = Padding::kBorder;
  else if (pad == "reflection") a.padding = Padding::kReflection;
  else if (pad != "zeros")
    return InvalidArgumentError(node.Describe(), ": padding_mode must be zeros, border or reflection, got '", pad, "'");
  a.align_corners = node.GetInt("align_corners", 0) != 0;
  return a;
}

Status GridSampleInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ReadGridAttrs(ctx.node()).status());
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& g = ctx.input_shape(1);
  if (x.rank_known && x.rank() != 4) return ctx.Error("X must have shape [N, C, H, W], got ", x.ToString());
  if (g.rank_known && (g.rank() != 4 || (g.dims[3].known() && g.dims[3].value != 2)))
    return ctx.Error("grid must have shape [N, H_out, W_out, 2], got ", g.ToString());
  if (!IsFloatingPoint(ctx.input_dtype(0)) && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.Error("X must be a float tensor, got ", DTypeName(ctx.input_dtype(0)));
  ctx.SetOutput(0, ctx.input_dtype(0),
                PartialShape::Of({x.rank_known ? x.dims[0] : (g.rank_known ? g.dims[0] : Dim()),
                                  x.rank_known ? x.dims[1] : Dim(), g.rank_known ? g.dims[1] : Dim(),
                                  g.rank_known ? g.dims[2] : Dim()}));
  return Status::OK();
}

template <typename C>
C Unnormalize(C coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * (size - 1) : ((coord + 1) * size - 1) / 2;
}

// Reflects `v` into [twice_low / 2, twice_high / 2].
template <typename C>
C Reflect(C v, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  const C lo = static_cast<C>(twice_low) / 2, span = static_cast<C>(twice_high - twice_low) / 2;
  v = std::fabs(v - lo);
  const C extra = std::fmod(v, span);
  const C flips = std::floor(v / span);
  return std::fmod(flips, C(2)) == 0 ? extra + lo : span - extra + lo;
}

template <typename C>
C Pad(C v, int64_t size, const GridAttrs& a) {
  if (a.padding == Padding::kZeros) return v;
  if (a.padding == Padding::kReflection)
    v = a.align_corners ? Reflect(v, 0, 2 * (size - 1)) : Reflect(v, -1, 2 * size - 1);
  return std::min(static_cast<C>(size - 1), std::max(v, C(0)));
}

template <typename C>
C Pixel(const C* plane, int64_t h, int64_t w, int64_t y, int64_t x) {
  return y >= 0 && y < h && x >= 0 && x < w ? plane[y * w + x] : C(0);
}

template <typename C>
void CubicCoefficients(C t, C* c) {
  const C A = C(-0.75);
  auto near = [&](C x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto far = [&](C x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  c[0] = far(t + 1);
  c[1] = near(t);
  c[2] = near(1 - t);
  c[3] = far(2 - t);
}

template <typename C>
C SampleAt(const C* plane, int64_t h, int64_t w, C gx, C gy, const GridAttrs& a) {
  C x = Unnormalize(gx, w, a.align_corners), y = Unnormalize(gy, h, a.align_corners);
  // Far outside (or NaN) with zero padding is 0; keeping coordinates small also keeps the integer casts defined.
  constexpr C kFar = C(1e12);
  if (!(std::fabs(x) < kFar) || !(std::fabs(y) < kFar)) {
    if (a.padding == Padding::kZeros || std::isnan(x) || std::isnan(y)) return 0;
    x = std::clamp(x, -kFar, kFar);
    y = std::clamp(y, -kFar, kFar);
  }
  if (a.mode == Mode::kBicubic) {
    const C x0 = std::floor(x), y0 = std::floor(y);
    C cx[4], cy[4];
    CubicCoefficients(x - x0, cx);
    CubicCoefficients(y - y0, cy);
    C out = 0;
    for (int i = 0; i < 4; ++i) {
      C row = 0;
      for (int j = 0; j < 4; ++j) {
        const int64_t px = static_cast<int64_t>(Pad(x0 - 1 + j, w, a));
        const int64_t py = static_cast<int64_t>(Pad(y0 - 1 + i, h, a));
        row += cx[j] * Pixel(plane, h, w, py, px);
      }
      out += cy[i] * row;
    }
    return out;
  }
  x = Pad(x, w, a);
  y = Pad(y, h, a);
  if (a.mode == Mode::kNearest)
    return Pixel(plane, h, w, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  const C x0 = std::floor(x), y0 = std::floor(y), lx = x - x0, ly = y - y0;
  const int64_t ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
  return (1 - ly) * ((1 - lx) * Pixel(plane, h, w, iy, ix) + lx * Pixel(plane, h, w, iy, ix + 1)) +
         ly * ((1 - lx) * Pixel(plane, h, w, iy + 1, ix) + lx * Pixel(plane, h, w, iy + 1, ix + 1));
}

Status GridSampleCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(GridAttrs a, ReadGridAttrs(ctx.node()));
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
    return ctx.Error("X must be [N, C, H, W] and grid [N, H_out, W_out, 2], got ", x.shape().ToString(), " and ",
                     grid.shape().ToString());
  if (!IsFloatingPoint(x.dtype()) || !IsFloatingPoint(grid.dtype()))
    return ctx.Error("X and grid must be float tensors, got ", x.TypeString(), " and ", grid.TypeString());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), ho = grid.dim(1), wo = grid.dim(2);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{n, c, ho, wo}));
  std::vector<double> gv(static_cast<size_t>(grid.num_elements()));
  STRATA_RETURN_IF_ERROR(DispatchFloat(grid.dtype(), [&](auto tag) {
    using G = typename decltype(tag)::type;
    for (size_t i = 0; i < gv.size(); ++i) gv[i] = static_cast<double>(ToCompute(grid.data<G>()[i]));
    return Status::OK();
  }));
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<C> plane(static_cast<size_t>(h * w));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* src = x.data<T>() + (b * c + ch) * h * w;
        for (int64_t i = 0; i < h * w; ++i) plane[i] = static_cast<C>(ToCompute(src[i]));
        T* dst = y->data<T>() + (b * c + ch) * ho * wo;
        const double* g = gv.data() + b * ho * wo * 2;
        for (int64_t i = 0; i < ho * wo; ++i)
          dst[i] = FromCompute<T>(SampleAt<C>(plane.data(), h, w, static_cast<C>(g[2 * i]), static_cast<C>(g[2 * i + 1]), a));
      }
    return Status::OK();
  });
}

}  // namespace

void RegisterGridSample(OpRegistry* r) {
  OpSchema s;
  s.name = "GridSample";
  s.since_version = 16;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = GridSampleInfer;
  s.reference = GridSampleCompute;
  s.no_grad_reason = "gradient not implemented (sampling)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
