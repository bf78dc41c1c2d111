// Helpers shared by op definitions: dtype dispatch, broadcasting, axes, and common inference rules.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/op.h"

namespace strata::ops {

// ---- dtype dispatch: fn(TypeTag<T>{}) for the runtime dtype ----

template <typename T>
struct TypeTag {
  using type = T;
};

// float32/float64/float16/bfloat16.
template <typename F>
Status DispatchFloat(DType t, F&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat64: return fn(TypeTag<double>{});
    case DType::kFloat16: return fn(TypeTag<Float16>{});
    case DType::kBFloat16: return fn(TypeTag<BFloat16>{});
    default: return UnimplementedError("element type ", DTypeName(t), " is not supported here (expected a float type)");
  }
}

// Signed and unsigned integers.
template <typename F>
Status DispatchInteger(DType t, F&& fn) {
  switch (t) {
    case DType::kInt8: return fn(TypeTag<int8_t>{});
    case DType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DType::kInt16: return fn(TypeTag<int16_t>{});
    case DType::kUInt16: return fn(TypeTag<uint16_t>{});
    case DType::kInt32: return fn(TypeTag<int32_t>{});
    case DType::kUInt32: return fn(TypeTag<uint32_t>{});
    case DType::kInt64: return fn(TypeTag<int64_t>{});
    case DType::kUInt64: return fn(TypeTag<uint64_t>{});
    default: return UnimplementedError("element type ", DTypeName(t), " is not supported here (expected an integer)");
  }
}

// Every numeric type (floats and integers, not bool or string).
template <typename F>
Status DispatchNumeric(DType t, F&& fn) {
  if (IsFloatingPoint(t)) return DispatchFloat(t, fn);
  if (IsInteger(t)) return DispatchInteger(t, fn);
  return UnimplementedError("element type ", DTypeName(t), " is not supported here (expected a number)");
}

// Every type, bool and string included.
template <typename F>
Status DispatchAll(DType t, F&& fn) {
  if (t == DType::kBool) return fn(TypeTag<bool>{});
  if (t == DType::kString) return fn(TypeTag<std::string>{});
  return DispatchNumeric(t, fn);
}

// Arithmetic type used to compute on T: float for the 16-bit floats, T otherwise.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline ComputeType<T> ToCompute(T v) {
  return static_cast<ComputeType<T>>(v);
}
template <typename T, typename C>
inline T FromCompute(C v) {
  return T(v);
}

// ---- shapes and axes ----

// Numpy/ONNX multidirectional broadcasting of two concrete shapes.
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Same over partial shapes (unknown dims stay unknown when they cannot be resolved).
StatusOr<PartialShape> BroadcastPartial(const PartialShape& a, const PartialShape& b);

// Maps an axis in [-rank, rank) to [0, rank); InvalidArgument otherwise.
StatusOr<int> NormalizeAxis(int64_t axis, int rank, const Node& node, std::string_view what = "axis");
StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes, int rank, const Node& node);

// Row-major strides of a shape, in elements.
std::vector<int64_t> Strides(const Shape& s);

// Strides of `in` as seen from `out` under broadcasting (0 on broadcast dimensions), right-aligned to out's rank.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls fn(out_index, in_offsets...) for every element of `out`, where in_offsets are the element offsets of the
// broadcast inputs. The innermost dimension is walked in a tight loop.
template <size_t N, typename F>
void ForEachBroadcast(const Shape& out, const std::array<std::vector<int64_t>, N>& strides, F&& fn) {
  const int rank = out.rank();
  const int64_t total = out.NumElements();
  if (total == 0) return;
  if (rank == 0) {
    std::array<int64_t, N> offs{};
    fn(int64_t{0}, offs);
    return;
  }
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    std::array<int64_t, N> offs = base;
    for (int64_t j = 0; j < inner; ++j) {
      fn(o + j, offs);
      for (size_t k = 0; k < N; ++k) offs[k] += strides[k][rank - 1];
    }
    // Advance the odometer over the outer dimensions.
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Reads an integer tensor (int32 or int64) as int64 values.
StatusOr<std::vector<int64_t>> ReadInts(const Tensor& t, std::string_view what);
// Reads a float-or-integer scalar/1-element tensor as double.
StatusOr<double> ReadScalar(const Tensor& t, std::string_view what);

// Converts a value of one element type to another with C++ conversion semantics (saturating nothing), as Cast does
// for numeric types. Both buffers hold n elements.
Status ConvertElements(const Tensor& src, Tensor* dst);

// ---- common inference rules ----

// Output 0 has the type and shape of input 0.
Status InferSameAsInput0(InferContext& ctx);
// Output 0 has input 0's dtype and the broadcast shape of all inputs.
Status InferBroadcast(InferContext& ctx);
// Output 0 is bool with the broadcast shape of all inputs (comparisons).
Status InferBroadcastBool(InferContext& ctx);
// Every input must have the same dtype (names the first that differs).
Status CheckSameDtype(const InferContext& ctx);

}  // namespace strata::ops
