// RandomNormal and RandomNormalLike (opset 1), in one file because they differ only in where the shape comes
// from: the `shape` attribute, or the input's shape (RandomNormalLike; the input's values are not read). Values are
// normal with `mean` (default 0) and standard deviation `scale` (default 1), of `dtype` (default float32;
// RandomNormalLike defaults to the input's type, which must then be a float type). See random_util.h for seeding.
#include "ops/defs/generator/random_util.h"

namespace strata::ops {
namespace {

const RandomDistribution kNormal{"mean", 0.0f, "scale", 1.0f, [](double a, double b, NumpyRandom& rng) { return a + b * rng.Gauss(); }};

Status RandomNormalCompute(KernelContext& ctx) { return RandomFromShapeCompute(ctx, kNormal); }
Status RandomNormalLikeCompute(KernelContext& ctx) { return RandomLikeCompute(ctx, kNormal); }

}  // namespace

void RegisterRandomNormal(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomNormal";
  s.min_inputs = 0;
  s.max_inputs = 0;
  s.infer = RandomFromShapeInfer;
  s.reference = RandomNormalCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

void RegisterRandomNormalLike(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomNormalLike";
  s.infer = RandomLikeInfer;
  s.reference = RandomNormalLikeCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
