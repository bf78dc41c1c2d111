// ReduceProd (opset 1, 11, 13; axes input from opset 18): the product of the reduced elements. Floats multiply in
// float (double for float64); integers wrap like numpy. The product of an empty set is 1.
#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {
namespace {

template <typename T>
struct ProdOp {
  using Acc = SumAcc<T>;
  using Out = T;
  Acc Init() const { return Acc(1); }
  Acc Map(T v, int64_t) const { return static_cast<Acc>(ToCompute(v)); }
  Acc Combine(Acc a, Acc b) const { return MulWrap(a, b); }
  T Finalize(Acc a, int64_t, int64_t) const { return static_cast<T>(static_cast<ComputeType<T>>(a)); }
};

Status ReduceProdCompute(KernelContext& ctx) {
  return RunReduce(ctx, [](auto tag) { return ProdOp<typename decltype(tag)::type>{}; });
}

}  // namespace

void RegisterReduceProd(OpRegistry* r) {
  OpSchema s = ReduceSchema("ReduceProd", ReduceProdCompute);
  s.no_grad_reason = "not implemented: the product rule needs exclusive products where the input has zeros";
  r->Add(std::move(s));
}

}  // namespace strata::ops
