// Unique (opset 11): the unique elements of the flattened input, or the unique slices along `axis`, with three
// optional int64 outputs: indices (first occurrence of each unique item), inverse_indices (for every input item, the
// position of its unique item) and counts. sorted=1 (default) orders the unique items ascending (slices
// lexicographically, as numpy.unique); sorted=0 keeps the order of first occurrence. NaNs compare equal to each other
// and greater than every number.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

Status UniqueInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  PartialShape y = UnknownShape(1);
  Dim items;
  if (ctx.node().HasAttr("axis")) {
    if (in.rank_known) {
      if (in.rank() == 0) return ctx.Error("Unique with an axis needs an input of rank >= 1");
      STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), in.rank(), ctx.node()));
      y = in;
      y.dims[axis] = Dim();
      items = in.dims[axis];
    } else {
      y = PartialShape::Unknown();
    }
  } else if (in.IsFullyKnown()) {
    items = Dim(in.ToShape().NumElements());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(y));
  for (int i = 1; i < ctx.num_outputs(); ++i)
    ctx.SetOutput(i, DType::kInt64, PartialShape::Of({i == 2 ? items : Dim()}));
  return Status::OK();
}

// Three-way comparison with a total order: NaN equals NaN and sorts last.
template <typename C>
int Compare3(const C& a, const C& b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

// The value compared: float for the 16-bit floats, the element itself (by reference) otherwise.
template <typename T>
decltype(auto) Key(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return (v);
  }
}

// Sorts item ids 0..m-1 (each item = `len` elements read by elem(item, k)) and groups equal items.
template <typename T>
void GroupItems(const Tensor& x, int64_t m, int64_t dim, int64_t inner, bool sorted, std::vector<int64_t>* first,
                std::vector<int64_t>* inverse, std::vector<int64_t>* counts) {
  const T* p = x.data<T>();
  const int64_t len = m == 0 ? 0 : x.num_elements() / m;
  auto elem = [&](int64_t item, int64_t k) -> const T& { return p[((k / inner) * dim + item) * inner + k % inner]; };
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < len; ++k) {
      const int c = Compare3(Key(elem(a, k)), Key(elem(b, k)));
      if (c != 0) return c;
    }
    return 0;
  };
  std::vector<int64_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  std::vector<int64_t> group_of(m);
  for (int64_t i = 0; i < m; ++i) {
    if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
      first->push_back(order[i]);  // stable: the earliest occurrence comes first
      counts->push_back(0);
    }
    group_of[order[i]] = static_cast<int64_t>(first->size()) - 1;
    ++counts->back();
  }
  std::vector<int64_t> rank(first->size());
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    // Reorder the groups by first occurrence.
    std::vector<int64_t> by_first(first->size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return (*first)[a] < (*first)[b]; });
    std::vector<int64_t> f2, c2;
    for (size_t i = 0; i < by_first.size(); ++i) {
      rank[by_first[i]] = static_cast<int64_t>(i);
      f2.push_back((*first)[by_first[i]]);
      c2.push_back((*counts)[by_first[i]]);
    }
    *first = std::move(f2);
    *counts = std::move(c2);
  }
  inverse->resize(m);
  for (int64_t i = 0; i < m; ++i) (*inverse)[i] = rank[group_of[i]];
}

Status WriteInts(KernelContext& ctx, int i, const std::vector<int64_t>& v) {
  if (!ctx.output_wanted(i)) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(i, DType::kInt64, Shape{static_cast<int64_t>(v.size())}));
  std::copy(v.begin(), v.end(), t->data<int64_t>());
  return Status::OK();
}

Status UniqueCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_axis = ctx.node().HasAttr("axis");
  const bool sorted = ctx.node().GetInt("sorted", 1) != 0;
  int axis = 0;
  const Shape shape = has_axis ? x.shape() : Shape{x.num_elements()};
  if (has_axis) {
    if (x.rank() == 0) return ctx.Error("Unique with an axis needs an input of rank >= 1");
    STRATA_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node().GetInt("axis", 0), x.rank(), ctx.node()));
  }
  const int64_t dim = shape[axis];
  const int64_t inner = shape.Product(axis + 1, shape.rank());
  const int64_t outer = shape.Product(0, axis);
  std::vector<int64_t> first, inverse, counts;
  STRATA_RETURN_IF_ERROR(DispatchAll(x.dtype(), [&](auto tag) {
    GroupItems<typename decltype(tag)::type>(x, dim, dim, std::max<int64_t>(inner, 1), sorted, &first, &inverse,
                                             &counts);
    return Status::OK();
  }));
  Shape out = shape;
  out[axis] = static_cast<int64_t>(first.size());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  const int64_t n = out[axis];
  STRATA_RETURN_IF_ERROR(DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(x);
    S* dst = StorageOf<S>(y);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j) std::copy_n(src + (o * dim + first[j]) * inner, inner, dst + (o * n + j) * inner);
    return Status::OK();
  }));
  STRATA_RETURN_IF_ERROR(WriteInts(ctx, 1, first));
  STRATA_RETURN_IF_ERROR(WriteInts(ctx, 2, inverse));
  return WriteInts(ctx, 3, counts);
}

}  // namespace

void RegisterUnique(OpRegistry* r) {
  OpSchema s;
  s.name = "Unique";
  s.since_version = 11;
  s.max_outputs = 4;
  s.infer = UniqueInfer;
  s.reference = UniqueCompute;
  s.no_grad_reason = "a data-dependent selection with integer index outputs";
  r->Add(std::move(s));
}

}  // namespace strata::ops
