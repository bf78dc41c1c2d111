// Piecewise activations with float attributes, one Register function each (they differ only in the formula):
//   LeakyRelu (opset 6; alpha 0.01)            x < 0 ? alpha*x : x
//   Elu (6; alpha 1)                           x < 0 ? alpha*(exp(x)-1) : x
//   Selu (6; alpha 1.67326..., gamma 1.0507...) x <= 0 ? gamma*alpha*(exp(x)-1) : gamma*x
//   Celu (12; alpha 1, non-zero)               max(0, x) + min(0, alpha*(exp(x/alpha)-1))
//   HardSigmoid (6; alpha 0.2, beta 0.5)       clamp(alpha*x + beta, 0, 1)
//   HardSwish (14)                             x * clamp(x/6 + 1/2, 0, 1)
//   ThresholdedRelu (10; alpha 1)              x > alpha ? x : 0
//   Shrink (9; bias 0, lambd 0.5)              x < -lambd ? x+bias : x > lambd ? x-bias : 0   (every numeric type)
// Float inputs (Shrink: any numeric type; integers compute in double and convert back). Attributes are read once per
// run; the per-element formulas are selects the compiler can if-convert.
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

Status LeakyReluCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", 0.01f);
  return ew::UnaryFloat(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x < C(0) ? static_cast<C>(alpha) * x : x;
  });
}

Status EluCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", 1.0f);
  return ew::UnaryFloat(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x;
  });
}

Status SeluCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", kSeluAlpha);
  const float gamma = ctx.node().GetFloat("gamma", kSeluGamma);
  return ew::UnaryFloat(ctx, [alpha, gamma](auto x) {
    using C = decltype(x);
    const C g = static_cast<C>(gamma);
    return x <= C(0) ? g * static_cast<C>(alpha) * std::expm1(x) : g * x;
  });
}

Status CheckCeluAlpha(const Node& node) {
  if (node.GetFloat("alpha", 1.0f) == 0.0f)
    return InvalidArgumentError(node.Describe(), ": attribute alpha must be non-zero (the formula divides by it)");
  return Status::OK();
}

Status CeluCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckCeluAlpha(ctx.node()));
  const float alpha = ctx.node().GetFloat("alpha", 1.0f);
  return ew::UnaryFloat(ctx, [alpha](auto x) {
    using C = decltype(x);
    const C a = static_cast<C>(alpha);
    const C neg = a * std::expm1(x / a);
    return (x > C(0) ? x : C(0)) + (neg < C(0) ? neg : C(0));
  });
}

Status InferCelu(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckCeluAlpha(ctx.node()));
  return ew::InferUnary<TypeClass::kFloat>(ctx);
}

template <typename C>
C Clamp01(C v) {
  v = v < C(0) ? C(0) : v;
  return v > C(1) ? C(1) : v;
}

Status HardSigmoidCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", 0.2f);
  const float beta = ctx.node().GetFloat("beta", 0.5f);
  return ew::UnaryFloat(ctx, [alpha, beta](auto x) {
    using C = decltype(x);
    return Clamp01(static_cast<C>(alpha) * x + static_cast<C>(beta));
  });
}

Status HardSwishCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) {
    using C = decltype(x);
    return x * Clamp01(x * (C(1) / C(6)) + C(0.5));
  });
}

Status ThresholdedReluCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", 1.0f);
  return ew::UnaryFloat(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x > static_cast<C>(alpha) ? x : C(0);
  });
}

Status ShrinkCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kNumeric));
  const float bias = ctx.node().GetFloat("bias", 0.0f);
  const float lambd = ctx.node().GetFloat("lambd", 0.5f);
  return DispatchNumeric(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, ComputeType<T>, double>;
    const C b = static_cast<C>(bias), l = static_cast<C>(lambd);
    return UnaryMap<T, T>(ctx, DType::kUndefined, [b, l](T in) {
      const C x = static_cast<C>(static_cast<ComputeType<T>>(in));
      const C y = x < -l ? x + b : (x > l ? x - b : C(0));
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        return T(static_cast<ComputeType<T>>(y));
      } else {
        return ew::SaturateCast<T>(static_cast<double>(y));
      }
    });
  });
}

OpSchema Piecewise(const char* name, int since_version, ComputeFn fn, InferFn infer = ew::InferUnary<TypeClass::kFloat>) {
  return ew::MakeSchema(name, since_version, 1, 1, infer, fn);
}

}  // namespace

void RegisterCelu(OpRegistry* r) { r->Add(Piecewise("Celu", 12, CeluCompute, InferCelu)); }
void RegisterElu(OpRegistry* r) { r->Add(Piecewise("Elu", 6, EluCompute)); }
void RegisterHardSigmoid(OpRegistry* r) { r->Add(Piecewise("HardSigmoid", 6, HardSigmoidCompute)); }
void RegisterHardSwish(OpRegistry* r) { r->Add(Piecewise("HardSwish", 14, HardSwishCompute)); }
void RegisterLeakyRelu(OpRegistry* r) { r->Add(Piecewise("LeakyRelu", 6, LeakyReluCompute)); }
void RegisterSelu(OpRegistry* r) { r->Add(Piecewise("Selu", 6, SeluCompute)); }
void RegisterShrink(OpRegistry* r) {
  r->Add(Piecewise("Shrink", 9, ShrinkCompute, ew::InferUnary<TypeClass::kNumeric>));
}
void RegisterThresholdedRelu(OpRegistry* r) { r->Add(Piecewise("ThresholdedRelu", 10, ThresholdedReluCompute)); }

}  // namespace strata::ops
