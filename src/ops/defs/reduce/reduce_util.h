// Shared by the reduce family (ReduceX, ArgMax/ArgMin, TopK) and by Einsum: which axes a ReduceX node reduces,
// its shape inference, and the reduction loop.
//
// The loop never transposes. The input's dimensions are grouped into runs of adjacent kept or reduced dimensions
// (size-1 dimensions dropped), which turns any reduction into one of two contiguous patterns:
//   A. the innermost run is reduced: every output element reduces contiguous rows of `inner` elements, summed
//      pairwise (error grows with log n, not n), and the outer reduced runs are walked with strides, their partial
//      results combined pairwise too;
//   B. the innermost run is kept: `inner` accumulators are updated from contiguous rows, in blocks of kBlockRows
//      rows whose partial results are then combined pairwise (blocked summation, for the same reason).
// An op is a small struct (see ReduceWalk) giving the accumulator type and four inline functions, so there are no
// virtual calls or per-element branches on the op kind.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops {

// ---- axes ----

// True when this ReduceX node takes its axes from input 1 (ReduceSum from opset 13, the others from opset 18).
bool ReduceAxesFromInput(const Node& node);

// The axes a node reduces, once the input rank is known.
struct ReduceAxes {
  bool noop = false;          // noop_with_empty_axes=1 and no axes: the output is the input
  std::vector<bool> reduced;  // per input dimension
  bool keepdims = true;
};

// Resolves raw axes (attribute or input values; empty = all, or noop) for an input of rank `rank`.
StatusOr<ReduceAxes> ResolveReduceAxes(const Node& node, int rank, const std::vector<int64_t>& raw);
// Reads the axes of a ReduceX node at run time (attribute or input, by opset) and resolves them.
StatusOr<ReduceAxes> ReduceAxesForRun(const KernelContext& ctx);
// The output shape for a concrete input.
Shape ReducedShape(const Shape& in, const ReduceAxes& ax);

// Shape/type inference shared by every ReduceX op: output dtype = input dtype (numeric), shape per axes/keepdims.
Status InferReduce(InferContext& ctx);
// The schema of a ReduceX op (opset 1 onwards; optional axes input 1 where the opset has it).
OpSchema ReduceSchema(const char* name, ComputeFn reference);

// ---- the loop ----

struct ReducePlan {
  int64_t out_count = 0;       // output elements
  int64_t reduce_count = 0;    // input elements per output element
  bool inner_reduced = false;  // pattern A (true) or B (false)
  int64_t inner = 1;           // length of the innermost (contiguous) run
  // Outer kept runs (pattern B: without the innermost) and outer reduced runs (pattern A: without the innermost),
  // outermost first, with their input strides in elements.
  std::vector<int64_t> kept_sizes, kept_strides;
  std::vector<int64_t> red_sizes, red_strides;
};

// Plans the reduction of `in` over the dimensions marked in `reduced` (same length as in.rank()).
ReducePlan MakeReducePlan(const Shape& in, const std::vector<bool>& reduced);

// Walks the offsets of a row-major odometer over (sizes, strides).
class StridedCounter {
 public:
  StridedCounter(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides)
      : sizes_(sizes), strides_(strides), idx_(sizes.size(), 0) {}
  int64_t offset() const { return offset_; }
  void Next() {
    for (int d = static_cast<int>(sizes_.size()) - 1; d >= 0; --d) {
      offset_ += strides_[d];
      if (++idx_[d] < sizes_[d]) return;
      offset_ -= strides_[d] * sizes_[d];
      idx_[d] = 0;
    }
  }

 private:
  const std::vector<int64_t>& sizes_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> idx_;
  int64_t offset_ = 0;
};

inline constexpr int64_t kBlockRows = 64;       // pattern B: rows accumulated before folding into the totals
inline constexpr int64_t kPairwiseLeaf = 1024;  // pattern A: elements summed directly in lanes (32 per lane)
inline constexpr int kLanes = 32;               // pattern A: interleaved accumulators

// Lanes: kLanes interleaved accumulators, independent chains the compiler turns into a few vector registers.
template <typename Op>
struct Lanes {
  typename Op::Acc lane[kLanes];
  int next = 0;  // where the next tail element goes: short runs rotate through the lanes instead of piling on lane 0
  explicit Lanes(const Op& op) { Reset(op); }
  void Reset(const Op& op) {
    for (auto& a : lane) a = op.Init();
  }
  // Folds x[0, n) into the lanes (`o` is the output index, passed to op.Map).
  template <typename T>
  void Add(const Op& op, const T* x, int64_t n, int64_t o) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lane[j] = op.Combine(lane[j], op.Map(x[i + j], o));
    for (; i < n; ++i) {
      lane[next] = op.Combine(lane[next], op.Map(x[i], o));
      if (++next == kLanes) next = 0;
    }
  }
  // Combines the lanes as a balanced tree.
  typename Op::Acc Fold(const Op& op) {
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) lane[j] = op.Combine(lane[j], lane[j + w]);
    return lane[0];
  }
};

