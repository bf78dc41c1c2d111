// RandomUniform and RandomUniformLike (opset 1), in one file because they differ only in where the shape comes
// from: the `shape` attribute, or the input's shape (RandomUniformLike; the input's values are not read). Values are
// uniform in [low, high) (defaults 0 and 1) of `dtype` (default float32; RandomUniformLike defaults to the input's
// type, which must then be a float type). See random_util.h for seeding.
#include "ops/defs/generator/random_util.h"
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

Status FillUniform(KernelContext& ctx, DType dtype, const Shape& shape) {
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, shape));
  const double low = ctx.node().GetFloat("low", 0.0f);
  const double high = ctx.node().GetFloat("high", 1.0f);
  NumpyRandom rng(OpSeed(ctx.node()));
  return DispatchFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T& v : y->mutable_values<T>()) v = T(static_cast<ComputeType<T>>(low + (high - low) * rng.Uniform()));
    return Status::OK();
  });
}

Status RandomUniformInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.node().RequireInts("shape"));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(dims, ctx.node(), "shape"));
  ctx.SetOutput(0, dtype, PartialShape::Of(shape));
  return Status::OK();
}

Status RandomUniformCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), DType::kFloat32));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.node().RequireInts("shape"));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ShapeFromDims(dims, ctx.node(), "shape"));
  return FillUniform(ctx, dtype, shape);
}

Status RandomUniformLikeInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input_dtype(0)));
  ctx.SetOutput(0, dtype, ctx.input_shape(0));
  return Status::OK();
}

Status RandomUniformLikeCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, RandomDtype(ctx.node(), ctx.input(0).dtype()));
  return FillUniform(ctx, dtype, ctx.input(0).shape());
}

}  // namespace

void RegisterRandomUniform(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomUniform";
  s.min_inputs = 0;
  s.max_inputs = 0;
  s.infer = RandomUniformInfer;
  s.reference = RandomUniformCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

void RegisterRandomUniformLike(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomUniformLike";
  s.infer = RandomUniformLikeInfer;
  s.reference = RandomUniformLikeCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
