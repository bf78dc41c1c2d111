// Helpers for the gradient tables (grad_*_test.cc): float64 inputs for the harness's finite-difference check, drawn
// away from the points where the ops have kinks or ties.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/random.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {

// Uniform float64 values in [lo, hi).
inline Tensor RD(std::vector<int64_t> shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t = Tensor::Empty(DType::kFloat64, Shape(shape));
  Rng rng(seed);
  for (double& v : t.mutable_values<double>()) v = lo + (hi - lo) * rng.UniformDouble();
  return t;
}

// float64 values with magnitude in [0.2, 1] and random sign: no element near 0 (Relu, Abs, LeakyRelu kinks).
inline Tensor AwayD(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::Empty(DType::kFloat64, Shape(shape));
  Rng rng(seed);
  for (double& v : t.mutable_values<double>()) {
    const double m = 0.2 + 0.8 * rng.UniformDouble();
    v = rng.Uniform() < 0.5f ? -m : m;
  }
  return t;
}

// Distinct float64 values in about [-1, 1], at least 2 / n apart (no ties for Max, MaxPool, ReduceMax): a shuffled
// progression.
inline Tensor DistinctD(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::Empty(DType::kFloat64, Shape(shape));
  const int64_t n = t.num_elements();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  double* p = t.data<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = -1.0 + 2.0 * (static_cast<double>(order[i]) + 0.5) / static_cast<double>(n);
  return t;
}

// A row that checks the gradient with respect to `grad_inputs` (float64 inputs) through the harness.
inline void GradRow(OpCase c) {
  if (c.grad_inputs.empty())
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (c.inputs[i].defined() && c.inputs[i].dtype() == DType::kFloat64) c.grad_inputs.push_back(static_cast<int>(i));
  RunOpCase(c);
}

}  // namespace strata::testing
