// ScatterElements (opset 11, 13, 16 add/mul, 18 max/min) and its deprecated alias Scatter (opset 9, 11; no
// reduction), in one file because they are the same op. output = data, then for every position p of `indices`:
// output[p with the `axis` coordinate replaced by indices[p]] = updates[p] (or combined with it, per `reduction`).
// indices and updates share a shape of data's rank that does not exceed data off the axis. Negative indices count
// from the back; every index is checked. Duplicates with reduction none are applied in order.
#include "ops/defs/tensor/scatter_reduce.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ScatterElementsInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "ScatterElements indices"));
  STRATA_RETURN_IF_ERROR(ParseScatterReduction(ctx.node()).status());
  if (ctx.input_dtype(2) != DType::kUndefined && ctx.input_dtype(2) != ctx.input_dtype(0))
    return ctx.Error("updates are ", DTypeName(ctx.input_dtype(2)), " but data is ", DTypeName(ctx.input_dtype(0)));
  const PartialShape& data = ctx.input_shape(0);
  const PartialShape& idx = ctx.input_shape(1);
  if (data.rank_known && idx.rank_known && data.rank() != idx.rank())
    return ctx.Error("indices ", idx.ToString(), " must have the rank of data ", data.ToString());
  ctx.SetOutput(0, ctx.input_dtype(0), data);
  return Status::OK();
}

Status ScatterElementsCompute(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int rank = data.rank();
  STRATA_ASSIGN_OR_RETURN(ScatterReduction red, ParseScatterReduction(ctx.node()));
  if (rank == 0 || indices.rank() != rank)
    return ctx.Error("indices ", indices.shape().ToString(), " must have the rank of data ", data.shape().ToString(),
                     " (>= 1)");
  if (updates.shape() != indices.shape() || updates.dtype() != data.dtype())
    return ctx.Error("updates ", updates.TypeString(), " must have the shape of indices ", indices.shape().ToString(),
                     " and the type of data ", data.TypeString());
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), rank, ctx.node()));
  for (int d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return ctx.Error("indices ", indices.shape().ToString(), " exceed data ", data.shape().ToString(),
                       " in dimension ", d);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(indices, "ScatterElements indices"));
  const int64_t dim = data.dim(axis);
  for (int64_t& i : idx) {
    STRATA_ASSIGN_OR_RETURN(i, NormalizeIndex(i, dim, ctx.node(), ctx.node().op_type));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, data.dtype(), data.shape()));
  STRATA_RETURN_IF_ERROR(CopyElements(data, y));
  std::vector<int64_t> strides = Strides(data.shape());
  const int64_t axis_stride = strides[axis];
  strides[axis] = 0;
  return DispatchScatter(data.dtype(), red, ctx.node(), [&](auto tag, auto combine) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(updates.raw_data());
    T* dst = static_cast<T*>(y->raw_data());
    const std::array<std::vector<int64_t>, 1> st{strides};
    ForEachBroadcast<1>(indices.shape(), st, [&](int64_t p, const std::array<int64_t, 1>& off) {
      combine(dst[off[0] + idx[p] * axis_stride], src[p]);
    });
    return Status::OK();
  });
}

// reduction none: data's gradient is dY with the overwritten elements zeroed, updates' is dY gathered at the indices;
// reduction add: data's is dY, updates' the same gather. (With repeated indices and reduction none only the last
// update reached the output; the gather gives every duplicate the gradient.) mul/max/min are not supported.
Status ScatterElementsGrad(GradContext& ctx) {
  const std::string red = ctx.node().GetString("reduction", "none");
  if (red != "none" && red != "add")
    return UnimplementedError(ctx.node().Describe(), ": the gradient of ScatterElements with reduction ", red,
                              " is not supported");
  const std::string& dy = ctx.output_grad(0);
  const AttributeMap axis = CopyAttrs(ctx.node(), {"axis"});
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(0, red == "add" ? dy
                                     : Emit1(ctx, "ScatterElements",
                                             {dy, In(ctx, 1), ZerosLike(ctx, In(ctx, 2), InType(ctx, 2))}, axis));
  if (ctx.needs_input_grad(2)) ctx.SetInputGrad(2, Emit1(ctx, "GatherElements", {dy, In(ctx, 1)}, axis));
  return Status::OK();
}

}  // namespace

void RegisterScatterElements(OpRegistry* r) {
  OpSchema s;
  s.name = "ScatterElements";
  s.since_version = 11;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = ScatterElementsInfer;
  s.reference = ScatterElementsCompute;
  s.grad = ScatterElementsGrad;
  r->Add(std::move(s));
}

void RegisterScatter(OpRegistry* r) {
  OpSchema s;
  s.name = "Scatter";
  s.since_version = 9;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = ScatterElementsInfer;
  s.reference = ScatterElementsCompute;
  s.grad = ScatterElementsGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
