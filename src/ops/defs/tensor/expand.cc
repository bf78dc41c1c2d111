// Expand (opset 8, 13): broadcasts the input against the shape given by the second input (int64, 1-D), both ways:
// a 1 in the shape keeps the input's dimension, so the output shape is broadcast(input.shape, shape).
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ExpandInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Expand shape"));
  const PartialShape& in = ctx.input_shape(0);
  const PartialShape& ss = ctx.input_shape(1);
  if (ss.rank_known && ss.rank() != 1) return ctx.Error("the shape input must be 1-D, got ", ss.ToString());
  STRATA_ASSIGN_OR_RETURN(auto shape, KnownInts(ctx, 1, "Expand shape"));
  if (!shape) {
    PartialShape out = PartialShape::Unknown();
    if (in.rank_known && ss.rank_known && ss.dims[0].known())
      out = UnknownShape(std::max<int>(in.rank(), static_cast<int>(ss.dims[0].value)));
    ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(ShapeFromDims(*shape, ctx.node(), "Expand shape").status());
  std::vector<Dim> dims(shape->begin(), shape->end());
  auto out = BroadcastPartial(in, PartialShape::Of(std::move(dims)));
  if (!out.ok()) return ctx.Error("cannot expand: ", out.status().message());
  ctx.SetOutput(0, ctx.input_dtype(0), *out);
  return Status::OK();
}

Status ExpandCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.input(1).rank() != 1) return ctx.Error("the shape input must be 1-D, got ", ctx.input(1).shape().ToString());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(ctx.input(1), "Expand shape"));
  STRATA_ASSIGN_OR_RETURN(Shape target, ShapeFromDims(dims, ctx.node(), "Expand shape"));
  auto out = BroadcastShapes(x.shape(), target);
  if (!out.ok()) return ctx.Error("cannot expand: ", out.status().message());
  STRATA_RETURN_IF_ERROR(ShapeFromDims(out->ToVector(), ctx.node(), "Expand output shape").status());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), *out));
  if (y->num_elements() == 0) return Status::OK();
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    StridedGather(StorageOf<S>(x), 0, BroadcastStrides(x.shape(), *out), *out, StorageOf<S>(y));
    return Status::OK();
  });
}

// dX = dY summed over the broadcast dimensions.
Status ExpandGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ReduceGradTo(ctx, ctx.output_grad(0), 0));
  return Status::OK();
}

}  // namespace

void RegisterExpand(OpRegistry* r) {
  OpSchema s;
  s.name = "Expand";
  s.since_version = 8;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = ExpandInfer;
  s.reference = ExpandCompute;
  s.grad = ExpandGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
