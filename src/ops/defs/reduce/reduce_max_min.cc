// ReduceMax and ReduceMin (opset 1, 11, 12: int8/uint8, 13: bfloat16), one table row each. NaN propagates, as in
// numpy. A reduction over an empty set gives the identity: -inf for ReduceMax and +inf for ReduceMin on floats, the
// type's lowest/highest value on integers (ONNX opset 18 wording).
#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {
namespace {

template <typename T, bool kMax>
struct ExtremumOp {
  using Acc = ComputeType<T>;
  using Out = T;
  Acc Init() const { return kMax ? LowestOf<T>() : HighestOf<T>(); }
  Acc Map(T v, int64_t) const { return ToCompute(v); }
  Acc Combine(Acc a, Acc b) const { return kMax ? MaxNan(a, b) : MinNan(a, b); }
  T Finalize(Acc a, int64_t, int64_t) const { return static_cast<T>(a); }
};

template <bool kMax>
Status ExtremumCompute(KernelContext& ctx) {
  return RunReduce(ctx, [](auto tag) { return ExtremumOp<typename decltype(tag)::type, kMax>{}; });
}

}  // namespace

void RegisterReduceMax(OpRegistry* r) { r->Add(ReduceSchema("ReduceMax", ExtremumCompute<true>)); }
void RegisterReduceMin(OpRegistry* r) { r->Add(ReduceSchema("ReduceMin", ExtremumCompute<false>)); }

}  // namespace strata::ops
