// BitShift (opset 11): Z = X << Y or X >> Y (attribute direction "LEFT" / "RIGHT", required), broadcasting, unsigned
// integers only. A shift by the bit width or more gives 0 (as numpy does), not C's undefined behaviour.
#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

StatusOr<bool> ShiftLeft(const Node& node) {
  STRATA_ASSIGN_OR_RETURN(std::string dir, node.RequireString("direction"));
  if (dir == "LEFT") return true;
  if (dir == "RIGHT") return false;
  return InvalidArgumentError(node.Describe(), ": attribute direction must be \"LEFT\" or \"RIGHT\", got \"", dir, "\"");
}

Status CheckTypes(DType a, DType b, const Node& node) {
  if (a != DType::kUndefined && !ew::InClass(a, TypeClass::kUnsigned))
    return InvalidArgumentError(node.Describe(), ": X must be ", ew::ClassName(TypeClass::kUnsigned), ", got ",
                                DTypeName(a));
  if (a != DType::kUndefined && b != DType::kUndefined && a != b)
    return InvalidArgumentError(node.Describe(), ": X and Y must have the same element type, got ", DTypeName(a),
                                " and ", DTypeName(b));
  return Status::OK();
}

template <typename T>
Status ShiftTyped(KernelContext& ctx, bool left, const Shape& b_shape, const Shape& out_shape, Tensor* z) {
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  const T* px = ctx.input(0).data<T>();
  const T* py = ctx.input(1).data<T>();
  if (left) {
    ew::BroadcastBinary(px, ctx.input(0).shape(), py, b_shape, z->data<T>(), out_shape,
                        [](T x, T y) { return y < kBits ? static_cast<T>(x << y) : T(0); });
  } else {
    ew::BroadcastBinary(px, ctx.input(0).shape(), py, b_shape, z->data<T>(), out_shape,
                        [](T x, T y) { return y < kBits ? static_cast<T>(x >> y) : T(0); });
  }
  return Status::OK();
}

Status BitShiftCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(bool left, ShiftLeft(ctx.node()));
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(CheckTypes(t, ctx.input(1).dtype(), ctx.node()));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, t, out_shape));
  switch (t) {
    case DType::kUInt8: return ShiftTyped<uint8_t>(ctx, left, b_shape, out_shape, z);
    case DType::kUInt16: return ShiftTyped<uint16_t>(ctx, left, b_shape, out_shape, z);
    case DType::kUInt32: return ShiftTyped<uint32_t>(ctx, left, b_shape, out_shape, z);
    case DType::kUInt64: return ShiftTyped<uint64_t>(ctx, left, b_shape, out_shape, z);
    default: return ctx.Error("X must be ", ew::ClassName(TypeClass::kUnsigned), ", got ", DTypeName(t));
  }
}

Status InferBitShift(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ShiftLeft(ctx.node()).status());
  STRATA_RETURN_IF_ERROR(CheckTypes(ctx.input_dtype(0), ctx.input_dtype(1), ctx.node()));
  return ew::InferBinaryShape(ctx, DType::kUndefined);
}

}  // namespace

void RegisterBitShift(OpRegistry* r) {
  r->Add(ew::MakeSchema("BitShift", 11, 2, 2, InferBitShift, BitShiftCompute, "integer inputs and output"));
}

}  // namespace strata::ops
