// ConstantOfShape (opset 9): a tensor of the shape given by the 1-D int64 input, filled with the one-element
// `value` attribute (default: float32 0). An empty shape input gives a scalar.
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

StatusOr<Tensor> FillValue(const Node& node) {
  const Attribute* a = node.FindAttr("value");
  if (a == nullptr) return Tensor::Scalar<float>(0.0f);
  if (a->type() != Attribute::Type::kTensor || a->t().num_elements() != 1)
    return InvalidArgumentError(node.Describe(), ": value must be a one-element tensor");
  return a->t();
}

Status ConstantOfShapeInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 0, "ConstantOfShape shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor value, FillValue(ctx.node()));
  const PartialShape& ss = ctx.input_shape(0);
  if (ss.rank_known && ss.rank() != 1) return ctx.Error("the shape input must be 1-D, got ", ss.ToString());
  STRATA_ASSIGN_OR_RETURN(auto dims, KnownInts(ctx, 0, "ConstantOfShape shape"));
  if (dims) {
    STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(*dims, ctx.node(), "shape"));
    ctx.SetOutput(0, value.dtype(), PartialShape::Of(shape));
  } else {
    const bool n_known = ss.rank_known && ss.dims[0].known();
    ctx.SetOutput(0, value.dtype(),
                  n_known ? UnknownShape(static_cast<int>(ss.dims[0].value)) : PartialShape::Unknown());
  }
  return Status::OK();
}

Status ConstantOfShapeCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Tensor value, FillValue(ctx.node()));
  if (ctx.input(0).rank() != 1) return ctx.Error("the shape input must be 1-D, got ", ctx.input(0).shape().ToString());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(ctx.input(0), "ConstantOfShape shape"));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(dims, ctx.node(), "shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, value.dtype(), shape));
  return DispatchStorage(value.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    std::fill_n(StorageOf<S>(y), y->num_elements(), StorageOf<S>(value)[0]);
    return Status::OK();
  });
}

}  // namespace

void RegisterConstantOfShape(OpRegistry* r) {
  OpSchema s;
  s.name = "ConstantOfShape";
  s.since_version = 9;
  s.infer = ConstantOfShapeInfer;
  s.reference = ConstantOfShapeCompute;
  s.no_grad_reason = "the output does not depend on input values";
  r->Add(std::move(s));
}

}  // namespace strata::ops
