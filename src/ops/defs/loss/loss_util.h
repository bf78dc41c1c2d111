// Shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: attributes, shape inference, and the weighted
// gather-and-reduce over log-probabilities laid out as [N, C, D] (D = the product of the trailing dimensions).
//
// loss[n, d] = -weight[t] * logp[n, t, d] with t = target[n, d], and 0 where t == ignore_index. Reduction "sum"
// adds them up, "mean" divides that by the sum of the weights used (ignored positions weigh 0; without a weight
// input every position weighs 1), as the ONNX reference does -- so a mean over nothing is 0/0 = NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops {

enum class LossReduction { kNone, kSum, kMean };

struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

StatusOr<LossAttrs> ParseLossAttrs(const Node& node);

// Checks input [N, C, d1..dk] (k >= 0), target [N, d1..dk] (int32/int64) and the optional weight [C] (input 2), and
// sets output 0 (loss: target's shape, or a scalar when reduced) and, when the node has it, output 1 (same as input).
Status InferLoss(InferContext& ctx);

// The [N, C, D] view of a concrete input, after checking it against target and weight as InferLoss does.
struct LossDims {
  int64_t n = 0, c = 0, d = 1;
};
StatusOr<LossDims> CheckLossShapes(const KernelContext& ctx);

// Computes the loss from log-probabilities `logp` ([N, C, D], any element type readable as double) into output 0 of
// `ctx` (element type T). Fails on a target outside [0, C) that is not ignore_index.
template <typename T, typename S>
Status WeightedNll(KernelContext& ctx, const LossAttrs& attrs, const LossDims& dims, const S* logp) {
  const Tensor& target_t = ctx.input(1);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> target, ReadInts(target_t, "target"));
  const T* weight = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  const int64_t count = dims.n * dims.d;
  Tensor* loss = nullptr;
  if (attrs.reduction == LossReduction::kNone) {
    STRATA_ASSIGN_OR_RETURN(loss, ctx.Output(0, ctx.input(0).dtype(), target_t.shape()));
  } else {
    STRATA_ASSIGN_OR_RETURN(loss, ctx.Output(0, ctx.input(0).dtype(), Shape{}));
  }
  T* out = loss->data<T>();
  double total = 0.0, weight_sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = target[i];
    double l = 0.0, w = 0.0;
    if (!(attrs.has_ignore && t == attrs.ignore_index)) {
      if (t < 0 || t >= dims.c)
        return ctx.Error("target value ", t, " at flat position ", i, " is outside [0, ", dims.c, ")",
                         attrs.has_ignore ? StrCat(" and is not ignore_index ", attrs.ignore_index) : "");
      w = weight != nullptr ? static_cast<double>(ToCompute(weight[t])) : 1.0;
      const int64_t n = i / dims.d, d = i % dims.d;
      l = -w * static_cast<double>(ToCompute(logp[(n * dims.c + t) * dims.d + d]));
    }
    if (attrs.reduction == LossReduction::kNone) out[i] = T(static_cast<ComputeType<T>>(l));
    total += l;
    weight_sum += w;
  }
  if (attrs.reduction == LossReduction::kSum) out[0] = T(static_cast<ComputeType<T>>(total));
  if (attrs.reduction == LossReduction::kMean) out[0] = T(static_cast<ComputeType<T>>(total / weight_sum));
  return Status::OK();
}

}  // namespace strata::ops
