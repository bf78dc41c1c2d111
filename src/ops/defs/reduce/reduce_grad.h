// Gradient helpers for the ReduceX ops (their gradient functions sit in each op's file): which axes a node reduced,
// as an IR value, and the output gradient (or output) brought back to the input's rank.
#pragma once

#include <string>

#include "ops/grad_util.h"

namespace strata::ops {

struct ReduceGradInfo {
  std::string axes;  // name of a 1-D int tensor of the reduced axes, or "" when all axes are (or none, for noop)
  bool keepdims = true;
};

ReduceGradInfo ReduceGradAxes(GradContext& ctx);

// `v` (shaped like the output) with the reduced axes back as size-1 dimensions: it broadcasts against the input.
std::string Unreduced(GradContext& ctx, const ReduceGradInfo& info, const std::string& v);

// `v` (shaped like the output) broadcast to the input's full shape.
std::string ExpandedToInput(GradContext& ctx, const ReduceGradInfo& info, const std::string& v);

}  // namespace strata::ops
