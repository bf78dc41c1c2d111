// Bitwise integer ops from opset 18, one Register function each: BitwiseNot (unary), BitwiseAnd, BitwiseOr,
// BitwiseXor (broadcasting, both inputs of one integer type). Accepted in models of any opset.
#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

constexpr const char* kNoGrad = "integer inputs and output";

enum class Bit { kAnd, kOr, kXor };

template <Bit kOp>
Status BitwiseCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kInteger));
  if (ctx.input(1).dtype() != t)
    return ctx.Error("inputs must have the same element type, got ", DTypeName(t), " and ",
                     DTypeName(ctx.input(1).dtype()));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, t, out_shape));
  return DispatchInteger(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ew::BroadcastBinary(ctx.input(0).data<T>(), ctx.input(0).shape(), ctx.input(1).data<T>(), b_shape, z->data<T>(),
                        out_shape, [](T a, T b) -> T {
                          if constexpr (kOp == Bit::kAnd) return static_cast<T>(a & b);
                          if constexpr (kOp == Bit::kOr) return static_cast<T>(a | b);
                          return static_cast<T>(a ^ b);
                        });
    return Status::OK();
  });
}

Status InferBitwise(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kInteger));
  return ew::InferBinaryShape(ctx, DType::kUndefined);
}

Status BitwiseNotCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kInteger));
  return DispatchInteger(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return UnaryMap<T, T>(ctx, DType::kUndefined, [](T x) { return static_cast<T>(~x); });
  });
}

template <Bit kOp>
OpSchema Binary(const char* name) {
  return ew::MakeSchema(name, 18, 2, 2, InferBitwise, BitwiseCompute<kOp>, kNoGrad);
}

}  // namespace

void RegisterBitwiseAnd(OpRegistry* r) { r->Add(Binary<Bit::kAnd>("BitwiseAnd")); }
void RegisterBitwiseNot(OpRegistry* r) {
  r->Add(ew::MakeSchema("BitwiseNot", 18, 1, 1, ew::InferUnary<TypeClass::kInteger>, BitwiseNotCompute, kNoGrad));
}
void RegisterBitwiseOr(OpRegistry* r) { r->Add(Binary<Bit::kOr>("BitwiseOr")); }
void RegisterBitwiseXor(OpRegistry* r) { r->Add(Binary<Bit::kXor>("BitwiseXor")); }

}  // namespace strata::ops
