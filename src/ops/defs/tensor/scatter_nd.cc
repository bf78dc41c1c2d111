// ScatterND (opset 11, 13, 16 add/mul, 18 max/min): output = data with slices replaced (or combined, per
// `reduction`) by `updates` at the index tuples in the last dimension of `indices`. updates has shape
// indices.shape[:-1] + data.shape[k:]. Negative indices count from the back; every index is checked. Duplicate
// indices with reduction none are applied in order (the spec leaves the result undefined).
#include "ops/defs/tensor/scatter_reduce.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ScatterNDInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "ScatterND indices"));
  STRATA_RETURN_IF_ERROR(ParseScatterReduction(ctx.node()).status());
  if (ctx.input_dtype(2) != DType::kUndefined && ctx.input_dtype(2) != ctx.input_dtype(0))
    return ctx.Error("updates are ", DTypeName(ctx.input_dtype(2)), " but data is ", DTypeName(ctx.input_dtype(0)));
  const PartialShape& idx = ctx.input_shape(1);
  if (idx.rank() == 0) return ctx.Error("indices must have rank >= 1");
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

// Checks shapes and turns each index tuple into the element offset of its slice.
StatusOr<std::vector<int64_t>> SliceOffsets(const KernelContext& ctx, int64_t* slice) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int q = indices.rank();
  if (q == 0) return ctx.Error("indices must have rank >= 1");
  const int64_t k = indices.dim(q - 1);
  if (k > data.rank())
    return ctx.Error("index tuples have ", k, " entries but data ", data.shape().ToString(), " has rank ", data.rank());
  Shape want;
  for (int i = 0; i < q - 1; ++i) want.PushBack(indices.dim(i));
  for (int i = static_cast<int>(k); i < data.rank(); ++i) want.PushBack(data.dim(i));
  if (updates.shape() != want)
    return ctx.Error("updates have shape ", updates.shape().ToString(), ", expected ", want.ToString(),
                     " (indices.shape[:-1] + data.shape[k:])");
  if (updates.dtype() != data.dtype())
    return ctx.Error("updates are ", DTypeName(updates.dtype()), " but data is ", DTypeName(data.dtype()));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(indices, "ScatterND indices"));
  *slice = data.shape().Product(static_cast<int>(k), data.rank());
  const int64_t tuples = indices.shape().Product(0, q - 1);
  std::vector<int64_t> offsets(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int j = 0; j < k; ++j) {
      STRATA_ASSIGN_OR_RETURN(int64_t i, NormalizeIndex(idx[t * k + j], data.dim(j), ctx.node(), "ScatterND"));
      off = off * data.dim(j) + i;
    }
    offsets[t] = off * *slice;
  }
  return offsets;
}

Status ScatterNDCompute(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(ScatterReduction red, ParseScatterReduction(ctx.node()));
  int64_t slice = 0;
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, SliceOffsets(ctx, &slice));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, data.dtype(), data.shape()));
  STRATA_RETURN_IF_ERROR(CopyElements(data, y));
  const Tensor& updates = ctx.input(2);
  return DispatchScatter(data.dtype(), red, ctx.node(), [&](auto tag, auto combine) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(updates.raw_data());
    T* dst = static_cast<T*>(y->raw_data());
    for (size_t t = 0; t < offsets.size(); ++t)
      for (int64_t j = 0; j < slice; ++j) combine(dst[offsets[t] + j], src[t * slice + j]);
    return Status::OK();
  });
}

// reduction none: data's gradient is dY with the overwritten slices zeroed, updates' is dY gathered at the indices;
// reduction add: data's is dY, updates' the same gather. (With repeated index tuples and reduction none only the
// last update reached the output; the gather gives every duplicate the gradient.) mul/max/min are not supported.
Status ScatterNDGrad(GradContext& ctx) {
  const std::string red = ctx.node().GetString("reduction", "none");
  if (red != "none" && red != "add")
    return UnimplementedError(ctx.node().Describe(), ": the gradient of ScatterND with reduction ", red,
                              " is not supported");
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(
        0, red == "add" ? dy : Emit1(ctx, "ScatterND", {dy, In(ctx, 1), ZerosLike(ctx, In(ctx, 2), InType(ctx, 2))}));
  if (ctx.needs_input_grad(2)) ctx.SetInputGrad(2, Emit1(ctx, "GatherND", {dy, In(ctx, 1)}));
  return Status::OK();
}

}  // namespace

void RegisterScatterND(OpRegistry* r) {
  OpSchema s;
  s.name = "ScatterND";
  s.since_version = 11;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = ScatterNDInfer;
  s.reference = ScatterNDCompute;
  s.grad = ScatterNDGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
