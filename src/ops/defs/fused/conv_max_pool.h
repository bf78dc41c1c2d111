// strata.ConvMaxPool (conv_max_pool.cc): MaxPool(FusedConv(X, W, B)), the pool's attributes prefixed `pool_`.
#pragma once

#include "ops/op.h"

namespace strata::ops {

// Input taps (C * KH * KW) up to which the hand-written channels-last kernel computes the convolution.
inline constexpr int64_t kConvMaxPoolMaxTaps = 32;

// The FusedConv node (the attributes without the prefix) and the MaxPool node (the prefixed ones, prefix removed) that
// `node` stands for.
void SplitConvMaxPool(const Node& node, Node* conv, Node* pool);

// OK when the hand-written channels-last kernel (ops/cpu/conv_max_pool_nhwc.cc) computes `node` for X and W of these
// types whatever X's shape (float32, at most kConvMaxPoolMaxTaps input taps, group 1, a pool without padding or
// dilation); otherwise Unimplemented with the reason. graph/passes/fuse_conv_pool.cc fuses only such nodes.
Status ConvMaxPoolFastFits(const Node& node, const ValueType& x, const ValueType& w);

}  // namespace strata::ops
