// What the quantization ops share: exact rounding and saturation, reading scales and zero points (per tensor or per
// axis), and integer convolution / matrix multiplication on int32 operands whose zero points are already subtracted.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/defs/nn/spatial.h"
#include "ops/op_util.h"

namespace strata::ops::quant {

// Rounds to the nearest integer, ties to even (the ONNX quantization rounding; the default FP rounding mode).
inline float RoundHalfEven(float x) { return std::nearbyint(x); }

// Clamps a rounded value to Q's range; NaN becomes Q's lowest value.
template <typename Q>
inline Q Saturate(float v) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (!(v > lo)) return std::numeric_limits<Q>::lowest();
  if (v >= hi) return std::numeric_limits<Q>::max();
  return static_cast<Q>(v);
}

// Scale and zero point of a quantized tensor: one pair (per tensor) or one per index of `axis` (per axis).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;  // one value per scale
  int axis = -1;                    // -1: per tensor
  // Index into scale/zero_point of element i of a tensor with `inner` elements per step of axis and `len` positions
  // on it: (i / inner) % len.
  int64_t inner = 1, len = 1;
};

// Reads scale (float, scalar or 1-element, or 1-D with x.dim(axis) values when per-axis is allowed) and zero point
// (same shape; optional: 0) for x. `what` names the pair in messages ("y_scale").
StatusOr<QuantParams> ReadQuantParams(const Node& node, const Shape& x, const Tensor& scale, const Tensor* zero_point,
                                      int64_t axis_attr, bool allow_per_axis, std::string_view what);

// Reads a zero point tensor's values as int32 (int8, uint8 or int32).
StatusOr<std::vector<int32_t>> ReadZeroPoints(const Node& node, const Tensor& t, std::string_view what);

// Reads a float scalar/1-D tensor as float values, checking they are finite and > 0.
StatusOr<std::vector<float>> ReadScales(const Node& node, const Tensor& t, std::string_view what);

// Converts an int8/uint8 tensor to int32 minus a zero point broadcast against it: `zp` has `zp_shape`, numpy
// broadcastable to t's shape (a scalar, a per-row [..., M, 1] or per-column [..., N] tensor).
StatusOr<Tensor> SubtractZeroPoint(const Node& node, const Tensor& t, const std::vector<int32_t>& zp,
                                   const Shape& zp_shape, Allocator* alloc, std::string_view what);

// A per-tensor (1 element: []) or per-output-channel ([M]: [M, 1, 1, ...] to broadcast against W) tensor of W's.
StatusOr<Shape> ChannelShape(const Node& node, const Tensor& t, const Tensor& w, std::string_view what);

// ---- integer matrix multiplication (numpy matmul broadcasting) ----

// Output shape of matmul(a, b), as MatMul.
StatusOr<Shape> MatMulShape(const Node& node, const Shape& a, const Shape& b);
StatusOr<PartialShape> InferMatMulShape(const Node& node, const PartialShape& a, const PartialShape& b);
// y = a @ b on int32 tensors; y is allocated by the caller with MatMulShape.
void MatMulInt32(const Tensor& a, const Tensor& b, Tensor* y);

// ---- integer convolution (N, C, spatial...) with groups, strides, dilations and pads; padding contributes 0 ----

struct IntConv {
  nn::Geometry3 g;
  int64_t group = 1;
  Shape out;  // [N, M, spatial...]
};

// Validates X/W shapes and the window attributes.
StatusOr<IntConv> SetupIntConv(const Node& node, const Shape& x, const Shape& w);
// Inference: output shape of the convolution of x by w.
StatusOr<PartialShape> InferIntConvShape(const InferContext& ctx, const PartialShape& x, const PartialShape& w);
// y[n, m, ...] = sum_c,k x[n, c, ...] * w[m, c, k] over int32 operands; y (int32, c.out) is allocated by the caller.
Status RunIntConv(const IntConv& c, const Tensor& x, const Tensor& w, Allocator* alloc, Tensor* y);

}  // namespace strata::ops::quant
