// Pow: Z = X ^ Y with broadcasting; Z has X's dtype.
//   opset 7: X and Y the same float type. opset 12+: X int32/int64/float types, Y any numeric type (mixed types).
//   opset < 7: legacy broadcast/axis attributes.
// Semantics follow numpy (the ONNX tests compute np.power(x, y).astype(x.dtype)):
//   float base: computed in double, rounded to X's type;
//   integer base, integer exponent: exact integer power with two's-complement wraparound; a negative exponent gives
//     the exact result truncated toward zero (1, -1 or 0), and 0 to a negative power is an error (division by zero);
//   integer base, float exponent: computed in double and truncated toward zero (NaN -> 0, saturating).
#include <cmath>
#include <limits>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

// base ^ e; `negative` says the exponent is below zero (then e is its two's-complement bits: only the parity counts).
template <typename T>
T IntPow(T base, bool negative, uint64_t e, bool* div_by_zero) {
  if (negative) {
    if (base == 0) {
      *div_by_zero = true;
      return 0;
    }
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e & 1u) ? T(-1) : T(1);
    }
    return 0;
  }
  T result = 1;
  T b = base;
  while (e != 0) {
    if (e & 1u) result = ew::WrapMul(result, b);
    b = ew::WrapMul(b, b);
    e >>= 1;
  }
  return result;
}

template <typename Y>
bool IsNegative(Y v) {
  if constexpr (std::is_signed_v<Y>) return v < 0;
  return false;
}

Status PowCompute(KernelContext& ctx) {
  const DType tx = ctx.input(0).dtype();
  const DType ty = ctx.input(1).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kNumeric));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 1, TypeClass::kNumeric));
  if (ctx.opset() < 12 && tx != ty)
    return ctx.Error("opset ", ctx.opset(), " needs X and Y of the same type (mixed types came in opset 12), got ",
                     DTypeName(tx), " and ", DTypeName(ty));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, tx, out_shape));
  bool div_by_zero = false;
  Status s = DispatchNumeric(tx, [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    using CX = ComputeType<X>;
    return DispatchNumeric(ty, [&](auto ytag) {
      using Y = typename decltype(ytag)::type;
      using CY = ComputeType<Y>;
      const X* px = ctx.input(0).data<X>();
      const Y* py = ctx.input(1).data<Y>();
      X* pz = z->data<X>();
      if constexpr (std::is_floating_point_v<CX>) {
        ew::BroadcastBinary(px, ctx.input(0).shape(), py, b_shape, pz, out_shape, [](X a, Y b) {
          return X(static_cast<CX>(std::pow(static_cast<double>(static_cast<CX>(a)), static_cast<double>(static_cast<CY>(b)))));
        });
      } else if constexpr (std::is_floating_point_v<CY>) {
        ew::BroadcastBinary(px, ctx.input(0).shape(), py, b_shape, pz, out_shape, [](X a, Y b) {
          return ew::SaturateCast<X>(std::pow(static_cast<double>(a), static_cast<double>(static_cast<CY>(b))));
        });
      } else {
        ew::BroadcastBinary(px, ctx.input(0).shape(), py, b_shape, pz, out_shape, [&](X a, Y b) {
          return IntPow<X>(a, IsNegative(b), static_cast<uint64_t>(b), &div_by_zero);
        });
      }
      return Status::OK();
    });
  });
  if (s.ok() && div_by_zero) return ctx.Error("integer 0 raised to a negative power (division by zero)");
  return s;
}

Status InferPow(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kNumeric));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 1, TypeClass::kNumeric));
  const DType tx = ctx.input_dtype(0), ty = ctx.input_dtype(1);
  if (ctx.opset() < 12 && tx != ty && tx != DType::kUndefined && ty != DType::kUndefined)
    return ctx.Error("opset ", ctx.opset(), " needs X and Y of the same type (mixed types came in opset 12), got ",
                     DTypeName(tx), " and ", DTypeName(ty));
  return ew::InferBinaryShape(ctx, DType::kUndefined);
}

// dX = dZ * Y * X^(Y-1); dY = dZ * Z * log(X) (NaN for negative bases, as the real logarithm); each reduced to its
// input's shape. Y of another type than X is cast to X's type first, and its gradient back to its own.
Status PowGrad(GradContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckNumpyBroadcast(ctx));
  const std::string& dz = ctx.output_grad(0);
  const std::string& x = In(ctx, 0);
  const bool same = InType(ctx, 1) == InType(ctx, 0);
  const std::string y = same ? In(ctx, 1) : Emit1(ctx, "CastLike", {In(ctx, 1), x});
  if (ctx.needs_input_grad(0)) {
    const std::string p = Emit1(ctx, "Pow", {x, ESub(ctx, y, ScalarConst(ctx, InType(ctx, 0), 1.0))});
    ctx.SetInputGrad(0, ReduceGradTo(ctx, EMul(ctx, dz, EMul(ctx, y, p)), 0));
  }
  if (ctx.needs_input_grad(1)) {
    std::string dy = EMul(ctx, dz, EMul(ctx, Out(ctx, 0), Emit1(ctx, "Log", {x})));
    if (!same) dy = Emit1(ctx, "CastLike", {dy, In(ctx, 1)});
    ctx.SetInputGrad(1, ReduceGradTo(ctx, dy, 1));
  }
  return Status::OK();
}

}  // namespace

void RegisterPow(OpRegistry* r) { r->Add(WithGrad(ew::MakeSchema("Pow", 7, 2, 2, InferPow, PowCompute), PowGrad)); }

}  // namespace strata::ops
