// Random numbers for the random ops (RandomUniform/Normal(Like), Bernoulli, Multinomial, Dropout).
//
// A seeded op draws from MT19937 seeded the way numpy.random.seed(s) seeds its legacy RandomState, with numpy's
// conversions (53-bit uniform doubles, the polar Gaussian with one cached value). So a seeded op is reproducible run
// after run, and `seed=s` draws the stream numpy.random.seed(s) would (this is what ONNX's Dropout test data was
// generated with). An unseeded op gets a fresh seed on every run.
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace strata::ops {

class NumpyRandom {
 public:
  explicit NumpyRandom(uint32_t seed);
  uint32_t NextU32();
  // Uniform in [0, 1) with 53 random bits (numpy random_sample).
  double Uniform();
  // Standard normal (numpy's legacy gauss: polar Box-Muller, the second value cached).
  double Gauss();

 private:
  void Refill();
  uint32_t mt_[624];
  int pos_ = 624;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

// The seed of a random op: its `seed` attribute (float, or int for Dropout) converted to an integer and truncated
// to 32 bits, or a fresh seed (different on every call) when the attribute is absent.
uint32_t OpSeed(const Node& node);

// Output dtype of a random op: the ONNX `dtype` attribute when present, else `def`; must be a float type.
StatusOr<DType> RandomDtype(const Node& node, DType def);

// The kernels shared by RandomUniform/RandomNormal (shape from the `shape` attribute) and their *Like forms (shape,
// and default dtype, from input 0). A distribution is a pair of attribute-derived parameters (a, b) and a `draw`
// turning them and the generator into one value: uniform is a + (b - a) * U, normal is a + b * G.
struct RandomDistribution {
  const char* a_name;
  float a_default;
  const char* b_name;
  float b_default;
  double (*draw)(double a, double b, NumpyRandom& rng);
};
Status RandomFromShapeInfer(InferContext& ctx);
Status RandomLikeInfer(InferContext& ctx);
Status RandomFromShapeCompute(KernelContext& ctx, const RandomDistribution& dist);
Status RandomLikeCompute(KernelContext& ctx, const RandomDistribution& dist);

}  // namespace strata::ops
