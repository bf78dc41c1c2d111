// What the ai.onnx.preview.training update ops (Adagrad, Adam, Momentum) share: their inputs are R (learning rate,
// float scalar), T (update count, int64 scalar), then `groups` groups of n tensors each (X..., G..., and the optimizer
// state), and their outputs `outs` groups of n tensors (X_new..., state_new...), each shaped like an input group.
// The update math runs per element in double precision.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops::optimizer {

inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

struct Step {
  double r = 0;
  int64_t t = 0;
  int n = 0;                     // tensors updated
  std::vector<int> out_groups;   // the input group whose type each output group has
};

// The number of tensors n from the input and output counts; InvalidArgument when they do not fit.
inline StatusOr<int> TensorCount(const Node& node, int num_inputs, int num_outputs, int groups, int outs) {
  const int n = (num_inputs - 2) / groups;
  if (num_inputs < 2 + groups || (num_inputs - 2) % groups != 0 || num_outputs != outs * n)
    return InvalidArgumentError(node.Describe(), ": expected 2 + ", groups, " * n inputs and ", outs,
                                " * n outputs, got ", num_inputs, " inputs and ", num_outputs, " outputs");
  return n;
}

inline Status InferUpdate(InferContext& ctx, int groups, const std::vector<int>& out_groups) {
  STRATA_ASSIGN_OR_RETURN(int n, TensorCount(ctx.node(), ctx.num_inputs(), ctx.num_outputs(), groups,
                                             static_cast<int>(out_groups.size())));
  for (int i = 2; i < ctx.num_inputs(); ++i)
    if (!IsFloatingPoint(ctx.input_dtype(i)) && ctx.input_dtype(i) != DType::kUndefined)
      return ctx.Error("input ", i, " must be a float tensor, got ", DTypeName(ctx.input_dtype(i)));
  for (size_t j = 0; j < out_groups.size(); ++j)
    for (int k = 0; k < n; ++k) {
      const int in = 2 + out_groups[j] * n + k;
      ctx.SetOutput(static_cast<int>(j) * n + k, ctx.input_dtype(in), ctx.input_shape(in));
    }
  return Status::OK();
}

inline StatusOr<Step> ReadStep(KernelContext& ctx, int groups, const std::vector<int>& out_groups) {
  Step s;
  STRATA_ASSIGN_OR_RETURN(s.n, TensorCount(ctx.node(), ctx.num_inputs(), ctx.num_outputs(), groups,
                                           static_cast<int>(out_groups.size())));
  s.out_groups = out_groups;
  if (!IsFloatingPoint(ctx.input(0).dtype()) || ctx.input(0).num_elements() != 1)
    return ctx.Error("R must be a float scalar, got ", ctx.input(0).TypeString());
  STRATA_ASSIGN_OR_RETURN(s.r, ReadScalar(ctx.input(0), "R"));
  if (ctx.input(1).dtype() != DType::kInt64 || ctx.input(1).num_elements() != 1)
    return ctx.Error("T must be an int64 scalar, got ", ctx.input(1).TypeString());
  s.t = ctx.input(1).data<int64_t>()[0];
  return s;
}

// For each tensor k and element e: fills v[g] with input group g's element, calls fn(v) which leaves output group j's
// value in v[j], and stores it. Every group's tensor k must have the same shape and a float type.
template <typename F>
Status ForEachTensor(KernelContext& ctx, const Step& s, F&& fn) {
  const int groups = (ctx.num_inputs() - 2) / s.n;
  for (int k = 0; k < s.n; ++k) {
    std::vector<std::vector<double>> in(groups);
    const Shape& shape = ctx.input(2 + k).shape();
    for (int g = 0; g < groups; ++g) {
      const Tensor& t = ctx.input(2 + g * s.n + k);
      if (!IsFloatingPoint(t.dtype()) || t.shape() != shape)
        return ctx.Error("input ", 2 + g * s.n + k, " must be a float tensor of shape ", shape.ToString(), ", got ",
                         t.TypeString());
      in[g].resize(static_cast<size_t>(t.num_elements()));
      STRATA_RETURN_IF_ERROR(DispatchFloat(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (size_t e = 0; e < in[g].size(); ++e) in[g][e] = static_cast<double>(ToCompute(t.data<T>()[e]));
        return Status::OK();
      }));
    }
    const size_t count = static_cast<size_t>(shape.NumElements());
    std::vector<double> v(groups);
    std::vector<std::vector<double>> out(s.out_groups.size(), std::vector<double>(count));
    for (size_t e = 0; e < count; ++e) {
      for (int g = 0; g < groups; ++g) v[g] = in[g][e];
      fn(v);
      for (size_t j = 0; j < out.size(); ++j) out[j][e] = v[j];
    }
    for (size_t j = 0; j < out.size(); ++j) {
      const int oi = static_cast<int>(j) * s.n + k;
      if (!ctx.output_wanted(oi)) continue;
      const DType dt = ctx.input(2 + s.out_groups[j] * s.n + k).dtype();
      STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(oi, dt, shape));
      STRATA_RETURN_IF_ERROR(DispatchFloat(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (size_t e = 0; e < count; ++e) y->data<T>()[e] = FromCompute<T>(static_cast<ComputeType<T>>(out[j][e]));
        return Status::OK();
      }));
    }
  }
  return Status::OK();
}

}  // namespace strata::ops::optimizer
