// Helpers for gradient functions (OpSchema::grad).
#pragma once

#include <string>

#include "ops/op.h"

namespace strata::ops {

// Sums `grad` (shaped like output 0) down to the shape of input `i` when the op broadcast that input; returns
// `grad` unchanged when the shapes are known to be equal.
std::string ReduceGradTo(GradContext& ctx, const std::string& grad, int i);

// Emits a single-output node and returns its output name.
inline std::string Emit1(GradContext& ctx, std::string_view op, std::vector<std::string> inputs,
                         AttributeMap attrs = {}, std::string_view domain = graph::kOnnxDomain) {
  return ctx.Emit(op, std::move(inputs), std::move(attrs), 1, domain)[0];
}

// A 1-D int64 constant (axes, perms, shapes).
std::string ConstInts(GradContext& ctx, std::vector<int64_t> values);

}  // namespace strata::ops
