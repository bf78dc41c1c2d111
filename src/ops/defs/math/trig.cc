// Trigonometric and hyperbolic functions, one Register function per op (they differ only in the function applied):
//   Sin, Cos, Tan, Asin, Acos, Atan (opset 7), Sinh, Cosh, Asinh, Acosh, Atanh (opset 9).
// Float inputs only (float16/bfloat16 compute in float); out-of-domain inputs give NaN, as numpy does.
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"

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

void AddTrig(OpRegistry* r, const char* name, int since_version, ComputeFn fn) {
  r->Add(ew::MakeSchema(name, since_version, 1, 1, ew::InferUnary<TypeClass::kFloat>, fn));
}

}  // namespace

void RegisterSin(OpRegistry* r) { AddTrig(r, "Sin", 7, SinCompute); }
void RegisterCos(OpRegistry* r) { AddTrig(r, "Cos", 7, CosCompute); }
void RegisterTan(OpRegistry* r) { AddTrig(r, "Tan", 7, TanCompute); }
void RegisterAsin(OpRegistry* r) { AddTrig(r, "Asin", 7, AsinCompute); }
void RegisterAcos(OpRegistry* r) { AddTrig(r, "Acos", 7, AcosCompute); }
void RegisterAtan(OpRegistry* r) { AddTrig(r, "Atan", 7, AtanCompute); }
void RegisterSinh(OpRegistry* r) { AddTrig(r, "Sinh", 9, SinhCompute); }
void RegisterCosh(OpRegistry* r) { AddTrig(r, "Cosh", 9, CoshCompute); }
void RegisterAsinh(OpRegistry* r) { AddTrig(r, "Asinh", 9, AsinhCompute); }
void RegisterAcosh(OpRegistry* r) { AddTrig(r, "Acosh", 9, AcoshCompute); }
void RegisterAtanh(OpRegistry* r) { AddTrig(r, "Atanh", 9, AtanhCompute); }

}  // namespace strata::ops
