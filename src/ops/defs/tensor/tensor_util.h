// Helpers shared by the shape and indexing ops (src/ops/defs/tensor and src/ops/defs/generator): moving elements
// without arithmetic, index validation, and reading shape-like operands at inference and run time.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops {

// ---- element storage ----

// An element moved as raw bytes. Index ops never do arithmetic on their data, so they instantiate once per element
// width (1, 2, 4, 8 bytes) plus std::string instead of once per dtype.
template <size_t N>
struct Word {
  unsigned char bytes[N];
};

// fn(TypeTag<S>{}) with S = Word<size> for plain types and std::string for strings.
template <typename F>
Status DispatchStorage(DType t, F&& fn) {
  if (t == DType::kString) return fn(TypeTag<std::string>{});
  switch (DTypeSize(t)) {
    case 1:
      return fn(TypeTag<Word<1>>{});
    case 2:
      return fn(TypeTag<Word<2>>{});
    case 4:
      return fn(TypeTag<Word<4>>{});
    case 8:
      return fn(TypeTag<Word<8>>{});
    default:
      return UnimplementedError("element type ", DTypeName(t), " is not supported here");
  }
}

template <typename S>
const S* StorageOf(const Tensor& t) {
  return static_cast<const S*>(t.raw_data());
}
template <typename S>
S* StorageOf(Tensor* t) {
  return static_cast<S*>(t->raw_data());
}

// out[o] = in[base + sum_d index_d * strides[d]] for every index of `out_shape` (strides in elements, one per output
// dimension; 0 repeats). Covers transposes, slices with steps, and broadcasts.
template <typename S>
void StridedGather(const S* in, int64_t base, const std::vector<int64_t>& strides, const Shape& out_shape, S* out) {
  const int r = out_shape.rank();
  const int64_t total = out_shape.NumElements();
  if (r > 0 && total > 0 && (strides[r - 1] == 0 || strides[r - 1] == 1)) {
    // Rows of the innermost dimension: a copy (stride 1) or a fill (stride 0, a broadcast), the outer index advanced
    // incrementally. Global pooling's gradient expands [N, 1, 1, C] or [N, C, 1, 1] over the plane this way.
    const int64_t inner = out_shape[r - 1];
    std::vector<int64_t> idx(r, 0);
    int64_t at = base;
    for (int64_t o = 0; o < total; o += inner) {
      if (strides[r - 1] == 1)
        std::copy(in + at, in + at + inner, out + o);
      else
        std::fill(out + o, out + o + inner, in[at]);
      for (int k = r - 2; k >= 0; --k) {
        at += strides[k];
        if (++idx[k] < out_shape[k]) break;
        at -= strides[k] * out_shape[k];
        idx[k] = 0;
      }
    }
    return;
  }
  const std::array<std::vector<int64_t>, 1> st{strides};
  ForEachBroadcast<1>(out_shape, st, [&](int64_t o, const std::array<int64_t, 1>& off) { out[o] = in[base + off[0]]; });
}

// Copies `src` into `dst` with the axes permuted: dst dimension i is src dimension perm[i].
template <typename S>
void PermuteCopy(const S* src, const Shape& src_shape, const std::vector<int>& perm, S* dst) {
  const std::vector<int64_t> src_strides = Strides(src_shape);
  Shape out_shape;
  std::vector<int64_t> strides;
  for (int p : perm) {
    out_shape.PushBack(src_shape[p]);
    strides.push_back(src_shape[p] == 1 ? 0 : src_strides[p]);
  }
  // Rows of the innermost output dimension: a copy loop (memcpy when it is contiguous in the source), the outer
  // index advanced incrementally (no per-element index arithmetic).
  const int r = out_shape.rank();
  const int64_t total = out_shape.NumElements();
  if (r == 0 || total == 0) {
    if (total == 1) dst[0] = src[0];
    return;
  }
  const int64_t inner = out_shape[r - 1], step = strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t base = 0;
  for (int64_t o = 0; o < total; o += inner) {
    S* d = dst + o;
    const S* s = src + base;
    if (step == 1) {
      std::memcpy(static_cast<void*>(d), static_cast<const void*>(s), static_cast<size_t>(inner) * sizeof(S));
    } else {
      for (int64_t j = 0; j < inner; ++j) d[j] = s[j * step];
    }
    for (int k = r - 2; k >= 0; --k) {
      base += strides[k];
      if (++idx[k] < out_shape[k]) break;
      base -= strides[k] * out_shape[k];
      idx[k] = 0;
    }
  }
}

// Copies all elements of `src` into `dst` (same dtype, same element count).
Status CopyElements(const Tensor& src, Tensor* dst);

// ---- indices ----

// Maps an index in [-bound, bound) to [0, bound); InvalidArgument naming the index, the bound and `where` otherwise.
inline StatusOr<int64_t> NormalizeIndex(int64_t index, int64_t bound, const Node& node, std::string_view where) {
  if (index < -bound || index >= bound)
    return InvalidArgumentError(node.Describe(), ": ", where, " index ", index,
                                " is out of range for a dimension of size ", bound, " (expected [", -bound, ", ",
                                bound - 1, "])");
  return index < 0 ? index + bound : index;
}

// Input i must be int32 or int64 (when its type is known).
Status CheckIndexType(const InferContext& ctx, int i, std::string_view what);

// ---- shape-like operands ----

// The values of an int32/int64 input when known at inference time (a constant), else nullopt.
StatusOr<std::optional<std::vector<int64_t>>> KnownInts(const InferContext& ctx, int i, std::string_view what);

// A shape of `rank` unknown dimensions (unknown rank when rank < 0).
PartialShape UnknownShape(int rank);

// Checks that every value of `dims` is >= 0 and that their product fits in int64; returns the Shape.
StatusOr<Shape> ShapeFromDims(const std::vector<int64_t>& dims, const Node& node, std::string_view what);

// a * b for non-negative sizes, or InvalidArgument naming `what` when the product overflows int64.
inline StatusOr<int64_t> CheckedMul(int64_t a, int64_t b, const Node& node, std::string_view what) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return InvalidArgumentError(node.Describe(), ": ", what, " overflows int64");
  return p;
}

// Whether the optional input i is present and not an empty tensor (ONNX uses "" or a 0-element tensor for absent).
inline bool HasNonEmptyInput(const KernelContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input(i).num_elements() > 0;
}

}  // namespace strata::ops
