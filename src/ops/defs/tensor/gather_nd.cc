// GatherND (opset 11, 12 batch_dims, 13): the last dimension of `indices` (size k) holds index tuples into data's
// dimensions [b, b+k), where b = batch_dims leading dimensions are shared by data and indices. Output shape:
// indices.shape[:-1] + data.shape[b+k:]. Negative indices count from the back; every index is checked.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

struct GatherNDDims {
  int batch_dims = 0;
  int k = 0;
};

// Checks ranks and k against what is known (rank -1 / dim -1 = unknown).
StatusOr<GatherNDDims> CheckGatherND(const Node& node, int data_rank, int idx_rank, int64_t k) {
  GatherNDDims d;
  const int64_t b = node.GetInt("batch_dims", 0);
  if (idx_rank == 0) return InvalidArgumentError(node.Describe(), ": indices must have rank >= 1");
  if (b < 0 || (data_rank >= 0 && b >= data_rank) || (idx_rank >= 0 && b >= idx_rank))
    return InvalidArgumentError(node.Describe(), ": batch_dims ", b, " must be in [0, min(data rank ", data_rank,
                                ", indices rank ", idx_rank, "))");
  if (k >= 0 && data_rank >= 0 && k > data_rank - b)
    return InvalidArgumentError(node.Describe(), ": index tuples have ", k, " entries but data of rank ", data_rank,
                                " has only ", data_rank - b, " dimensions after batch_dims ", b);
  d.batch_dims = static_cast<int>(b);
  d.k = static_cast<int>(k);
  return d;
}

Status GatherNDInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "GatherND indices"));
  const PartialShape& data = ctx.input_shape(0);
  const PartialShape& idx = ctx.input_shape(1);
  const int64_t k = idx.rank_known && idx.rank() > 0 && idx.dims.back().known() ? idx.dims.back().value : -1;
  STRATA_ASSIGN_OR_RETURN(GatherNDDims d, CheckGatherND(ctx.node(), data.rank(), idx.rank(), k));
  if (!data.rank_known || !idx.rank_known || k < 0) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<Dim> out(idx.dims.begin(), idx.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + d.batch_dims + d.k, data.dims.end());
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status GatherNDCompute(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int q = indices.rank();
  const int64_t k = q > 0 ? indices.dim(q - 1) : -1;
  STRATA_ASSIGN_OR_RETURN(GatherNDDims d, CheckGatherND(ctx.node(), data.rank(), q, k));
  const int b = d.batch_dims;
  for (int i = 0; i < b; ++i)
    if (data.dim(i) != indices.dim(i))
      return ctx.Error("batch dimension ", i, " differs: data ", data.shape().ToString(), ", indices ",
                       indices.shape().ToString());
  Shape out;
  for (int i = 0; i < q - 1; ++i) out.PushBack(indices.dim(i));
  for (int i = b + d.k; i < data.rank(); ++i) out.PushBack(data.dim(i));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(indices, "GatherND indices"));
  // Element offsets of each index tuple within its batch, checked.
  const int64_t slice = data.shape().Product(b + d.k, data.rank());
  const int64_t tuples = k > 0 ? static_cast<int64_t>(idx.size()) / k : indices.shape().Product(0, q - 1);
  std::vector<int64_t> offsets(tuples, 0);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int j = 0; j < d.k; ++j) {
      STRATA_ASSIGN_OR_RETURN(int64_t i, NormalizeIndex(idx[t * k + j], data.dim(b + j), ctx.node(), "GatherND"));
      off = off * data.dim(b + j) + i;
    }
    offsets[t] = off * slice;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, data.dtype(), out));
  const int64_t batches = data.shape().Product(0, b);
  const int64_t per_batch_tuples = batches > 0 ? tuples / batches : 0;
  const int64_t batch_size = data.shape().Product(b, data.rank());
  return DispatchStorage(data.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(data);
    S* dst = StorageOf<S>(y);
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t batch = per_batch_tuples > 0 ? t / per_batch_tuples : 0;
      std::copy_n(src + batch * batch_size + offsets[t], slice, dst + t * slice);
    }
    return Status::OK();
  });
}

// dX = ScatterND(zeros, indices, dY, reduction add): repeated tuples accumulate. batch_dims > 0 is not supported.
Status GatherNDGrad(GradContext& ctx) {
  if (ctx.node().GetInt("batch_dims", 0) != 0)
    return UnimplementedError(ctx.node().Describe(), ": the gradient of GatherND with batch_dims is not supported");
  AttributeMap attrs;
  attrs["reduction"] = Attribute::String("add");
  ctx.SetInputGrad(0,
                   Emit1(ctx, "ScatterND", {ZerosLike(ctx, In(ctx, 0), InType(ctx, 0)), In(ctx, 1), ctx.output_grad(0)},
                         std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterGatherND(OpRegistry* r) {
  OpSchema s;
  s.name = "GatherND";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = GatherNDInfer;
  s.reference = GatherNDCompute;
  s.grad = GatherNDGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
