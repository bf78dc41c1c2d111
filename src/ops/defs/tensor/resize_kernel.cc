// The sampling kernel behind Resize and Upsample (see resize.h). Semantics follow the ONNX reference implementation
// (onnx/backend/test/case/node/resize.py): each output coordinate is mapped to an input coordinate by the
// coordinate transform, then sampled with 1 (nearest), 2 (linear) or 4 (cubic) taps whose indices are clamped to
// the edge. exclude_outside drops taps outside the input and renormalises; tf_crop_and_resize gives
// extrapolation_value where the coordinate falls outside the input. Linear and cubic are separable: the taps of each
// axis are built once, and every output element sums the products of its axes' taps in double precision (resized
// axes only; an axis whose taps are the identity adds no work). Nearest is a pure index gather and works for every
// element type. Integer outputs of linear/cubic are rounded to nearest and saturated.
// One deliberate difference from the reference script: pytorch_half_pixel with a resized length <= 1 maps to
// coordinate 0, as the spec's formula says (the script uses -0.5; the two agree for nearest and linear sampling).
#include <cmath>
#include <limits>

#include "ops/defs/tensor/resize.h"

namespace strata::ops {
namespace {

// Taps of one axis: for output coordinate o, taps [o * n, (o + 1) * n) of index/weight.
struct AxisTaps {
  int n = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;  // tf_crop_and_resize: the coordinate is outside the input
  bool identity = true;       // every output o reads exactly input o
  bool any_outside = false;
};

double OriginalCoord(const ResizeSpec& s, int d, int64_t x, int64_t in_len) {
  const double scale = s.scales[d];
  const double len = s.resized_len[d];
  const double xd = static_cast<double>(x);
  switch (s.coord) {
    case CoordMode::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case CoordMode::kPytorchHalfPixel:
      return len > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      return x == 0 ? 0.0 : xd * static_cast<double>(in_len - 1) / (len - 1);
    case CoordMode::kAsymmetric:
      return xd / scale;
    case CoordMode::kTfHalfPixelForNn:
      return (xd + 0.5) / scale;
    case CoordMode::kTfCropAndResize: {
      const double a = s.roi_start[d], b = s.roi_end[d], span = static_cast<double>(in_len - 1);
      return len > 1 ? a * span + xd * (b - a) * span / (len - 1) : 0.5 * (a + b) * span;
    }
  }
  return 0;
}

int64_t NearestIndex(NearestMode mode, double x) {
  const double f = std::floor(x);
  if (f == x) return static_cast<int64_t>(f);
  const double r = x - f;
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(r <= 0.5 ? f : f + 1);
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(r < 0.5 ? f : f + 1);
    case NearestMode::kFloor:
      return static_cast<int64_t>(f);
    case NearestMode::kCeil:
      return static_cast<int64_t>(f + 1);
  }
  return 0;
}

void CubicCoeffs(double r, double a, double* c) {
  const double s = 1 - r;
  c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  c[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  c[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

AxisTaps BuildTaps(const ResizeSpec& s, int d, int64_t in_len) {
  AxisTaps t;
  const int64_t out_len = s.out[d];
  t.n = s.mode == ResizeMode::kNearest ? 1 : (s.mode == ResizeMode::kLinear ? 2 : 4);
  t.index.resize(out_len * t.n);
  t.weight.resize(out_len * t.n);
  t.outside.assign(out_len, false);
  t.identity = out_len == in_len;
  const auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in_len - 1); };
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = OriginalCoord(s, d, o, in_len);
    if (s.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(in_len - 1))) {
      t.outside[o] = true;
      t.any_outside = true;
    }
    int64_t* idx = &t.index[o * t.n];
    double* w = &t.weight[o * t.n];
    if (t.n == 1) {
      idx[0] = NearestIndex(s.nearest, x);
      w[0] = 1;
    } else {
      const double f = std::floor(x);
      const double r = x - f;
      const int64_t base = static_cast<int64_t>(f) - (t.n == 4 ? 1 : 0);
      if (t.n == 2) {
        w[0] = 1 - r;
        w[1] = r;
      } else {
        CubicCoeffs(r, s.cubic_a, w);
      }
      double sum = 0;
      for (int k = 0; k < t.n; ++k) {
        idx[k] = base + k;
        if (s.exclude_outside && (idx[k] < 0 || idx[k] >= in_len)) w[k] = 0;
        sum += w[k];
      }
      if (s.exclude_outside && sum != 0)
        for (int k = 0; k < t.n; ++k) w[k] /= sum;
    }
    for (int k = 0; k < t.n; ++k) {
      idx[k] = clamp(idx[k]);
      if (w[k] != 0 && (idx[k] != o || w[k] != 1)) t.identity = false;
    }
  }
  return t;
}

