// The `reduction` attribute shared by ScatterND and ScatterElements: none (opset 11), add/mul (opset 16),
// max/min (opset 18), and the element loops that apply it.
#pragma once

#include <algorithm>

#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

inline StatusOr<ScatterReduction> ParseScatterReduction(const Node& node) {
  const std::string r = node.GetString("reduction", "none");
  if (r == "none") return ScatterReduction::kNone;
  if (r == "add") return ScatterReduction::kAdd;
  if (r == "mul") return ScatterReduction::kMul;
  if (r == "max") return ScatterReduction::kMax;
  if (r == "min") return ScatterReduction::kMin;
  return InvalidArgumentError(node.Describe(), ": reduction '", r, "' is not one of none, add, mul, max, min");
}

// Calls fn(TypeTag<T>{}, combine) where combine(T& dst, const T& src) applies the reduction; plain assignment for
// kNone works on every dtype (through storage words), the others on numeric types.
template <typename F>
Status DispatchScatter(DType dtype, ScatterReduction red, const Node& node, F&& fn) {
  if (red == ScatterReduction::kNone)
    return DispatchStorage(dtype, [&](auto tag) { return fn(tag, [](auto& d, const auto& s) { d = s; }); });
  if (!IsFloatingPoint(dtype) && !IsInteger(dtype))
    return UnimplementedError(node.Describe(), ": reduction '", node.GetString("reduction", ""),
                              "' is not supported for ", DTypeName(dtype));
  return DispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    switch (red) {
      case ScatterReduction::kAdd:
        return fn(tag, [](T& d, const T& s) { d = T(C(d) + C(s)); });
      case ScatterReduction::kMul:
        return fn(tag, [](T& d, const T& s) { d = T(C(d) * C(s)); });
      case ScatterReduction::kMax:
        return fn(tag, [](T& d, const T& s) { d = T(std::max(C(d), C(s))); });
      default:
        return fn(tag, [](T& d, const T& s) { d = T(std::min(C(d), C(s))); });
    }
  });
}

}  // namespace strata::ops