// Reduces x[0, n) pairwise down to leaves of at most kPairwiseLeaf elements, which are summed in lanes.
template <typename Op, typename T>
typename Op::Acc ReduceRun(const Op& op, const T* x, int64_t n, int64_t o) {
  if (n <= kPairwiseLeaf) {
    Lanes<Op> lanes(op);
    lanes.Add(op, x, n, o);
    return lanes.Fold(op);
  }
  const int64_t half = (n / 2) / kLanes * kLanes;
  return op.Combine(ReduceRun(op, x, half, o), ReduceRun(op, x + half, n - half, o));
}

// acc[j] = Combine(acc[j], Map(row[j], o0 + j)) for j < n. Chunks of a fixed width, with the row loaded before acc is
// stored, so that the compiler vectorises it without alias checks (which -O2's cost model will not emit).
template <typename Op, typename T>
inline void AccumulateRow(const Op& op, typename Op::Acc* acc, const T* row, int64_t n, int64_t o0) {
  using Acc = typename Op::Acc;
  constexpr int kChunk = 16;
  int64_t j = 0;
  for (; j + kChunk <= n; j += kChunk) {
    Acc v[kChunk];
    for (int u = 0; u < kChunk; ++u) v[u] = op.Map(row[j + u], o0 + j + u);
    for (int u = 0; u < kChunk; ++u) acc[j + u] = op.Combine(acc[j + u], v[u]);
  }
  for (; j < n; ++j) acc[j] = op.Combine(acc[j], op.Map(row[j], o0 + j));
}

// Streaming pairwise combination: partial results are added one at a time and combined like a binary counter, so
// the tree of combinations stays balanced and rounding error grows with log(count) rather than count. The scalar
// form serves pattern A (one partial per reduced run), the vector form pattern B (one row block of `width` lanes).
template <typename Op>
class ScalarCascade {
 public:
  using Acc = typename Op::Acc;
  explicit ScalarCascade(const Op& op) : op_(op) {}
  void Add(Acc a) {
    int l = 0;
    for (; (used_ >> l) & 1u; ++l) {
      a = op_.Combine(level_[l], a);
      used_ &= ~(uint64_t{1} << l);
    }
    level_[l] = a;
    used_ |= uint64_t{1} << l;
  }
  Acc Result() const {
    Acc r = op_.Init();
    for (int l = 63; l >= 0; --l)
      if ((used_ >> l) & 1u) r = op_.Combine(r, level_[l]);
    return r;
  }

 private:
  const Op& op_;
  Acc level_[64];
  uint64_t used_ = 0;
};

template <typename Op>
class VectorCascade {
 public:
  using Acc = typename Op::Acc;
  VectorCascade(const Op& op, int64_t width) : op_(op), width_(width) {}
  void Clear() { std::fill(used_.begin(), used_.end(), false); }
  // Takes the contents of *part; *part is left with scratch memory of the same width.
  void Add(std::vector<Acc>* part) {
    size_t l = 0;
    for (; l < used_.size() && used_[l]; ++l) {
      const Acc* lv = levels_[l].data();
      Acc* pv = part->data();
      for (int64_t j = 0; j < width_; ++j) pv[j] = op_.Combine(lv[j], pv[j]);
      used_[l] = false;
    }
    if (l == used_.size()) {
      levels_.emplace_back(width_);
      used_.push_back(false);
    }
    levels_[l].swap(*part);
    used_[l] = true;
  }
  void Result(Acc* out) const {
    for (int64_t j = 0; j < width_; ++j) out[j] = op_.Init();
    for (size_t l = used_.size(); l-- > 0;) {
      if (!used_[l]) continue;
      for (int64_t j = 0; j < width_; ++j) out[j] = op_.Combine(out[j], levels_[l][j]);
    }
  }

 private:
  const Op& op_;
  int64_t width_;
  std::vector<std::vector<Acc>> levels_;
  std::vector<bool> used_;
};

