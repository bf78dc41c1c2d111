// Shared by strata.SoftmaxGrad and strata.LogSoftmaxGrad (dY, Y) -> dX, attributes axis (default -1) and
// flatten (0: normalised along `axis` alone, opset 13 Softmax; 1: over every axis from `axis` on, opset < 13):
//   Softmax:    dX = Y * (dY - sum(dY * Y))
//   LogSoftmax: dX = dY - exp(Y) * sum(dY)
// with the sums over the normalised elements. Float types (16-bit floats compute in float32).
#pragma once

#include "ops/op.h"

namespace strata::ops {

Status InferSoftmaxGrad(InferContext& ctx);
Status SoftmaxGradCompute(KernelContext& ctx, bool log);
OpSchema SoftmaxGradSchema(const char* name, ComputeFn reference, GradFn grad);

// The attributes of the gradient op for a forward Softmax/LogSoftmax node.
AttributeMap SoftmaxGradAttrs(const Node& forward);

}  // namespace strata::ops
