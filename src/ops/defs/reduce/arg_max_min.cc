// ArgMax and ArgMin (opset 1, 11: negative axis, 12: select_last_index, 13: bfloat16), one table row each: the
// int64 index of the largest/smallest element along `axis` (default 0), the first one on ties unless
// select_last_index=1. NaN counts as the extreme value (numpy's argmax/argmin return the first NaN). An empty axis
// has no extreme element and gives InvalidArgument unless the output itself is empty.
#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {
namespace {

struct ArgAttrs {
  int axis = 0;
  bool keepdims = true;
  bool last = false;
};

StatusOr<ArgAttrs> ParseArgAttrs(const Node& node, int rank) {
  if (rank == 0) return InvalidArgumentError(node.Describe(), ": the input must have rank >= 1, got a scalar");
  ArgAttrs a;
  STRATA_ASSIGN_OR_RETURN(a.axis, NormalizeAxis(node.GetInt("axis", 0), rank, node));
  a.keepdims = node.GetInt("keepdims", 1) != 0;
  a.last = node.GetInt("select_last_index", 0) != 0;
  if (a.last && node.opset < 12)
    return InvalidArgumentError(node.Describe(), ": select_last_index needs opset 12, the node has opset ", node.opset);
  return a;
}

Status ArgInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t) && !IsInteger(t))
    return ctx.Error("input must be a number tensor, got ", DTypeName(t));
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, DType::kInt64, PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(ArgAttrs a, ParseArgAttrs(ctx.node(), in.rank()));
  std::vector<Dim> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (i != a.axis)
      dims.push_back(in.dims[i]);
    else if (a.keepdims)
      dims.emplace_back(1);
  }
  ctx.SetOutput(0, DType::kInt64, PartialShape::Of(std::move(dims)));
  return Status::OK();
}

// Whether v replaces the current best b.
template <bool kMax, typename C>
inline bool Better(C v, C b, bool last) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return last && std::isnan(v);
    if (std::isnan(v)) return true;
  }
  if (kMax) return last ? v >= b : v > b;
  return last ? v <= b : v < b;
}

template <bool kMax, typename T>
void ArgScan(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool last) {
  using C = ComputeType<T>;
  std::vector<C> best(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* base = x + o * n * inner;
    int64_t* idx = out + o * inner;
    for (int64_t j = 0; j < inner; ++j) {
      best[j] = ToCompute(base[j]);
      idx[j] = 0;
    }
    for (int64_t i = 1; i < n; ++i) {
      const T* row = base + i * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const C v = ToCompute(row[j]);
        if (Better<kMax>(v, best[j], last)) {
          best[j] = v;
          idx[j] = i;
        }
      }
    }
  }
}

template <bool kMax>
Status ArgCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  STRATA_ASSIGN_OR_RETURN(ArgAttrs a, ParseArgAttrs(ctx.node(), s.rank()));
  Shape out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i != a.axis)
      out.PushBack(s[i]);
    else if (a.keepdims)
      out.PushBack(1);
  }
  const int64_t outer = s.Product(0, a.axis), n = s[a.axis], inner = s.Product(a.axis + 1, s.rank());
  if (n == 0 && outer * inner != 0)
    return ctx.Error("cannot take the ", kMax ? "ArgMax" : "ArgMin", " of an empty axis ", a.axis, " (input shape ",
                     s.ToString(), ")");
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt64, out));
  if (y->num_elements() == 0) return Status::OK();
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ArgScan<kMax>(x.data<T>(), y->data<int64_t>(), outer, n, inner, a.last);
    return Status::OK();
  });
}

OpSchema ArgSchema(const char* name, ComputeFn fn) {
  OpSchema s;
  s.name = name;
  s.since_version = 1;
  s.infer = ArgInfer;
  s.reference = fn;
  s.no_grad_reason = "integer (index) output";
  return s;
}

}  // namespace

void RegisterArgMax(OpRegistry* r) { r->Add(ArgSchema("ArgMax", ArgCompute<true>)); }
void RegisterArgMin(OpRegistry* r) { r->Add(ArgSchema("ArgMin", ArgCompute<false>)); }

}  // namespace strata::ops
