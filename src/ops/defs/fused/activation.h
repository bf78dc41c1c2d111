// Activations that the fusion passes fold into the strata-domain fused ops (FusedConv, FusedGemm, FusedMatMul).
//
// An activation is named by its ONNX op type and carries up to two float parameters, written on the fused node as
// the attributes `activation`, `activation_alpha` and `activation_beta`:
//   Relu                 -
//   LeakyRelu            alpha (default 0.01)
//   Elu                  alpha (default 1)
//   Selu                 alpha (default 1.67326319), beta = gamma (default 1.05070102)
//   Sigmoid, Tanh        -
//   HardSigmoid          alpha (default 0.2), beta (default 0.5)
//   HardSwish            -   (x * max(0, min(1, x/6 + 1/2)))
//   Softplus             -   (log(exp(x) + 1))
//   Clip                 alpha = min (default -inf), beta = max (default +inf)
//   Abs, Neg, Sqrt, Exp, Log   -   (unary math, for elementwise chains)
// The reference kernels of the fused ops apply them with ApplyActivation; the oneDNN kernels map them to eltwise
// post-ops. One known difference: oneDNN's Clip maps NaN to the lower bound where the reference keeps NaN, so a NaN
// reaching a fused Clip (Relu6) comes out as the bound on the fast path.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ops/op.h"

namespace strata::ops {

struct Activation {
  std::string op;  // "" = none
  float alpha = 0;
  float beta = 0;
};

// Whether `op` (an ONNX op type) is one of the activations above.
bool IsFusableActivation(std::string_view op);
// The default alpha/beta of an activation.
void ActivationDefaults(std::string_view op, float* alpha, float* beta);

// The activation an ONNX node computes, when it is one of the above. Clip's min/max (inputs 1 and 2 from opset 11,
// attributes before) must be given as scalar constants: pass them as `clip_min`/`clip_max` (null when omitted).
std::optional<Activation> ActivationOfNode(const Node& node, const Tensor* clip_min, const Tensor* clip_max);

// Reads a fused node's `activation*` attributes (op "" when it has none); InvalidArgument for an unknown one.
StatusOr<Activation> ReadFusedActivation(const Node& node);
// Writes `a` as a fused node's attributes.
void WriteFusedActivation(const Activation& a, AttributeMap* attrs);

// Applies `a` in place to n values.
void ApplyActivation(const Activation& a, float* x, int64_t n);
void ApplyActivation(const Activation& a, double* x, int64_t n);

}  // namespace strata::ops
