// Mod (opset 10, 13): broadcasting remainder, both inputs of one numeric type.
//   fmod=0 (default): integer remainder whose sign follows the divisor (numpy.mod, Python's %). Float inputs need
//     fmod=1, as the spec says; fmod=0 on floats is an error.
//   fmod=1: C fmod, sign follows the dividend (numpy.fmod), for integers and floats.
// Integer division by zero gives InvalidArgument; MIN % -1 is 0 (no overflow trap).
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

template <typename T>
T TruncRem(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

Status CheckFmod(DType t, int64_t fmod, const Node& node) {
  if (fmod != 0 && fmod != 1)
    return InvalidArgumentError(node.Describe(), ": attribute fmod must be 0 or 1, got ", fmod);
  if (IsFloatingPoint(t) && fmod == 0)
    return InvalidArgumentError(node.Describe(), ": float inputs (", DTypeName(t),
                                ") need attribute fmod=1; fmod=0 is defined for integers only");
  return Status::OK();
}

Status ModCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kNumeric));
  if (ctx.input(1).dtype() != t)
    return ctx.Error("inputs must have the same element type, got ", DTypeName(t), " and ",
                     DTypeName(ctx.input(1).dtype()));
  const int64_t fmod = ctx.node().GetInt("fmod", 0);
  STRATA_RETURN_IF_ERROR(CheckFmod(t, fmod, ctx.node()));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, t, out_shape));
  bool div_by_zero = false;
  Status s = DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* pa = ctx.input(0).data<T>();
    const T* pb = ctx.input(1).data<T>();
    const Shape& as = ctx.input(0).shape();
    if constexpr (std::is_floating_point_v<C>) {
      ew::BroadcastBinary(pa, as, pb, b_shape, z->data<T>(), out_shape,
                          [](T a, T b) { return T(static_cast<C>(std::fmod(static_cast<C>(a), static_cast<C>(b)))); });
    } else if (fmod == 1) {
      ew::BroadcastBinary(pa, as, pb, b_shape, z->data<T>(), out_shape, [&](T a, T b) -> T {
        if (b == 0) {
          div_by_zero = true;
          return 0;
        }
        return TruncRem(a, b);
      });
    } else {
      ew::BroadcastBinary(pa, as, pb, b_shape, z->data<T>(), out_shape, [&](T a, T b) -> T {
        if (b == 0) {
          div_by_zero = true;
          return 0;
        }
        T r = TruncRem(a, b);
        if constexpr (std::is_signed_v<T>) {
          if (r != 0 && ((r < 0) != (b < 0))) r = ew::WrapAdd(r, b);
        }
        return r;
      });
    }
    return Status::OK();
  });
  if (s.ok() && div_by_zero) return ctx.Error("integer modulo by zero");
  return s;
}

Status InferMod(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kNumeric));
  STRATA_RETURN_IF_ERROR(CheckFmod(ctx.input_dtype(0), ctx.node().GetInt("fmod", 0), ctx.node()));
  return ew::InferBinaryShape(ctx, DType::kUndefined);
}

// Float Mod is fmod: a - b * trunc(a / b), so dA = dY and dB = -dY * trunc(a / b) (almost everywhere), each reduced
// to its input's shape.
Status ModGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ReduceGradTo(ctx, dy, 0));
  if (ctx.needs_input_grad(1)) {
    const std::string q = EDiv(ctx, In(ctx, 0), In(ctx, 1));
    const std::string trunc = EMul(ctx, Emit1(ctx, "Sign", {q}), Emit1(ctx, "Floor", {Emit1(ctx, "Abs", {q})}));
    ctx.SetInputGrad(1, ReduceGradTo(ctx, ENeg(ctx, EMul(ctx, dy, trunc)), 1));
  }
  return Status::OK();
}

}  // namespace

void RegisterMod(OpRegistry* r) { r->Add(WithGrad(ew::MakeSchema("Mod", 10, 2, 2, InferMod, ModCompute), ModGrad)); }

}  // namespace strata::ops
