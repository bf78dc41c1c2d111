// The interpolation shared by Resize (opset 10, 11, 13) and the deprecated Upsample (opset 7, 9): per-axis
// coordinate transforms and nearest / linear / cubic sampling, applied one axis at a time.
#pragma once

#include <optional>
#include <vector>

#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeSpec {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  // Per input dimension.
  Shape out;
  std::vector<double> scales;       // output length / input length (as given, or derived from sizes)
  std::vector<double> resized_len;  // the length_resized of the coordinate formulas: in * scale, or the size given
  std::vector<double> roi_start, roi_end;  // tf_crop_and_resize only
};

// Parses mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value.
// Before opset 11 only `mode` exists (nearest or linear) and coordinates are asymmetric with floor rounding.
StatusOr<ResizeSpec> ParseResizeAttrs(const Node& node, int opset);

// Reads a float16/float32/float64 tensor as doubles.
StatusOr<std::vector<double>> ReadFloats(const Tensor& t, const Node& node, std::string_view what);

// Operands of one call, each nullopt when absent (or unknown at inference: `unknown` is then set).
struct ResizeOperands {
  std::optional<std::vector<double>> roi, scales;
  std::optional<std::vector<int64_t>> sizes;
  bool unknown = false;
};

// The output dims (-1 where an input dim is unknown at inference) and the sampling parameters for input dims `in`;
// spec.out is set when every output dim is known. `opset` selects the attribute set (see ParseResizeAttrs).
StatusOr<ResizeSpec> BuildResizeSpec(const Node& node, int opset, const std::vector<int64_t>& in,
                                     const ResizeOperands& ops, std::vector<int64_t>* out_dims);

// Resizes x into output 0 of ctx.
Status ResizeRun(KernelContext& ctx, const Tensor& x, const ResizeSpec& spec);

}  // namespace strata::ops