// y[o] = op.Finalize(fold of op.Map(x[i], o) over the inputs of output o, plan.reduce_count, o).
// Op provides: `using Acc`, `using Out`, Acc Init(), Acc Map(T, int64_t o), Acc Combine(Acc, Acc),
// Out Finalize(Acc, int64_t n, int64_t o).
template <typename Op, typename T>
void ReduceWalk(const ReducePlan& p, const T* x, typename Op::Out* y, const Op& op) {
  using Acc = typename Op::Acc;
  if (p.out_count == 0) return;
  if (p.reduce_count == 0) {
    for (int64_t o = 0; o < p.out_count; ++o) y[o] = op.Finalize(op.Init(), 0, o);
    return;
  }
  StridedCounter kept(p.kept_sizes, p.kept_strides);
  int64_t red_outer = 1;
  for (int64_t s : p.red_sizes) red_outer *= s;
  if (p.inner_reduced) {
    for (int64_t o = 0; o < p.out_count; ++o, kept.Next()) {
      const T* base = x + kept.offset();
      if (red_outer == 1) {
        y[o] = op.Finalize(ReduceRun(op, base, p.inner, o), p.reduce_count, o);
        continue;
      }
      StridedCounter red(p.red_sizes, p.red_strides);
      ScalarCascade<Op> acc(op);
      if (p.inner >= kPairwiseLeaf) {
        for (int64_t r = 0; r < red_outer; ++r, red.Next()) acc.Add(ReduceRun(op, base + red.offset(), p.inner, o));
      } else {
        // Short runs share one set of lanes until a leaf's worth of elements is in them.
        Lanes<Op> lanes(op);
        int64_t filled = 0;
        for (int64_t r = 0; r < red_outer; ++r, red.Next()) {
          lanes.Add(op, base + red.offset(), p.inner, o);
          if ((filled += p.inner) >= kPairwiseLeaf) {
            acc.Add(lanes.Fold(op));
            lanes.Reset(op);
            filled = 0;
          }
        }
        if (filled > 0) acc.Add(lanes.Fold(op));
      }
      y[o] = op.Finalize(acc.Result(), p.reduce_count, o);
    }
    return;
  }
  const int64_t inner = p.inner;
  std::vector<Acc> block(inner), total(inner);
  VectorCascade<Op> cascade(op, inner);
  for (int64_t o0 = 0; o0 < p.out_count; o0 += inner, kept.Next()) {
    const T* base = x + kept.offset();
    StridedCounter red(p.red_sizes, p.red_strides);
    cascade.Clear();
    for (int64_t r0 = 0; r0 < red_outer; r0 += kBlockRows) {
      std::fill(block.begin(), block.end(), op.Init());
      const int64_t rows = std::min(kBlockRows, red_outer - r0);
      Acc* bv = block.data();
      for (int64_t r = 0; r < rows; ++r, red.Next()) AccumulateRow(op, bv, base + red.offset(), inner, o0);
      if (rows == red_outer) {  // a single block: no cascade needed
        block.swap(total);
        break;
      }
      cascade.Add(&block);
    }
    if (red_outer > kBlockRows) cascade.Result(total.data());
    for (int64_t j = 0; j < inner; ++j) y[o0 + j] = op.Finalize(total[j], p.reduce_count, o0 + j);
  }
}

// Runs a ReduceX node: resolves the axes, allocates the output (input dtype) and walks the input with the op that
// make_op(TypeTag<T>{}) returns for the input's element type.
template <typename MakeOp>
Status RunReduce(KernelContext& ctx, MakeOp&& make_op) {
  STRATA_ASSIGN_OR_RETURN(ReduceAxes ax, ReduceAxesForRun(ctx));
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), ReducedShape(x.shape(), ax)));
  const ReducePlan plan = MakeReducePlan(x.shape(), ax.reduced);
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ReduceWalk(plan, x.data<T>(), y->data<T>(), make_op(tag));
    return Status::OK();
  });
}

// Sums x into y, whose shape `x` was broadcast from (numpy rules: y right-aligned to x, y's size-1 and missing
// leading dimensions summed), with this family's accumulation (pairwise/blocked, 16-bit floats in float). The entry
// point for gradient ops (bias gradients, broadcast-gradient reductions). y must be allocated with its shape and x's
// dtype; InvalidArgument when y's shape is not a broadcast source of x's.
Status SumToShape(const Tensor& x, Tensor* y);

// ---- accumulator types and conversions ----

// Sums and products: float for the 16-bit floats, the type itself for float/double, and the unsigned type of the
// same width for integers (wrap-around is well defined there and gives numpy's result modulo 2^bits).
template <typename T, bool = std::is_integral_v<T>>
struct SumAccOf {
  using type = ComputeType<T>;
};
template <typename T>
struct SumAccOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using SumAcc = typename SumAccOf<T>::type;

// a * b without signed-overflow traps: small unsigned types promote to int, so multiply them as unsigned int.
template <typename A>
inline A MulWrap(A a, A b) {
  if constexpr (std::is_integral_v<A> && sizeof(A) < sizeof(unsigned)) {
    return static_cast<A>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return a * b;
  }
}

// double -> T: rounds through the compute type for floats; for integers truncates toward zero and saturates
// (NaN -> 0), so that e.g. log(0) = -inf on an integer input gives the type's minimum instead of undefined behaviour.
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return T(static_cast<ComputeType<T>>(v));
  }
}

// The smallest and largest values of T (infinities for floats), the identities of max and min.
template <typename T>
ComputeType<T> LowestOf() {
  if constexpr (std::is_floating_point_v<ComputeType<T>>) {
    return -std::numeric_limits<ComputeType<T>>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}
template <typename T>
ComputeType<T> HighestOf() {
  if constexpr (std::is_floating_point_v<ComputeType<T>>) {
    return std::numeric_limits<ComputeType<T>>::infinity();
  } else {
    return std::numeric_limits<T>::max();
  }
}

// NaN-aware max/min (a NaN in either argument wins, as numpy's max/min propagate it); branch-free selects so that
// loops over them vectorise.
template <typename C>
inline C MaxNan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) return (b > a || b != b) ? b : a;
  return b > a ? b : a;
}
template <typename C>
inline C MinNan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) return (b < a || b != b) ? b : a;
  return b < a ? b : a;
}

}  // namespace strata::ops
