// GatherElements (opset 11, 13): out[i0..in] = data[i0..idx..in] where idx = indices[i0..in] replaces the index
// along `axis`. indices has data's rank, and off the axis its dimensions may not exceed data's; the output has the
// shape of indices. Negative indices count from the back; every index is checked.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status GatherElementsInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "GatherElements indices"));
  const PartialShape& data = ctx.input_shape(0);
  const PartialShape& idx = ctx.input_shape(1);
  if (data.rank_known && idx.rank_known && data.rank() != idx.rank())
    return ctx.Error("indices ", idx.ToString(), " must have the rank of data ", data.ToString());
  if (data.rank_known)
    STRATA_RETURN_IF_ERROR(NormalizeAxis(ctx.node().GetInt("axis", 0), data.rank(), ctx.node()).status());
  ctx.SetOutput(0, ctx.input_dtype(0), idx);
  return Status::OK();
}

Status GatherElementsCompute(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int rank = data.rank();
  if (indices.rank() != rank || rank == 0)
    return ctx.Error("indices ", indices.shape().ToString(), " must have the rank of data ", data.shape().ToString(),
                     " (>= 1)");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), rank, ctx.node()));
  for (int d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return ctx.Error("indices ", indices.shape().ToString(), " exceed data ", data.shape().ToString(),
                       " in dimension ", d);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(indices, "GatherElements indices"));
  const int64_t dim = data.dim(axis);
  for (int64_t& i : idx) {
    STRATA_ASSIGN_OR_RETURN(i, NormalizeIndex(i, dim, ctx.node(), "GatherElements"));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, data.dtype(), indices.shape()));
  std::vector<int64_t> strides = Strides(data.shape());
  const int64_t axis_stride = strides[axis];
  strides[axis] = 0;
  return DispatchStorage(data.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(data);
    S* dst = StorageOf<S>(y);
    const std::array<std::vector<int64_t>, 1> st{strides};
    ForEachBroadcast<1>(indices.shape(), st, [&](int64_t o, const std::array<int64_t, 1>& off) {
      dst[o] = src[off[0] + idx[o] * axis_stride];
    });
    return Status::OK();
  });
}

// dX = ScatterElements(zeros, indices, dY, axis, reduction add): repeated indices accumulate.
Status GatherElementsGrad(GradContext& ctx) {
  AttributeMap attrs = CopyAttrs(ctx.node(), {"axis"});
  attrs["reduction"] = Attribute::String("add");
  ctx.SetInputGrad(
      0, Emit1(ctx, "ScatterElements", {ZerosLike(ctx, In(ctx, 0), InType(ctx, 0)), In(ctx, 1), ctx.output_grad(0)},
               std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterGatherElements(OpRegistry* r) {
  OpSchema s;
  s.name = "GatherElements";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = GatherElementsInfer;
  s.reference = GatherElementsCompute;
  s.grad = GatherElementsGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
