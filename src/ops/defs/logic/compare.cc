// The comparison ops, one Register function each (they differ only in the predicate and the dtypes accepted):
//   Equal (numeric, bool, string), Greater, Less (numeric), GreaterOrEqual, LessOrEqual (numeric, opset 12).
// Both inputs have one dtype; the output is bool with the broadcast shape (legacy broadcast attributes before opset
// 7). 16-bit floats compare as float; NaN compares unequal to everything, as IEEE says.
#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

constexpr const char* kNoGrad = "bool output";

enum class Cmp { kEq, kGt, kLt, kGe, kLe };

template <Cmp kCmp>
constexpr TypeClass kClass = kCmp == Cmp::kEq ? TypeClass::kAny : TypeClass::kNumeric;

template <Cmp kCmp, typename C>
bool Compare(const C& a, const C& b) {
  if constexpr (kCmp == Cmp::kEq) return a == b;
  if constexpr (kCmp == Cmp::kGt) return a > b;
  if constexpr (kCmp == Cmp::kLt) return a < b;
  if constexpr (kCmp == Cmp::kGe) return a >= b;
  if constexpr (kCmp == Cmp::kLe) return a <= b;
}

template <Cmp kCmp>
Status CompareCompute(KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, kClass<kCmp>));
  if (ctx.input(1).dtype() != t)
    return ctx.Error("inputs must have the same element type, got ", DTypeName(t), " and ",
                     DTypeName(ctx.input(1).dtype()));
  Shape b_shape, out_shape;
  STRATA_RETURN_IF_ERROR(ew::BinaryShapes(ctx, &b_shape, &out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, DType::kBool, out_shape));
  return DispatchAll(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ew::BroadcastBinary(ctx.input(0).data<T>(), ctx.input(0).shape(), ctx.input(1).data<T>(), b_shape,
                        z->data<bool>(), out_shape, [](const T& a, const T& b) {
                          if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
                            return Compare<kCmp>(static_cast<float>(a), static_cast<float>(b));
                          } else {
                            return Compare<kCmp>(a, b);
                          }
                        });
    return Status::OK();
  });
}

template <Cmp kCmp>
Status InferCompare(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, kClass<kCmp>));
  return ew::InferBinaryShape(ctx, DType::kBool);
}

template <Cmp kCmp>
OpSchema Comparison(const char* name, int since_version) {
  return ew::MakeSchema(name, since_version, 2, 2, InferCompare<kCmp>, CompareCompute<kCmp>, kNoGrad);
}

}  // namespace

void RegisterEqual(OpRegistry* r) { r->Add(Comparison<Cmp::kEq>("Equal", 7)); }
void RegisterGreater(OpRegistry* r) { r->Add(Comparison<Cmp::kGt>("Greater", 7)); }
void RegisterGreaterOrEqual(OpRegistry* r) { r->Add(Comparison<Cmp::kGe>("GreaterOrEqual", 12)); }
void RegisterLess(OpRegistry* r) { r->Add(Comparison<Cmp::kLt>("Less", 7)); }
void RegisterLessOrEqual(OpRegistry* r) { r->Add(Comparison<Cmp::kLe>("LessOrEqual", 12)); }

}  // namespace strata::ops
