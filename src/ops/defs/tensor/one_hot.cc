// OneHot (opset 9, 11): out has rank(indices) + 1 with a new axis of size depth at `axis` (default -1, the last).
// out[..., j, ...] = values[1] (on) where j == indices[...], else values[0] (off). Indices may be any numeric type
// (floats are truncated); negative indices count from depth (opset 11). Indices outside [-depth, depth - 1] give
// an all-off row, as the spec says. depth is a one-element tensor of any numeric type; values is [off, on].
#include <cmath>

#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

StatusOr<int> OneHotAxis(const Node& node, int in_rank) {
  const int64_t axis = node.GetInt("axis", -1);
  const int out_rank = in_rank + 1;
  if (axis < -out_rank || axis >= out_rank)
    return InvalidArgumentError(node.Describe(), ": axis ", axis, " is out of range for an output of rank ", out_rank,
                                " (expected [", -out_rank, ", ", out_rank - 1, "])");
  return static_cast<int>(axis < 0 ? axis + out_rank : axis);
}

StatusOr<int64_t> ReadDepth(const Node& node, const Tensor& t) {
  auto v = ReadScalar(t, "OneHot depth");
  if (!v.ok()) return InvalidArgumentError(node.Describe(), ": ", v.status().message());
  const double d = std::trunc(*v);
  if (!(d >= 1) || d > 1e15)
    return InvalidArgumentError(node.Describe(), ": depth must be a positive number, got ", *v);
  return static_cast<int64_t>(d);
}

Status OneHotInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  const PartialShape& values = ctx.input_shape(2);
  if (values.rank_known && (values.rank() != 1 || (values.dims[0].known() && values.dims[0].value != 2)))
    return ctx.Error("values must be [off_value, on_value], got shape ", values.ToString());
  const DType dtype = ctx.input_dtype(2);
  if (!in.rank_known) {
    ctx.SetOutput(0, dtype, PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(int axis, OneHotAxis(ctx.node(), in.rank()));
  Dim depth;
  if (const Tensor* d = ctx.input_value(1)) {
    STRATA_ASSIGN_OR_RETURN(depth, ReadDepth(ctx.node(), *d));
  }
  std::vector<Dim> out = in.dims;
  out.insert(out.begin() + axis, depth);
  ctx.SetOutput(0, dtype, PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status OneHotCompute(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  if (values.rank() != 1 || values.dim(0) != 2)
    return ctx.Error("values must be [off_value, on_value], got shape ", values.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(int axis, OneHotAxis(ctx.node(), indices.rank()));
  STRATA_ASSIGN_OR_RETURN(int64_t depth, ReadDepth(ctx.node(), ctx.input(1)));
  // Indices as int64: -1 marks "no on value in this row".
  std::vector<int64_t> idx(indices.num_elements());
  STRATA_RETURN_IF_ERROR(DispatchNumeric(indices.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = indices.data<T>();
    for (size_t i = 0; i < idx.size(); ++i) {
      const double v = std::trunc(static_cast<double>(ToCompute(p[i])));
      idx[i] = v < 0 && v >= -static_cast<double>(depth)  ? static_cast<int64_t>(v) + depth
               : v >= 0 && v < static_cast<double>(depth) ? static_cast<int64_t>(v)
                                                          : -1;
    }
    return Status::OK();
  }));
  std::vector<int64_t> dims = indices.shape().ToVector();
  dims.insert(dims.begin() + axis, depth);
  STRATA_ASSIGN_OR_RETURN(Shape out, ShapeFromDims(dims, ctx.node(), "OneHot output shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, values.dtype(), out));
  // Output viewed as [outer, depth, inner], indices as [outer, inner].
  const int64_t outer = indices.shape().Product(0, axis);
  const int64_t inner = indices.shape().Product(axis, indices.rank());
  return DispatchStorage(values.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S off = StorageOf<S>(values)[0];
    const S on = StorageOf<S>(values)[1];
    S* dst = StorageOf<S>(y);
    std::fill_n(dst, y->num_elements(), off);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t j = idx[o * inner + i];
        if (j >= 0) dst[(o * depth + j) * inner + i] = on;
      }
    return Status::OK();
  });
}

}  // namespace

void RegisterOneHot(OpRegistry* r) {
  OpSchema s;
  s.name = "OneHot";
  s.since_version = 9;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = OneHotInfer;
  s.reference = OneHotCompute;
  s.no_grad_reason = "index op: the output is a selection driven by integer indices";
  r->Add(std::move(s));
}

}  // namespace strata::ops
