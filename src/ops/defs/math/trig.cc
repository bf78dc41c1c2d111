// Trigonometric and hyperbolic functions, one Register function per op (they differ only in the function applied):
//   Sin, Cos, Tan, Asin, Acos, Atan (opset 7), Sinh, Cosh, Asinh, Acosh, Atanh (opset 9).
// Float inputs only (float16/bfloat16 compute in float); out-of-domain inputs give NaN, as numpy does. Each has its
// derivative as a gradient.
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

Status SinCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::sin(x); });
}
Status CosCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::cos(x); });
}
Status TanCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::tan(x); });
}
Status AsinCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::asin(x); });
}
Status AcosCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::acos(x); });
}
Status AtanCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::atan(x); });
}
Status SinhCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::sinh(x); });
}
Status CoshCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::cosh(x); });
}
Status AsinhCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::asinh(x); });
}
Status AcoshCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::acosh(x); });
}
Status AtanhCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::atanh(x); });
}

// ---- gradients: dx = dy * f'(x) ----

std::string One(GradContext& ctx) { return ScalarConst(ctx, InType(ctx, 0), 1.0); }
std::string XSquared(GradContext& ctx) { return EMul(ctx, In(ctx, 0), In(ctx, 0)); }
Status SetGrad(GradContext& ctx, const std::string& dfdx) {
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), dfdx));
  return Status::OK();
}
Status SetGradOver(GradContext& ctx, const std::string& denominator, bool negate = false) {
  const std::string dy = negate ? ENeg(ctx, ctx.output_grad(0)) : ctx.output_grad(0);
  ctx.SetInputGrad(0, EDiv(ctx, dy, denominator));
  return Status::OK();
}
Status SinGrad(GradContext& ctx) { return SetGrad(ctx, Emit1(ctx, "Cos", {In(ctx, 0)})); }
Status CosGrad(GradContext& ctx) { return SetGrad(ctx, ENeg(ctx, Emit1(ctx, "Sin", {In(ctx, 0)}))); }
Status TanGrad(GradContext& ctx) { return SetGrad(ctx, EAdd(ctx, One(ctx), EMul(ctx, Out(ctx, 0), Out(ctx, 0)))); }
Status AsinGrad(GradContext& ctx) { return SetGradOver(ctx, Emit1(ctx, "Sqrt", {ESub(ctx, One(ctx), XSquared(ctx))})); }
Status AcosGrad(GradContext& ctx) {
  return SetGradOver(ctx, Emit1(ctx, "Sqrt", {ESub(ctx, One(ctx), XSquared(ctx))}), /*negate=*/true);
}
Status AtanGrad(GradContext& ctx) { return SetGradOver(ctx, EAdd(ctx, One(ctx), XSquared(ctx))); }
Status SinhGrad(GradContext& ctx) { return SetGrad(ctx, Emit1(ctx, "Cosh", {In(ctx, 0)})); }
Status CoshGrad(GradContext& ctx) { return SetGrad(ctx, Emit1(ctx, "Sinh", {In(ctx, 0)})); }
Status AsinhGrad(GradContext& ctx) {
  return SetGradOver(ctx, Emit1(ctx, "Sqrt", {EAdd(ctx, XSquared(ctx), One(ctx))}));
}
Status AcoshGrad(GradContext& ctx) {
  return SetGradOver(ctx, Emit1(ctx, "Sqrt", {ESub(ctx, XSquared(ctx), One(ctx))}));
}
Status AtanhGrad(GradContext& ctx) { return SetGradOver(ctx, ESub(ctx, One(ctx), XSquared(ctx))); }

void AddTrig(OpRegistry* r, const char* name, int since_version, ComputeFn fn, GradFn grad) {
  r->Add(WithGrad(ew::MakeSchema(name, since_version, 1, 1, ew::InferUnary<TypeClass::kFloat>, fn), grad));
}

}  // namespace

void RegisterSin(OpRegistry* r) { AddTrig(r, "Sin", 7, SinCompute, SinGrad); }
void RegisterCos(OpRegistry* r) { AddTrig(r, "Cos", 7, CosCompute, CosGrad); }
void RegisterTan(OpRegistry* r) { AddTrig(r, "Tan", 7, TanCompute, TanGrad); }
void RegisterAsin(OpRegistry* r) { AddTrig(r, "Asin", 7, AsinCompute, AsinGrad); }
void RegisterAcos(OpRegistry* r) { AddTrig(r, "Acos", 7, AcosCompute, AcosGrad); }
void RegisterAtan(OpRegistry* r) { AddTrig(r, "Atan", 7, AtanCompute, AtanGrad); }
void RegisterSinh(OpRegistry* r) { AddTrig(r, "Sinh", 9, SinhCompute, SinhGrad); }
void RegisterCosh(OpRegistry* r) { AddTrig(r, "Cosh", 9, CoshCompute, CoshGrad); }
void RegisterAsinh(OpRegistry* r) { AddTrig(r, "Asinh", 9, AsinhCompute, AsinhGrad); }
void RegisterAcosh(OpRegistry* r) { AddTrig(r, "Acosh", 9, AcoshCompute, AcoshGrad); }
void RegisterAtanh(OpRegistry* r) { AddTrig(r, "Atanh", 9, AtanhCompute, AtanhGrad); }

}  // namespace strata::ops
