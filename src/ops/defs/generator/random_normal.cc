// RandomNormal and RandomNormalLike (opset 1), in one file because they differ only in where the shape comes
// from: the `shape` attribute, or the input's shape (RandomNormalLike; the input's values are not read). Values are
// normal with `mean` (default 0) and standard deviation `scale` (default 1), of `dtype` (default float32;
// RandomNormalLike defaults to the input's type, which must then be a float type). See random_util.h for seeding.
#include "ops/defs/generator/random_util.h"
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

Status FillNormal(KernelContext& ctx, DType dtype, const Shape& shape) {
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, shape));
  const double mean = ctx.node().GetFloat("mean", 0.0f);
  const double scale = ctx.node().GetFloat("scale", 1.0f);
  NumpyRandom rng(OpSeed(ctx.node()));
  return DispatchFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T& v : y->mutable_values<T>()) v = T(static_cast<ComputeType<T>>(mean + scale * rng.Gauss()));
    return Status::OK();
  });
}

Status RandomNormalInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.node().RequireInts("shape"));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(dims, ctx.node(), "shape"));
  ctx.SetOutput(0, dtype, PartialShape::Of(shape));
  return Status::OK();
}

Status RandomNormalCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.node().RequireInts("shape"));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(dims, ctx.node(), "shape"));
  return FillNormal(ctx, dtype, shape);
}

Status RandomNormalLikeInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input_dtype(0)));
  ctx.SetOutput(0, dtype, ctx.input_shape(0));
  return Status::OK();
}

Status RandomNormalLikeCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input(0).dtype()));
  return FillNormal(ctx, dtype, ctx.input(0).shape());
}

}  // namespace

void RegisterRandomNormal(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomNormal";
  s.min_inputs = 0;
  s.max_inputs = 0;
  s.infer = RandomNormalInfer;
  s.reference = RandomNormalCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

void RegisterRandomNormalLike(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomNormalLike";
  s.infer = RandomNormalLikeInfer;
  s.reference = RandomNormalLikeCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
