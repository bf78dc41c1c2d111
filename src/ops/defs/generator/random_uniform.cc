// RandomUniform and RandomUniformLike (opset 1), in one file because they differ only in where the shape comes
// from: the `shape` attribute, or the input's shape (RandomUniformLike; the input's values are not read). Values are
// uniform in [low, high) (defaults 0 and 1) of `dtype` (default float32; RandomUniformLike defaults to the input's
// type, which must then be a float type). See random_util.h for seeding.
#include "ops/defs/generator/random_util.h"

namespace strata::ops {
namespace {

const RandomDistribution kUniform{"low", 0.0f, "high", 1.0f, [](double a, double b, NumpyRandom& rng) { return a + (b - a) * rng.Uniform(); }};

Status RandomUniformCompute(KernelContext& ctx) { return RandomFromShapeCompute(ctx, kUniform); }
Status RandomUniformLikeCompute(KernelContext& ctx) { return RandomLikeCompute(ctx, kUniform); }

}  // namespace

void RegisterRandomUniform(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomUniform";
  s.min_inputs = 0;
  s.max_inputs = 0;
  s.infer = RandomFromShapeInfer;
  s.reference = RandomUniformCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

void RegisterRandomUniformLike(OpRegistry* r) {
  OpSchema s;
  s.name = "RandomUniformLike";
  s.infer = RandomLikeInfer;
  s.reference = RandomUniformLikeCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
