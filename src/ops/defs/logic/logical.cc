// Boolean logic, one Register function per op: And, Or, Xor (broadcasting; legacy broadcast attributes before
// opset 7) and Not (opset 1). Bool inputs and output only.
#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

constexpr const char* kNoGrad = "bool inputs and output";

enum class Logic { kAnd, kOr, kXor };

template <Logic kOp>
Status LogicCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kBool));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 1, TypeClass::kBool));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, DType::kBool, out_shape));
  ew::BroadcastBinary(ctx.input(0).data<bool>(), ctx.input(0).shape(), ctx.input(1).data<bool>(), b_shape,
                      z->data<bool>(), out_shape, [](bool a, bool b) -> bool {
                        if constexpr (kOp == Logic::kAnd) return a && b;
                        if constexpr (kOp == Logic::kOr) return a || b;
                        return a != b;
                      });
  return Status::OK();
}

Status InferLogic(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kBool));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 1, TypeClass::kBool));
  return ew::InferBinaryShape(ctx, DType::kBool);
}

Status NotCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kBool));
  return UnaryMap<bool, bool>(ctx, DType::kBool, [](bool x) { return !x; });
}

template <Logic kOp>
OpSchema Binary(const char* name) {
  return ew::MakeSchema(name, 7, 2, 2, InferLogic, LogicCompute<kOp>, kNoGrad);
}

}  // namespace

void RegisterAnd(OpRegistry* r) { r->Add(Binary<Logic::kAnd>("And")); }
void RegisterNot(OpRegistry* r) {
  r->Add(ew::MakeSchema("Not", 1, 1, 1, ew::InferUnary<TypeClass::kBool>, NotCompute, kNoGrad));
}
void RegisterOr(OpRegistry* r) { r->Add(Binary<Logic::kOr>("Or")); }
void RegisterXor(OpRegistry* r) { r->Add(Binary<Logic::kXor>("Xor")); }

}  // namespace strata::ops
