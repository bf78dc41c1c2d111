// Gather (opset 1, 11, 13): out = data indexed along `axis` by `indices` (int32/int64, negative values count from
// the back). Output shape: data.shape[:axis] + indices.shape + data.shape[axis+1:]. Every index is checked.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status GatherInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Gather indices"));
  const PartialShape& data = ctx.input_shape(0);
  const PartialShape& idx = ctx.input_shape(1);
  if (!data.rank_known || !idx.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  if (data.rank() == 0) return ctx.Error("Gather needs data of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), data.rank(), ctx.node()));
  std::vector<Dim> out(data.dims.begin(), data.dims.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.dims.begin() + axis + 1, data.dims.end());
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status GatherCompute(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  if (data.rank() == 0) return ctx.Error("Gather needs data of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), data.rank(), ctx.node()));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(ctx.input(1), "Gather indices"));
  const int64_t dim = data.dim(axis);
  for (int64_t& i : idx) {
    STRATA_ASSIGN_OR_RETURN(i, NormalizeIndex(i, dim, ctx.node(), "Gather"));
  }
  Shape out;
  for (int d = 0; d < axis; ++d) out.PushBack(data.dim(d));
  for (int64_t d : ctx.input(1).shape()) out.PushBack(d);
  for (int d = axis + 1; d < data.rank(); ++d) out.PushBack(data.dim(d));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, data.dtype(), out));
  const int64_t outer = data.shape().Product(0, axis);
  const int64_t inner = data.shape().Product(axis + 1, data.rank());
  const int64_t n = static_cast<int64_t>(idx.size());
  return DispatchStorage(data.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(data);
    S* dst = StorageOf<S>(y);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j) std::copy_n(src + (o * dim + idx[j]) * inner, inner, dst + (o * n + j) * inner);
    return Status::OK();
  });
}

// dX = strata.GatherGrad(dY, indices, Shape(X)): dY scatter-added into zeros along the axis (the Embedding gradient).
Status GatherGradient(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "GatherGrad", {ctx.output_grad(0), In(ctx, 1), Emit1(ctx, "Shape", {In(ctx, 0)})},
                            CopyAttrs(ctx.node(), {"axis"}), graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterGather(OpRegistry* r) {
  OpSchema s;
  s.name = "Gather";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = GatherInfer;
  s.reference = GatherCompute;
  s.grad = GatherGradient;
  r->Add(std::move(s));
}

}  // namespace strata::ops
