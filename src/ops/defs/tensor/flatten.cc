// Flatten (opset 1, 9, 11, 13): reshapes the input to 2-D [d0*...*d(axis-1), d(axis)*...*d(n-1)]. axis is in
// [-rank, rank] (negative values since opset 11; accepted for every opset). The output is a view of the input.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<int> FlattenAxis(const Node& node, int rank) {
  const int64_t axis = node.GetInt("axis", 1);
  if (axis < -rank || axis > rank)
    return InvalidArgumentError(node.Describe(), ": axis ", axis, " is out of range for rank ", rank, " (expected [",
                                -rank, ", ", rank, "])");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The product of dims [from, to): a symbolic dimension survives when it is the only factor other than 1s.
Dim ProductDim(const std::vector<Dim>& dims, int from, int to) {
  int64_t product = 1;
  const Dim* single = nullptr;
  int unknown = 0;
  for (int i = from; i < to; ++i) {
    if (dims[i].known()) {
      product *= dims[i].value;
    } else {
      ++unknown;
      single = &dims[i];
    }
  }
  if (unknown == 0) return Dim(product);
  if (unknown == 1 && product == 1) return *single;
  if (product == 0) return Dim(0);
  return Dim();
}

Status FlattenInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(2));
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(int axis, FlattenAxis(ctx.node(), in.rank()));
  ctx.SetOutput(0, ctx.input_dtype(0),
                PartialShape::Of({ProductDim(in.dims, 0, axis), ProductDim(in.dims, axis, in.rank())}));
  return Status::OK();
}

Status FlattenCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(int axis, FlattenAxis(ctx.node(), x.rank()));
  STRATA_ASSIGN_OR_RETURN(Tensor y, x.Reshaped(Shape{x.shape().Product(0, axis), x.shape().Product(axis, x.rank())}));
  ctx.SetOutput(0, std::move(y));
  return Status::OK();
}

}  // namespace

void RegisterFlatten(OpRegistry* r) {
  OpSchema s;
  s.name = "Flatten";
  s.infer = FlattenInfer;
  s.reference = FlattenCompute;
  s.view_input = 0;
  s.grad = ReshapeBackGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
