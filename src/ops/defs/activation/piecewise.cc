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
#include "ops/grad_util.h"

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

// ---- gradients: dX = dY * f'(x), with the branch chosen on X (or Y where that is equivalent) ----

std::string Const(GradContext& ctx, double v) { return ScalarConst(ctx, InType(ctx, 0), v); }
std::string Cmp(GradContext& ctx, const char* op, const std::string& a, double b) {
  return Emit1(ctx, op, {a, Const(ctx, b)});
}

Status LeakyReluGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const std::string alpha = Const(ctx, ctx.node().GetFloat("alpha", 0.01f));
  ctx.SetInputGrad(0, EWhere(ctx, Cmp(ctx, "Less", In(ctx, 0), 0), EMul(ctx, dy, alpha), dy));
  return Status::OK();
}

// x < 0: y = alpha (e^x - 1), y' = y + alpha.
Status EluGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const std::string alpha = Const(ctx, ctx.node().GetFloat("alpha", 1.0f));
  ctx.SetInputGrad(0, EWhere(ctx, Cmp(ctx, "Less", In(ctx, 0), 0), EMul(ctx, dy, EAdd(ctx, Out(ctx, 0), alpha)), dy));
  return Status::OK();
}

// x <= 0: y = gamma alpha (e^x - 1), y' = y + gamma alpha; x > 0: y' = gamma.
Status SeluGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const double alpha = ctx.node().GetFloat("alpha", kSeluAlpha), gamma = ctx.node().GetFloat("gamma", kSeluGamma);
  const std::string neg = EMul(ctx, dy, EAdd(ctx, Out(ctx, 0), Const(ctx, static_cast<float>(alpha * gamma))));
  const std::string pos = EMul(ctx, dy, Const(ctx, static_cast<float>(gamma)));
  ctx.SetInputGrad(0, EWhere(ctx, Cmp(ctx, "LessOrEqual", In(ctx, 0), 0), neg, pos));
  return Status::OK();
}

// x < 0: y = alpha (e^(x/alpha) - 1), y' = y / alpha + 1.
Status CeluGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const std::string alpha = Const(ctx, ctx.node().GetFloat("alpha", 1.0f));
  const std::string neg = EMul(ctx, dy, EAdd(ctx, EDiv(ctx, Out(ctx, 0), alpha), Const(ctx, 1)));
  ctx.SetInputGrad(0, EWhere(ctx, Cmp(ctx, "Less", In(ctx, 0), 0), neg, dy));
  return Status::OK();
}

// Passes where 0 < alpha x + beta < 1 (the output is not clamped), scaled by alpha: one strata.HardSigmoidGrad.
Status HardSigmoidGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "HardSigmoidGrad", {ctx.output_grad(0), Out(ctx, 0)},
                            {{"alpha", graph::Attribute::Float(ctx.node().GetFloat("alpha", 0.2f))}},
                            graph::kStrataDomain));
  return Status::OK();
}

// y' = 0 for x <= -3, 1 for x >= 3, x / 3 + 1/2 between: one strata.HardSwishGrad.
Status HardSwishGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "HardSwishGrad", {ctx.output_grad(0), In(ctx, 0)}, {}, graph::kStrataDomain));
  return Status::OK();
}

Status ThresholdedReluGrad(GradContext& ctx) {
  const std::string above = Cmp(ctx, "Greater", In(ctx, 0), ctx.node().GetFloat("alpha", 1.0f));
  ctx.SetInputGrad(0, EWhere(ctx, above, ctx.output_grad(0), Const(ctx, 0)));
  return Status::OK();
}

// Passes outside [-lambd, lambd].
Status ShrinkGrad(GradContext& ctx) {
  const std::string outside = Cmp(ctx, "Greater", Emit1(ctx, "Abs", {In(ctx, 0)}), ctx.node().GetFloat("lambd", 0.5f));
  ctx.SetInputGrad(0, EWhere(ctx, outside, ctx.output_grad(0), Const(ctx, 0)));
  return Status::OK();
}

OpSchema Piecewise(const char* name, int since_version, ComputeFn fn, GradFn grad,
                   InferFn infer = ew::InferUnary<TypeClass::kFloat>) {
  return WithGrad(ew::MakeSchema(name, since_version, 1, 1, infer, fn), grad);
}

}  // namespace

void RegisterCelu(OpRegistry* r) { r->Add(Piecewise("Celu", 12, CeluCompute, CeluGrad, InferCelu)); }
void RegisterElu(OpRegistry* r) { r->Add(Piecewise("Elu", 6, EluCompute, EluGrad)); }
void RegisterHardSigmoid(OpRegistry* r) { r->Add(Piecewise("HardSigmoid", 6, HardSigmoidCompute, HardSigmoidGrad)); }
void RegisterHardSwish(OpRegistry* r) { r->Add(Piecewise("HardSwish", 14, HardSwishCompute, HardSwishGrad)); }
void RegisterLeakyRelu(OpRegistry* r) { r->Add(Piecewise("LeakyRelu", 6, LeakyReluCompute, LeakyReluGrad)); }
void RegisterSelu(OpRegistry* r) { r->Add(Piecewise("Selu", 6, SeluCompute, SeluGrad)); }
void RegisterShrink(OpRegistry* r) {
  r->Add(Piecewise("Shrink", 9, ShrinkCompute, ShrinkGrad, ew::InferUnary<TypeClass::kNumeric>));
}
void RegisterThresholdedRelu(OpRegistry* r) {
  r->Add(Piecewise("ThresholdedRelu", 10, ThresholdedReluCompute, ThresholdedReluGrad));
}

}  // namespace strata::ops
