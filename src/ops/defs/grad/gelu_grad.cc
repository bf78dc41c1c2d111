// strata.GeluGrad(dY, X), attribute approximate ("none" or "tanh", as Gelu): the gradient of Gelu from its input.
//   none: d/dx [x Phi(x)] = Phi(x) + x phi(x), Phi the standard normal CDF and phi its density.
//   tanh: with u = k (x + 0.044715 x^3), k = sqrt(2/pi): d/dx [0.5 x (1 + tanh u)]
//         = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2).
#include <cmath>

#include "ops/defs/grad/activation_grad.h"

namespace strata::ops {
namespace {

StatusOr<bool> TanhForm(const Node& node) {
  const std::string approx = node.GetString("approximate", "none");
  if (approx == "none") return false;
  if (approx == "tanh") return true;
  return InvalidArgumentError(node.Describe(), ": attribute approximate must be \"none\" or \"tanh\", got \"", approx,
                              "\"");
}

Status GeluGradCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(bool tanh_form, TanhForm(ctx.node()));
  if (tanh_form) {
    return ActivationGradKernel(ctx, [](auto dy, auto x) {
      using C = decltype(x);
      const C k = static_cast<C>(0.7978845608028654), a = static_cast<C>(0.044715);
      const C t = std::tanh(k * (x + a * x * x * x));
      return dy * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * k * (C(1) + C(3) * a * x * x));
    });
  }
  return ActivationGradKernel(ctx, [](auto dy, auto x) {
    using C = decltype(x);
    const C cdf = C(0.5) * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
    const C pdf = static_cast<C>(0.3989422804014327) * std::exp(C(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  });
}

Status InferGeluGrad(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(TanhForm(ctx.node()).status());
  return InferActivationGrad(ctx);
}

}  // namespace

void RegisterGeluGrad(OpRegistry* r) {
  OpSchema s = ActivationGradSchema("GeluGrad", GeluGradCompute);
  s.infer = InferGeluGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
