// Smooth activations, one Register function each (they differ only in the function applied):
//   Sigmoid (opset 6), Tanh (6), Softplus (1), Softsign (1), Mish (18), Gelu (20; attribute approximate "none" or
//   "tanh"). Float inputs; 16-bit floats compute in float. Mish and Gelu postdate opset 17 but exporters emit them, so
//   they are accepted in models of any opset.
// strata.Swish(X) = X * sigmoid(X) (SiLU; Keras's swish activation) and strata.SwishGrad(dY, X) = dY * (s + X s (1 - s)),
// s = sigmoid(X): training graphs write them for Mul(x, Sigmoid(x)) (train/training_graph.cc), one pass over the
// activation each way where the pair and its gradient chain (Mul, Mul, SigmoidGrad, Sum) made four.
// Sigmoid and Softplus use forms that cannot overflow: sigmoid(x) = 1/(1+e) or e/(1+e) with e = exp(-|x|), and
// softplus(x) = max(x, 0) + log1p(exp(-|x|)).
#include <cmath>

#include "ops/defs/grad/activation_grad.h"
#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

template <typename C>
C StableSigmoid(C x) {
  const C e = std::exp(-std::fabs(x));
  const C r = C(1) / (C(1) + e);
  return x >= C(0) ? r : e * r;
}

template <typename C>
C StableSoftplus(C x) {
  return (x > C(0) ? x : C(0)) + std::log1p(std::exp(-std::fabs(x)));
}

Status SigmoidCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return StableSigmoid(x); });
}

Status SwishCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return x * StableSigmoid(x); });
}

// d/dX of X * s(X) = s + X s (1 - s).
Status SwishGradCompute(KernelContext& ctx) {
  return ActivationGradKernel(ctx, [](auto dy, auto x) {
    using C = decltype(x);
    const C s = StableSigmoid(x);
    return dy * (s + x * s * (C(1) - s));
  });
}

Status TanhCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::tanh(x); });
}

Status SoftplusCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return StableSoftplus(x); });
}

Status SoftsignCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); });
}

Status MishCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return x * std::tanh(StableSoftplus(x)); });
}

StatusOr<bool> GeluTanh(const Node& node) {
  const std::string approx = node.GetString("approximate", "none");
  if (approx == "none") return false;
  if (approx == "tanh") return true;
  return InvalidArgumentError(node.Describe(), ": attribute approximate must be \"none\" or \"tanh\", got \"", approx,
                              "\"");
}

Status GeluCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(bool tanh_form, GeluTanh(ctx.node()));
  if (tanh_form) {
    return ew::UnaryFloat(ctx, [](auto x) {
      using C = decltype(x);
      const C k = static_cast<C>(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + static_cast<C>(0.044715) * x * x * x)));
    });
  }
  return ew::UnaryFloat(ctx, [](auto x) {
    using C = decltype(x);
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));  // x / sqrt(2)
  });
}

Status InferGelu(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(GeluTanh(ctx.node()).status());
  return ew::InferUnary<TypeClass::kFloat>(ctx);
}

// ---- gradients ----

Status SigmoidGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "SigmoidGrad", {ctx.output_grad(0), Out(ctx, 0)}, {}, graph::kStrataDomain));
  return Status::OK();
}

Status SwishGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "SwishGrad", {ctx.output_grad(0), In(ctx, 0)}, {}, graph::kStrataDomain));
  return Status::OK();
}

// SwishGrad is linear in dY: d/d(dY) = SwishGrad(ddX, X). d/dX = ddX dY f''(X), f'' = s (1 - s) (2 + X (1 - 2 s)).
Status SwishGradGrad(GradContext& ctx) {
  const std::string ddx = ctx.output_grad(0);
  const std::string& dy = In(ctx, 0);
  const std::string& x = In(ctx, 1);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, Emit1(ctx, "SwishGrad", {ddx, x}, {}, graph::kStrataDomain));
  if (ctx.needs_input_grad(1)) {
    const DType t = InType(ctx, 1);
    const std::string s = Emit1(ctx, "Sigmoid", {x});
    const std::string one = ScalarConst(ctx, t, 1.0);
    const std::string s1s = EMul(ctx, s, ESub(ctx, one, s));
    const std::string inner = EAdd(ctx, ScalarConst(ctx, t, 2.0),
                                   EMul(ctx, x, ESub(ctx, one, EMul(ctx, ScalarConst(ctx, t, 2.0), s))));
    ctx.SetInputGrad(1, EMul(ctx, EMul(ctx, ddx, dy), EMul(ctx, s1s, inner)));
  }
  return Status::OK();
}

Status TanhGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "TanhGrad", {ctx.output_grad(0), Out(ctx, 0)}, {}, graph::kStrataDomain));
  return Status::OK();
}

Status GeluGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "GeluGrad", {ctx.output_grad(0), In(ctx, 0)}, CopyAttrs(ctx.node(), {"approximate"}),
                            graph::kStrataDomain));
  return Status::OK();
}

// softplus' = sigmoid
Status SoftplusGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), Emit1(ctx, "Sigmoid", {In(ctx, 0)})));
  return Status::OK();
}

// softsign' = 1 / (1 + |x|)^2
Status SoftsignGrad(GradContext& ctx) {
  const std::string d = EAdd(ctx, ScalarConst(ctx, InType(ctx, 0), 1.0), Emit1(ctx, "Abs", {In(ctx, 0)}));
  ctx.SetInputGrad(0, EDiv(ctx, ctx.output_grad(0), EMul(ctx, d, d)));
  return Status::OK();
}

// mish' = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x), sp = softplus(x)
Status MishGrad(GradContext& ctx) {
  const std::string& x = In(ctx, 0);
  const std::string t = Emit1(ctx, "Tanh", {Emit1(ctx, "Softplus", {x})});
  const std::string one = ScalarConst(ctx, InType(ctx, 0), 1.0);
  const std::string rest = EMul(ctx, EMul(ctx, x, ESub(ctx, one, EMul(ctx, t, t))), Emit1(ctx, "Sigmoid", {x}));
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), EAdd(ctx, t, rest)));
  return Status::OK();
}

OpSchema Smooth(const char* name, int since_version, ComputeFn fn, GradFn grad,
                InferFn infer = ew::InferUnary<TypeClass::kFloat>) {
  return WithGrad(ew::MakeSchema(name, since_version, 1, 1, infer, fn), grad);
}

}  // namespace

void RegisterGelu(OpRegistry* r) { r->Add(Smooth("Gelu", 20, GeluCompute, GeluGrad, InferGelu)); }
void RegisterMish(OpRegistry* r) { r->Add(Smooth("Mish", 18, MishCompute, MishGrad)); }
void RegisterSigmoid(OpRegistry* r) { r->Add(Smooth("Sigmoid", 6, SigmoidCompute, SigmoidGrad)); }
void RegisterSoftplus(OpRegistry* r) { r->Add(Smooth("Softplus", 1, SoftplusCompute, SoftplusGrad)); }
void RegisterSoftsign(OpRegistry* r) { r->Add(Smooth("Softsign", 1, SoftsignCompute, SoftsignGrad)); }
void RegisterSwish(OpRegistry* r) {
  OpSchema s = Smooth("Swish", 1, SwishCompute, SwishGrad);
  s.domain = "strata";
  r->Add(std::move(s));
}
void RegisterSwishGrad(OpRegistry* r) { r->Add(ActivationGradSchema("SwishGrad", SwishGradCompute, SwishGradGrad)); }
void RegisterTanh(OpRegistry* r) { r->Add(Smooth("Tanh", 6, TanhCompute, TanhGrad)); }

}  // namespace strata::ops
