// Loops and schema helpers shared by the elementwise families (defs/math, defs/logic, defs/activation).
//
// Broadcasting: the output shape is walked as a few collapsed dimensions (adjacent dimensions merge when every
// input is contiguous across them, or broadcast across both), so the innermost loop is one long contiguous row in
// which each input either advances by one element or stays put. Those two cases are separate loops without branches,
// which the compiler vectorises for the plain arithmetic ops.
//
// Legacy broadcasting: before opset 7, binary ops (Add, And, Equal, Pow, ...) broadcast only with attribute
// broadcast=1, and then B's dimensions line up with A's starting at attribute `axis` (default: as a suffix).
// LegacyBroadcastShape turns that into the equivalent numpy shape for B, so the same loops serve both.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/elementwise.h"

namespace strata::ops::ew {

// ---- broadcast iteration ----

template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;                    // collapsed output dimensions, outermost first (never empty)
  std::array<std::vector<int64_t>, N> strides;  // per input, per collapsed dimension (0 = broadcast)
};

template <size_t N>
BroadcastPlan<N> MakeBroadcastPlan(const Shape& out, const std::array<Shape, N>& in) {
  BroadcastPlan<N> p;
  std::array<std::vector<int64_t>, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = BroadcastStrides(in[k], out);
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = p.strides[k].back() == st[k][d] * out[d];
    if (merge) {
      p.dims.back() *= out[d];
      for (size_t k = 0; k < N; ++k) p.strides[k].back() = st[k][d];
      continue;
    }
    p.dims.push_back(out[d]);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(st[k][d]);
  }
  if (p.dims.empty()) {  // a scalar or all-ones output
    p.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(0);
  }
  return p;
}

// Calls row(out_offset, in_offsets, length, inner_strides) for each innermost row of the plan. Inner strides are 0
// or 1. Does nothing for an empty output.
template <size_t N, typename Row>
void ForEachRow(const BroadcastPlan<N>& p, Row&& row) {
  const int r = static_cast<int>(p.dims.size());
  int64_t outer = 1;
  for (int d = 0; d + 1 < r; ++d) outer *= p.dims[d];
  const int64_t inner = p.dims[r - 1];
  if (outer == 0 || inner == 0) return;
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = p.strides[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < outer; ++o) {
    row(o * inner, base, inner, inner_st);
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) base[k] += p.strides[k][d];
      if (idx[d] < p.dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= p.strides[k][d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// out[i] = f(a[.], b[.]) over the broadcast shape `os` (which must be the broadcast of `as` and `bs`). `out` may
// alias `a` or `b` when that input has the output's shape.
template <typename A, typename B, typename O, typename F>
void BroadcastBinary(const A* a, const Shape& as, const B* b, const Shape& bs, O* out, const Shape& os, F&& f) {
  const BroadcastPlan<2> plan = MakeBroadcastPlan<2>(os, {as, bs});
  ForEachRow<2>(plan, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    O* po = out + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (st[1] == 1) {
      const A av = pa[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(av, pb[i]);
    } else if (st[0] == 1) {
      const B bv = pb[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
    } else {
      const O v = f(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

// out[i] = a[.] broadcast to `os` (a copy with broadcasting, for folds that start from their first input).
template <typename T>
void BroadcastCopy(const T* a, const Shape& as, T* out, const Shape& os) {
  const BroadcastPlan<1> plan = MakeBroadcastPlan<1>(os, {as});
  ForEachRow<1>(plan, [&](int64_t o, const std::array<int64_t, 1>& off, int64_t n, const std::array<int64_t, 1>& st) {
    const T* pa = a + off[0];
    T* po = out + o;
    if (st[0] == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = pa[i];
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = pa[0];
    }
  });
}

// ---- legacy (opset < 7) broadcasting ----

// B's shape as numpy broadcasting should see it, for a node whose opset may predate numpy broadcasting. From opset 7
// on this is `b` unchanged. Before: with broadcast=1, B's dimensions are placed at `axis` of A (default: suffix);
// with broadcast=0 the shapes must be equal. InvalidArgument names the node when they do not fit.
StatusOr<Shape> LegacyBroadcastShape(const Node& node, const Shape& a, const Shape& b);
StatusOr<PartialShape> LegacyBroadcastPartial(const Node& node, const PartialShape& a, const PartialShape& b);

// The output shape of a two-input broadcasting op at run time (legacy rules applied); *b_shape receives B's shape as
// the loops should see it. Errors are prefixed with the node.
Status BinaryShapes(const KernelContext& ctx, Shape* b_shape, Shape* out_shape);

// Inference for a two-input broadcasting op (legacy rules applied), output dtype `out_dtype` (input 0's when
// kUndefined). Does not check dtypes.
Status InferBinaryShape(InferContext& ctx, DType out_dtype);

// ---- dtype classes, for inference and kernels ----

enum class TypeClass { kFloat, kSignedOrFloat, kNumeric, kInteger, kUnsigned, kBool, kNumericOrBool, kAny };

bool InClass(DType t, TypeClass c);
std::string_view ClassName(TypeClass c);

// InvalidArgument naming the input when its dtype is outside the class (unknown dtypes pass).
Status CheckInputClass(const InferContext& ctx, int i, TypeClass c);
Status CheckInputClass(const KernelContext& ctx, int i, TypeClass c);

// ---- common inference rules ----

// Output 0 = input 0's type and shape, after checking input 0 is in class `c`.
template <TypeClass C>
Status InferUnary(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckInputClass(ctx, 0, C));
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// ---- unary kernels ----

// y = f(x) for float inputs, computed in ComputeType (float for the 16-bit floats). `f` is generic over float/double.
template <typename F>
Status UnaryFloat(KernelContext& ctx, F&& f) {
  STRATA_RETURN_IF_ERROR(CheckInputClass(ctx, 0, TypeClass::kFloat));
  return DispatchFloat(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    return UnaryMap<T, T>(ctx, DType::kUndefined, [&](T x) { return T(static_cast<C>(f(static_cast<C>(x)))); });
  });
}

// ---- integer helpers ----

// a op b with two's-complement wraparound for signed integers (no undefined behaviour on overflow).
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;  // avoid int promotion overflow
    return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(unsigned)) {
    return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

// double -> integer T truncating toward zero; NaN gives 0 and out-of-range values saturate (no undefined behaviour).
template <typename T>
T SaturateCast(double v) {
  if (v != v) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// ---- schema helper ----

OpSchema MakeSchema(const char* name, int since_version, int min_inputs, int max_inputs, InferFn infer,
                    ComputeFn reference, std::string no_grad_reason = "");

}  // namespace strata::ops::ew
