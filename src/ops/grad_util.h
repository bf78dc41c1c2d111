// Helpers for gradient functions (OpSchema::grad). They emit ordinary IR nodes through the GradContext.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

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

// Shorthands for the arithmetic most gradients are made of.
inline std::string EMul(GradContext& ctx, const std::string& a, const std::string& b) {
  return Emit1(ctx, "Mul", {a, b});
}
inline std::string EDiv(GradContext& ctx, const std::string& a, const std::string& b) {
  return Emit1(ctx, "Div", {a, b});
}
inline std::string EAdd(GradContext& ctx, const std::string& a, const std::string& b) {
  return Emit1(ctx, "Add", {a, b});
}
inline std::string ESub(GradContext& ctx, const std::string& a, const std::string& b) {
  return Emit1(ctx, "Sub", {a, b});
}
inline std::string ENeg(GradContext& ctx, const std::string& a) { return Emit1(ctx, "Neg", {a}); }
inline std::string EWhere(GradContext& ctx, const std::string& c, const std::string& a, const std::string& b) {
  return Emit1(ctx, "Where", {c, a, b});
}

// `s` with its gradient function set (for one-line Register functions).
inline OpSchema WithGrad(OpSchema s, GradFn grad) {
  s.grad = grad;
  return s;
}

// Binary ops before opset 7 could broadcast B with an `axis` attribute that aligns it other than as a suffix, which
// ReduceGradTo cannot undo: Unimplemented for those nodes, OK otherwise.
Status CheckNumpyBroadcast(const GradContext& ctx);

// A 1-D int64 constant (axes, perms, shapes).
std::string ConstInts(GradContext& ctx, std::vector<int64_t> values);

// A scalar constant of float type `t` (float32 when `t` is not a float type).
std::string ScalarConst(GradContext& ctx, DType t, double value);

// The values of node input i when they are known while the gradient is built (an initializer that is not
// differentiated, a Constant, or a value folded from those), as int64; nullopt otherwise or when not integers.
std::optional<std::vector<int64_t>> KnownInputInts(const GradContext& ctx, int i);
// The same for a float scalar input (Clip's min/max, Dropout's ratio).
std::optional<double> KnownInputScalar(const GradContext& ctx, int i);

// Zeros of float type `t` with the (run-time) shape of value `like`.
std::string ZerosLike(GradContext& ctx, const std::string& like, DType t);

// The gradient of a reduction over `axes` brought back to the reduced input's shape: when keepdims is false, `g`
// gets the reduced axes back as size-1 dimensions (Unsqueeze with `axes`, which may be a run-time tensor's name or
// "" for all axes, when g is a scalar); then it is broadcast to the shape of value `like` when `expand` is set.
std::string UnreduceGrad(GradContext& ctx, const std::string& g, const std::string& axes, bool keepdims,
                         const std::string& like, bool expand);

// The forward node's input i, output i (names), and types, shortened.
inline const std::string& In(const GradContext& ctx, int i) { return ctx.node().inputs[i]; }
inline const std::string& Out(const GradContext& ctx, int i) { return ctx.node().outputs[i]; }
inline DType InType(const GradContext& ctx, int i) { return ctx.input_type(i).dtype; }

// The number of input-0 elements behind each element of output 0 (a reduction's count), as a scalar of input 0's
// float type: a constant when both shapes are known, else computed from their sizes at run time.
std::string InputsPerOutput(GradContext& ctx);

// The gradient of ops that only change the shape of input 0 (Reshape, Flatten, Squeeze, Unsqueeze): dY reshaped to
// input 0's shape.
Status ReshapeBackGrad(GradContext& ctx);

// The gradient of a pure data-movement op (Slice, Tile, Pad in reflect/edge mode, ...) with respect to input 0:
// `forward(data)` emits the op applied to another data value of input 0's shape. It is applied to the int64 map of
// input 0's flat element positions, which gives, for each output element, the input element it came from; dY is then
// scatter-added into zeros at those positions (repeated positions accumulate).
std::string ScatterThroughIndexMap(GradContext& ctx, const std::function<std::string(const std::string&)>& forward);

// Copies the attributes named in `names` that the forward node has.
AttributeMap CopyAttrs(const Node& node, std::initializer_list<std::string_view> names);

}  // namespace strata::ops
