// Shared by strata.ConvBackwardData and strata.ConvBackwardFilter: the Conv geometry of a gradient node (it carries
// the forward Conv's attributes), im2col / col2im over it, and shape operands.
#pragma once

#include <cstdint>

#include "ops/defs/nn/spatial.h"

namespace strata::ops::convgrad {

// The forward Conv geometry for input shape `x` and weight shape `w` (kernel_shape, strides, pads, dilations,
// auto_pad and group read from the node as Conv reads them); `y` receives the forward output shape.
struct ConvGeometry {
  nn::Geometry3 g;
  int64_t group = 1;
  Shape y;
};
StatusOr<ConvGeometry> ForwardConv(const Node& node, const Shape& x, const Shape& w);

// A shape operand (1-D int64/int32 of non-negative sizes).
StatusOr<Shape> ReadShape(const KernelContext& ctx, int i, std::string_view what);

// Inference for an output given by shape operand `i` (known when the operand is a constant).
PartialShape ShapeFromOperand(const InferContext& ctx, int i);

// Writes the (channels * K) x L im2col matrix of `channels` input planes (each of g.in_size() elements, contiguous)
// into `col` (zeros where a window overlaps the padding).
template <typename C>
void Im2Col(const C* x, int64_t channels, const nn::Geometry3& g, C* col);

// The adjoint of Im2Col: adds each column entry back onto the input position it was read from (`x` must be
// initialised; padding positions are dropped).
template <typename C>
void Col2Im(const C* col, int64_t channels, const nn::Geometry3& g, C* x);

}  // namespace strata::ops::convgrad