// One input element contributing to an output element: its offset and weight.
struct Partial {
  int64_t offset;
  double weight;
};

// Walks the output of rank >= 1 row by row (every dimension but the last fixed). For each row, fn(row, partials,
// outside) gets the (offset, weight) pairs that the taps of the outer dimensions contribute and whether an outer
// coordinate is outside the input (tf_crop_and_resize); fn combines them with the last dimension's taps.
template <typename RowFn>
void ForEachRow(const Shape& in_shape, const Shape& out_shape, const std::vector<AxisTaps>& taps, RowFn&& fn) {
  const int rank = out_shape.rank();
  const std::vector<int64_t> strides = Strides(in_shape);
  const int64_t rows = out_shape.Product(0, rank - 1);
  std::vector<int64_t> idx(rank - 1, 0);
  std::vector<Partial> partials, next;
  for (int64_t r = 0; r < rows; ++r) {
    partials.assign(1, Partial{0, 1.0});
    bool outside = false;
    for (int d = 0; d < rank - 1; ++d) {
      const AxisTaps& t = taps[d];
      const int64_t o = idx[d];
      outside = outside || t.outside[o];
      if (t.identity) {
        for (Partial& p : partials) p.offset += o * strides[d];
        continue;
      }
      next.clear();
      for (const Partial& p : partials)
        for (int k = 0; k < t.n; ++k) {
          const double w = t.weight[o * t.n + k];
          if (w != 0) next.push_back({p.offset + t.index[o * t.n + k] * strides[d], p.weight * w});
        }
      partials.swap(next);
    }
    fn(r, partials, outside);
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    const double r = std::round(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return T(static_cast<ComputeType<T>>(v));
  }
}

}  // namespace

Status ResizeRun(KernelContext& ctx, const Tensor& x, const ResizeSpec& spec) {
  const int rank = x.rank();
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), spec.out));
  if (y->num_elements() == 0) return Status::OK();
  if (rank == 0) return CopyElements(x, y);
  for (int d = 0; d < rank; ++d)
    if (x.dim(d) == 0) return ctx.Error("cannot resize an empty dimension ", d, " to ", spec.out[d], " elements");
  std::vector<AxisTaps> taps;
  for (int d = 0; d < rank; ++d) taps.push_back(BuildTaps(spec, d, x.dim(d)));
  const bool extrapolate = spec.coord == CoordMode::kTfCropAndResize;
  const AxisTaps& last = taps[rank - 1];
  const int64_t width = spec.out[rank - 1];
  if (spec.mode == ResizeMode::kNearest) {
    // A gather: one tap of weight 1 per dimension, so every row has exactly one partial.
    Tensor extra = Tensor::Zeros(x.dtype(), Shape{});
    if (extrapolate) {
      if (!IsFloatingPoint(x.dtype()) && !IsInteger(x.dtype()))
        return ctx.Error("tf_crop_and_resize needs a numeric input, got ", DTypeName(x.dtype()));
      STRATA_RETURN_IF_ERROR(ConvertElements(Tensor::Scalar<double>(spec.extrapolation_value), &extra));
    }
    return DispatchStorage(x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* in = StorageOf<S>(x);
      S* out = StorageOf<S>(y);
      const S fill = StorageOf<S>(extra)[0];
      ForEachRow(x.shape(), spec.out, taps, [&](int64_t r, const std::vector<Partial>& partials, bool outside) {
        S* dst = out + r * width;
        const S* src = in + partials[0].offset;
        for (int64_t j = 0; j < width; ++j)
          dst[j] = extrapolate && (outside || last.outside[j]) ? fill : src[last.index[j]];
      });
      return Status::OK();
    });
  }
  if (!IsFloatingPoint(x.dtype()) && !IsInteger(x.dtype()))
    return ctx.Error("linear and cubic modes need a numeric input, got ", DTypeName(x.dtype()));
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y->data<T>();
    const T fill = FromDouble<T>(spec.extrapolation_value);
    ForEachRow(x.shape(), spec.out, taps, [&](int64_t r, const std::vector<Partial>& partials, bool outside) {
      T* dst = out + r * width;
      for (int64_t j = 0; j < width; ++j) {
        if (extrapolate && (outside || last.outside[j])) {
          dst[j] = fill;
          continue;
        }
        double acc = 0;
        for (int k = 0; k < last.n; ++k) {
          const double w = last.weight[j * last.n + k];
          if (w == 0) continue;
          const int64_t off = last.index[j * last.n + k];
          for (const Partial& p : partials) acc += p.weight * w * static_cast<double>(ToCompute(in[p.offset + off]));
        }
        dst[j] = FromDouble<T>(acc);
      }
    });
    return Status::OK();
  });
}

