// The op harness: one table row = one op call. RunOpCase checks, for the row:
//   1. shape/type inference against what the reference kernel produced;
//   2. the reference kernel against the row's expected outputs (computed independently: by hand, from the ONNX
//      spec's examples, or by numpy), when the row gives them;
//   3. every registered fast kernel that accepts the node, against the reference kernel (per-dtype tolerance);
//   4. the planned executor (Session, optimised and not) against the reference;
//   5. error rows: the expected status code and a message fragment.
// The gradient check (float64 finite differences through graph autodiff) joins it with the training stratum.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/graph.h"

namespace strata::testing {

struct OpCase {
  std::string label;  // shown on failure
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 17;
  graph::AttributeMap attrs;
  std::vector<Tensor> inputs;  // an undefined Tensor is an omitted optional input
  int num_outputs = 1;
  std::vector<Tensor> expected;  // empty: only cross-check kernels and executors
  double rtol = 1e-5;
  double atol = 1e-6;
  // Error rows: the code and a fragment the message must contain.
  StatusCode expect_error = StatusCode::kOk;
  std::string error_substr;
  // Inputs fed as initializers (constants) instead of graph inputs, e.g. shape operands.
  std::vector<int> constant_inputs;
  // A fast kernel this row is about ("dnnl"): the row fails when that kernel declines the node (or, with
  // expect_decline, when it accepts it). Ignored when no kernel of that name is registered for the op (a build
  // without it).
  std::string kernel;
  bool expect_decline = false;
  // When set, that kernel must accept the row and report this Kernel::name() (e.g. "dnnl-winograd" for a convolution
  // that runs Winograd, "dnnl" for one that stays direct).
  std::string kernel_name;
  // SessionOptions::conv_algorithm for the fast kernels and the planned executor.
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;
  // SessionOptions::precision for the fast kernels and the planned executor (bf16 rows set fast_tol_of_max too).
  graph::Precision precision = graph::Precision::kFp32;
  // Fast kernels whose rounding differs by design (Winograd, bfloat16): they are also allowed an absolute error of this
  // much times the largest magnitude of the reference output (0 = only rtol/atol).
  double fast_tol_of_max = 0;
  // Gradient check: the float64 inputs to differentiate with respect to. The harness builds
  // loss = sum_k sum(output_k * R_k) with fixed random R_k, differentiates it through graph autodiff, and compares
  // with central finite differences (step grad_eps) within grad_rtol/grad_atol.
  std::vector<int> grad_inputs;
  double grad_eps = 1e-6;
  double grad_rtol = 1e-5;
  double grad_atol = 1e-7;
};

void RunOpCase(const OpCase& c);

// Runs the row's node once through the fast kernel named c.kernel, created and run directly as RunOpCase does, and
// returns its outputs: an error when no such kernel is registered, or it declines the node or fails. For comparing
// variants of one kernel with each other.
StatusOr<std::vector<Tensor>> RunNamedKernel(const OpCase& c);

// A row for a strata.ChannelsLast node wrapping `op` (of `op_domain`, "" for ONNX) on [N, H, W, C] activations, about
// the fast kernel `kernel` ("dnnl", "cpu"). The reference transposes around the wrapped op's reference kernel.
OpCase ChannelsLastCase(std::string label, std::string op, std::string op_domain, std::vector<Tensor> inputs,
                        graph::AttributeMap attrs, std::string kernel);
// Only the gradient check of a row (RunOpCase calls it when grad_inputs is set).
void CheckGradient(const OpCase& c);

// Compares two tensors: exact for integers, bool and strings; |a-b| <= atol + rtol*|b| for floats (NaN == NaN).
// Returns "" when they match, else the first difference.
std::string CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol);

// Shorthands for building rows.
template <typename T>
Tensor T_(std::vector<T> values, std::vector<int64_t> shape) {
  return Tensor::FromVector<T>(values, Shape(shape));
}
inline Tensor F(std::vector<float> v, std::vector<int64_t> shape) { return T_<float>(std::move(v), std::move(shape)); }
inline Tensor D(std::vector<double> v, std::vector<int64_t> shape) { return T_<double>(std::move(v), std::move(shape)); }
inline Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape) { return T_<int64_t>(std::move(v), std::move(shape)); }
inline Tensor I32(std::vector<int32_t> v, std::vector<int64_t> shape) { return T_<int32_t>(std::move(v), std::move(shape)); }
inline Tensor B(std::vector<bool> v, std::vector<int64_t> shape) { return T_<bool>(std::move(v), std::move(shape)); }
// A float tensor of the given shape filled with a deterministic pseudo-random sequence in [lo, hi).
Tensor RandomF(std::vector<int64_t> shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor Cast(const Tensor& t, DType to);

graph::Attribute AInt(int64_t v);
graph::Attribute AFloat(float v);
graph::Attribute AInts(std::vector<int64_t> v);
graph::Attribute AFloats(std::vector<float> v);
graph::Attribute AString(std::string v);

}  // namespace strata::testing
