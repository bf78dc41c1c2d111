// Elementwise unary math, one row per op (they differ only in the function applied and the dtypes accepted):
//   Abs (numeric), Neg (signed integers, floats), Sign (numeric), Erf (numeric; integers compute in double and
//   truncate), Reciprocal, Exp, Log, Sqrt, Floor, Ceil, Round (floats).
// Round rounds halves to even (numpy.round, the ONNX spec). Integer Abs/Neg wrap on the minimum value instead of
// overflowing. 16-bit floats compute in float.
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

// y = f(x) for any numeric input: floats compute in ComputeType, integers in their own type via `fi`.
template <typename FF, typename FI>
Status UnaryNumeric(KernelContext& ctx, TypeClass cls, FF&& ff, FI&& fi) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, cls));
  return DispatchNumeric(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    if constexpr (std::is_floating_point_v<C>) {
      return UnaryMap<T, T>(ctx, DType::kUndefined, [&](T x) { return T(static_cast<C>(ff(static_cast<C>(x)))); });
    } else {
      return UnaryMap<T, T>(ctx, DType::kUndefined, [&](T x) { return fi(x); });
    }
  });
}

Status AbsCompute(KernelContext& ctx) {
  return UnaryNumeric(
      ctx, TypeClass::kNumeric, [](auto x) { return std::fabs(x); },
      [](auto x) {
        using T = decltype(x);
        if constexpr (std::is_signed_v<T>) return x < 0 ? ew::WrapSub(T(0), x) : x;
        return x;
      });
}

Status NegCompute(KernelContext& ctx) {
  return UnaryNumeric(
      ctx, TypeClass::kSignedOrFloat, [](auto x) { return -x; }, [](auto x) { return ew::WrapSub(decltype(x)(0), x); });
}

Status SignCompute(KernelContext& ctx) {
  return UnaryNumeric(
      ctx, TypeClass::kNumeric,
      [](auto x) { return x > 0 ? decltype(x)(1) : (x < 0 ? decltype(x)(-1) : x); },  // NaN and +-0 stay
      [](auto x) {
        using T = decltype(x);
        return static_cast<T>(static_cast<int>(x > T(0)) - static_cast<int>(x < T(0)));
      });
}

Status ErfCompute(KernelContext& ctx) {
  return UnaryNumeric(
      ctx, TypeClass::kNumeric, [](auto x) { return std::erf(x); },
      [](auto x) { return static_cast<decltype(x)>(std::erf(static_cast<double>(x))); });
}

Status ReciprocalCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return decltype(x)(1) / x; });
}
Status ExpCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::exp(x); });
}
Status LogCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::log(x); });
}
Status SqrtCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::sqrt(x); });
}
Status FloorCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::floor(x); });
}
Status CeilCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::ceil(x); });
}
// std::nearbyint rounds in the current mode, which is round-to-nearest-even unless someone changed it.
Status RoundCompute(KernelContext& ctx) {
  return ew::UnaryFloat(ctx, [](auto x) { return std::nearbyint(x); });
}

constexpr const char* kRoundingNoGrad = "piecewise constant: the gradient is zero almost everywhere";

// Gradients (float inputs; integer inputs are never differentiated).
Status AbsGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), Emit1(ctx, "Sign", {In(ctx, 0)})));
  return Status::OK();
}
Status NegGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ENeg(ctx, ctx.output_grad(0)));
  return Status::OK();
}
// d erf(x) = 2/sqrt(pi) exp(-x^2)
Status ErfGrad(GradContext& ctx) {
  const std::string& x = In(ctx, 0);
  const std::string e = Emit1(ctx, "Exp", {ENeg(ctx, EMul(ctx, x, x))});
  const std::string k = ScalarConst(ctx, InType(ctx, 0), 1.1283791670955126);
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), EMul(ctx, e, k)));
  return Status::OK();
}
// d(1/x) = -y^2
Status ReciprocalGrad(GradContext& ctx) {
  const std::string& y = Out(ctx, 0);
  ctx.SetInputGrad(0, ENeg(ctx, EMul(ctx, ctx.output_grad(0), EMul(ctx, y, y))));
  return Status::OK();
}
Status ExpGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, EMul(ctx, ctx.output_grad(0), Out(ctx, 0)));
  return Status::OK();
}
Status LogGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, EDiv(ctx, ctx.output_grad(0), In(ctx, 0)));
  return Status::OK();
}
// d sqrt(x) = 0.5 / y
Status SqrtGrad(GradContext& ctx) {
  const std::string half = ScalarConst(ctx, InType(ctx, 0), 0.5);
  ctx.SetInputGrad(0, EDiv(ctx, EMul(ctx, ctx.output_grad(0), half), Out(ctx, 0)));
  return Status::OK();
}

}  // namespace

void RegisterAbs(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Abs", 6, 1, 1, ew::InferUnary<TypeClass::kNumeric>, AbsCompute), AbsGrad));
}
void RegisterNeg(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Neg", 6, 1, 1, ew::InferUnary<TypeClass::kSignedOrFloat>, NegCompute), NegGrad));
}
void RegisterSign(OpRegistry* r) {
  r->Add(ew::MakeSchema("Sign", 9, 1, 1, ew::InferUnary<TypeClass::kNumeric>, SignCompute, kRoundingNoGrad));
}
void RegisterErf(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Erf", 9, 1, 1, ew::InferUnary<TypeClass::kNumeric>, ErfCompute), ErfGrad));
}

void RegisterReciprocal(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Reciprocal", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, ReciprocalCompute),
                  ReciprocalGrad));
}
void RegisterExp(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Exp", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, ExpCompute), ExpGrad));
}
void RegisterLog(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Log", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, LogCompute), LogGrad));
}
void RegisterSqrt(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Sqrt", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, SqrtCompute), SqrtGrad));
}
void RegisterFloor(OpRegistry* r) {
  r->Add(ew::MakeSchema("Floor", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, FloorCompute, kRoundingNoGrad));
}
void RegisterCeil(OpRegistry* r) {
  r->Add(ew::MakeSchema("Ceil", 6, 1, 1, ew::InferUnary<TypeClass::kFloat>, CeilCompute, kRoundingNoGrad));
}
void RegisterRound(OpRegistry* r) {
  r->Add(ew::MakeSchema("Round", 11, 1, 1, ew::InferUnary<TypeClass::kFloat>, RoundCompute, kRoundingNoGrad));
}

}  // namespace strata::ops
