// TopK (opset 1: k attribute; 10: k as input 1; 11: largest, sorted, negative axis): the k largest (or smallest)
// elements along `axis` (default -1) and their int64 indices. Equal values keep index order (the lower index first),
// as the spec requires; NaN ranks above every number. With sorted=0 the order is unspecified, and the sorted order
// is returned.
#include "ops/defs/reduce/reduce_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

struct TopKAttrs {
  int axis = -1;
  bool largest = true;
};

StatusOr<TopKAttrs> ParseTopKAttrs(const Node& node, int rank) {
  if (rank == 0) return InvalidArgumentError(node.Describe(), ": the input must have rank >= 1, got a scalar");
  TopKAttrs a;
  STRATA_ASSIGN_OR_RETURN(a.axis, NormalizeAxis(node.GetInt("axis", -1), rank, node));
  a.largest = node.GetInt("largest", 1) != 0;
  return a;
}

// k from the attribute (opset < 10) or from input 1; validated against the axis length `n` when n >= 0.
StatusOr<int64_t> ReadK(const Node& node, const Tensor* k_input, int64_t n) {
  int64_t k;
  if (node.opset < 10) {
    STRATA_ASSIGN_OR_RETURN(k, node.RequireInt("k"));
  } else {
    if (k_input == nullptr) return InvalidArgumentError(node.Describe(), ": input K is missing");
    if (k_input->rank() > 1 || k_input->num_elements() != 1)
      return InvalidArgumentError(node.Describe(), ": K must be a 1-D tensor with one element, got shape ",
                                  k_input->shape().ToString());
    auto v = ReadInts(*k_input, "K");
    if (!v.ok()) return InvalidArgumentError(node.Describe(), ": ", v.status().message());
    k = (*v)[0];
  }
  if (k < 0) return InvalidArgumentError(node.Describe(), ": k must be >= 0, got ", k);
  if (n >= 0 && k > n) return InvalidArgumentError(node.Describe(), ": k = ", k, " exceeds the axis length ", n);
  return k;
}

Status TopKInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t) && !IsInteger(t))
    return ctx.Error("input must be a number tensor, got ", DTypeName(t));
  if (ctx.opset() >= 10 && !ctx.has_input(1)) return ctx.Error("input K is missing (required from opset 10)");
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, t, PartialShape::Unknown());
    ctx.SetOutput(1, DType::kInt64, PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(TopKAttrs a, ParseTopKAttrs(ctx.node(), in.rank()));
  std::vector<Dim> dims = in.dims;
  const Dim axis_dim = dims[a.axis];
  dims[a.axis] = Dim();
  if (ctx.opset() < 10 || ctx.input_value(1) != nullptr) {
    STRATA_ASSIGN_OR_RETURN(int64_t k, ReadK(ctx.node(), ctx.input_value(1), axis_dim.known() ? axis_dim.value : -1));
    dims[a.axis] = Dim(k);
  }
  ctx.SetOutput(0, t, PartialShape::Of(dims));
  ctx.SetOutput(1, DType::kInt64, PartialShape::Of(std::move(dims)));
  return Status::OK();
}

// "a ranks above b": NaN above everything, then by value.
template <typename C>
inline bool Above(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
  }
  return a > b;
}

template <typename T>
void TopKTyped(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k,
               bool largest) {
  using C = ComputeType<T>;
  std::vector<C> slice(n);
  std::vector<int64_t> order(n);
  auto before = [&](int64_t i, int64_t j) {
    const C a = slice[i], b = slice[j];
    if (largest ? Above(a, b) : Above(b, a)) return true;
    if (largest ? Above(b, a) : Above(a, b)) return false;
    return i < j;
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* src = x + o * n * inner + j;
      for (int64_t i = 0; i < n; ++i) {
        slice[i] = ToCompute(src[i * inner]);
        order[i] = i;
      }
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      const int64_t dst = o * k * inner + j;
      for (int64_t i = 0; i < k; ++i) {
        values[dst + i * inner] = src[order[i] * inner];
        indices[dst + i * inner] = order[i];
      }
    }
  }
}

Status TopKCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  STRATA_ASSIGN_OR_RETURN(TopKAttrs a, ParseTopKAttrs(ctx.node(), s.rank()));
  STRATA_ASSIGN_OR_RETURN(int64_t k, ReadK(ctx.node(), ctx.has_input(1) ? &ctx.input(1) : nullptr, s[a.axis]));
  Shape out = s;
  out[a.axis] = k;
  STRATA_ASSIGN_OR_RETURN(Tensor * values, ctx.Output(0, x.dtype(), out));
  STRATA_ASSIGN_OR_RETURN(Tensor * indices, ctx.Output(1, DType::kInt64, out));
  if (values->num_elements() == 0) return Status::OK();
  const int64_t outer = s.Product(0, a.axis), n = s[a.axis], inner = s.Product(a.axis + 1, s.rank());
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    TopKTyped(x.data<T>(), values->data<T>(), indices->data<int64_t>(), outer, n, inner, k, a.largest);
    return Status::OK();
  });
}

// The values' gradient goes back to the elements they were taken from (the forward node's indices output).
Status TopKGrad(GradContext& ctx) {
  if (ctx.output_grad(0).empty()) return Status::OK();
  AttributeMap attrs = CopyAttrs(ctx.node(), {"axis"});
  attrs["reduction"] = Attribute::String("add");
  ctx.SetInputGrad(0, Emit1(ctx, "ScatterElements",
                            {ZerosLike(ctx, In(ctx, 0), InType(ctx, 0)), ctx.ForwardOutput(1), ctx.output_grad(0)},
                            std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterTopK(OpRegistry* r) {
  OpSchema s;
  s.name = "TopK";
  s.since_version = 1;
  s.min_inputs = 1;
  s.max_inputs = 2;
  s.min_outputs = 2;
  s.max_outputs = 2;
  s.infer = TopKInfer;
  s.reference = TopKCompute;
  s.grad = TopKGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