StatusOr<ResizeSpec> ParseResizeAttrs(const Node& node, int opset) {
  ResizeSpec s;
  const std::string mode = node.GetString("mode", "nearest");
  if (mode == "nearest") {
    s.mode = ResizeMode::kNearest;
  } else if (mode == "linear" || (opset < 11 && mode == "bilinear")) {
    s.mode = ResizeMode::kLinear;
  } else if (mode == "cubic" && opset >= 11) {
    s.mode = ResizeMode::kCubic;
  } else {
    return InvalidArgumentError(node.Describe(), ": mode '", mode, "' is not one of nearest, linear",
                                opset >= 11 ? ", cubic" : "", " (opset ", opset, ")");
  }
  if (opset < 11) {
    s.coord = CoordMode::kAsymmetric;
    s.nearest = NearestMode::kFloor;
    return s;
  }
  if (node.GetInt("antialias", 0) != 0)
    return UnimplementedError(node.Describe(), ": antialias (opset 18) is not supported");
  const std::string coord = node.GetString("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    s.coord = CoordMode::kHalfPixel;
  else if (coord == "pytorch_half_pixel")
    s.coord = CoordMode::kPytorchHalfPixel;
  else if (coord == "align_corners")
    s.coord = CoordMode::kAlignCorners;
  else if (coord == "asymmetric")
    s.coord = CoordMode::kAsymmetric;
  else if (coord == "tf_half_pixel_for_nn")
    s.coord = CoordMode::kTfHalfPixelForNn;
  else if (coord == "tf_crop_and_resize")
    s.coord = CoordMode::kTfCropAndResize;
  else if (coord == "half_pixel_symmetric")
    return UnimplementedError(node.Describe(),
                              ": coordinate_transformation_mode 'half_pixel_symmetric' (opset 19) is not supported");
  else
    return InvalidArgumentError(node.Describe(), ": coordinate_transformation_mode '", coord, "' is not supported");
  const std::string nearest = node.GetString("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    s.nearest = NearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil")
    s.nearest = NearestMode::kRoundPreferCeil;
  else if (nearest == "floor")
    s.nearest = NearestMode::kFloor;
  else if (nearest == "ceil")
    s.nearest = NearestMode::kCeil;
  else
    return InvalidArgumentError(node.Describe(), ": nearest_mode '", nearest, "' is not supported");
  s.cubic_a = node.GetFloat("cubic_coeff_a", -0.75f);
  s.exclude_outside = node.GetInt("exclude_outside", 0) != 0;
  s.extrapolation_value = node.GetFloat("extrapolation_value", 0.0f);
  return s;
}

StatusOr<std::vector<double>> ReadFloats(const Tensor& t, const Node& node, std::string_view what) {
  std::vector<double> out(t.num_elements());
  Status s = DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(ToCompute(p[i]));
    return Status::OK();
  });
  if (!s.ok())
    return InvalidArgumentError(node.Describe(), ": ", what, " must be a float tensor, got ", DTypeName(t.dtype()));
  return out;
}

}  // namespace strata::ops
