// Helpers shared by the training ops (src/ops/defs/train): scalar inputs, the optional gradient scale that
// clipping feeds into every update op, and a counter-based random stream.
#pragma once

#include <cstdint>

#include "ops/op_util.h"

namespace strata::ops::train_ops {

// Reads a one-element float input (lr, grad_scale) as double; `def` when the optional input is absent.
inline StatusOr<double> ScalarInput(const KernelContext& ctx, int i, std::string_view what, double def) {
  if (!ctx.has_input(i)) return def;
  const Tensor& t = ctx.input(i);
  if (t.num_elements() != 1) return ctx.Error(what, " must have one element, got ", t.TypeString());
  auto v = ReadScalar(t, what);
  if (!v.ok()) return ctx.Error(v.status().message());
  return *v;
}

// Every listed input must have input 0's dtype and shape (weights, gradients and slots of one variable).
inline Status CheckLikeInput0(const KernelContext& ctx, std::initializer_list<int> inputs) {
  const Tensor& w = ctx.input(0);
  for (int i : inputs) {
    if (!ctx.has_input(i)) continue;
    const Tensor& t = ctx.input(i);
    if (t.dtype() != w.dtype() || t.shape() != w.shape())
      return ctx.Error("input ", i, " must be ", w.TypeString(), " like the variable, got ", t.TypeString());
  }
  return Status::OK();
}

// Inference for update ops: every output has input 0's type.
inline Status InferUpdate(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && t != DType::kFloat32 && t != DType::kFloat64)
    return ctx.Error("variables must be float32 or float64, got ", DTypeName(t));
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, t, ctx.input_shape(0));
  return Status::OK();
}

// splitmix64: the finaliser used to derive independent uniform draws from (seed, element index).
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) for element i of a stream: a pure function of (seed, i), so any thread split gives the same
// values.
inline double CounterUniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(Mix64(Mix64(seed) ^ (i * 0xD1B54A32D192ED03ULL)) >> 11) * (1.0 / 9007199254740992.0);
}

// Runs fn(begin, end) over n elements in parallel chunks (elementwise update kernels).
void ParallelElements(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace strata::ops::train_ops
