// The additive reductions, one table row each (they differ only in the mapped value and the final step):
//   ReduceSum       sum(x)            (opset 1, 11, 13: axes become input 1, noop_with_empty_axes)
//   ReduceSumSquare sum(x*x)          (opset 1, 11, 13)
//   ReduceMean      sum(x) / n        (opset 1, 11, 13)
//   ReduceL1        sum(|x|)          (opset 1, 11, 13)
//   ReduceL2        sqrt(sum(x*x))    (opset 1, 11, 13)
//   ReduceLogSum    log(sum(x))       (opset 1, 11, 13)
// From opset 18 the others take axes as input 1 as well; reduce_util handles both forms. Floats accumulate in float
// (double for float64) with pairwise/blocked summation; integers wrap like numpy; L2 and LogSum of integers are
// computed in double and truncated toward zero. Reductions over an empty set give 0 (Mean: NaN, LogSum: -inf).
#include "ops/defs/reduce/reduce_grad.h"
#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {
namespace {

enum class AddKind { kSum, kSumSquare, kMean, kL1, kL2, kLogSum };

template <typename T, AddKind K>
struct AdditiveOp {
  static constexpr bool kInt = std::is_integral_v<T>;
  // Integer Mean sums in 64 bits (wrapping); integer L2/LogSum in double.
  using Acc = std::conditional_t<kInt && (K == AddKind::kL2 || K == AddKind::kLogSum), double,
                                 std::conditional_t<kInt && K == AddKind::kMean, uint64_t, SumAcc<T>>>;
  using Out = T;

  Acc Init() const { return Acc(0); }
  Acc Map(T v, int64_t) const {
    const Acc a = static_cast<Acc>(ToCompute(v));
    if constexpr (K == AddKind::kSumSquare || K == AddKind::kL2) {
      return MulWrap(a, a);
    } else if constexpr (K == AddKind::kL1) {
      if constexpr (std::is_floating_point_v<Acc>) {
        return std::fabs(a);
      } else if constexpr (std::is_signed_v<T>) {
        return v < 0 ? Acc(0) - a : a;  // modular negation: |INT_MIN| wraps as numpy's does
      } else {
        return a;
      }
    } else {
      return a;
    }
  }
  Acc Combine(Acc a, Acc b) const { return static_cast<Acc>(a + b); }
  T Finalize(Acc a, int64_t n, int64_t) const {
    if constexpr (K == AddKind::kMean) {
      if constexpr (kInt) {
        if (n == 0) return T(0);
        if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(a) / n);
        return static_cast<T>(a / static_cast<uint64_t>(n));
      } else {
        return T(static_cast<ComputeType<T>>(a / static_cast<Acc>(n)));  // 0/0 = NaN for an empty set
      }
    } else if constexpr (K == AddKind::kL2) {
      return FromDouble<T>(std::sqrt(static_cast<double>(a)));
    } else if constexpr (K == AddKind::kLogSum) {
      if constexpr (kInt) return FromDouble<T>(std::log(a));
      return T(static_cast<ComputeType<T>>(std::log(a)));
    } else {
      return static_cast<T>(static_cast<ComputeType<T>>(a));
    }
  }
};

template <AddKind K>
Status AdditiveCompute(KernelContext& ctx) {
  return RunReduce(ctx, [](auto tag) { return AdditiveOp<typename decltype(tag)::type, K>{}; });
}

// Gradients, with dY' = dY brought back to the input's rank (reduce_grad.h):
//   Sum: dY' broadcast to X; Mean: that / n; SumSquare: 2 x dY'; L1: sign(x) dY'; L2: x dY' / y'; LogSum: dY' / e^y'.
template <AddKind K>
Status AdditiveGrad(GradContext& ctx) {
  const ReduceGradInfo info = ReduceGradAxes(ctx);
  const std::string& x = In(ctx, 0);
  const std::string dy = Unreduced(ctx, info, ctx.output_grad(0));
  std::string dx;
  switch (K) {
    case AddKind::kSum:
      dx = ExpandedToInput(ctx, info, ctx.output_grad(0));
      break;
    case AddKind::kMean:
      dx = EDiv(ctx, ExpandedToInput(ctx, info, ctx.output_grad(0)), InputsPerOutput(ctx));
      break;
    case AddKind::kSumSquare:
      dx = EMul(ctx, EMul(ctx, x, ScalarConst(ctx, InType(ctx, 0), 2.0)), dy);
      break;
    case AddKind::kL1:
      dx = EMul(ctx, Emit1(ctx, "Sign", {x}), dy);
      break;
    case AddKind::kL2:
      dx = EMul(ctx, x, EDiv(ctx, dy, Unreduced(ctx, info, Out(ctx, 0))));
      break;
    case AddKind::kLogSum:
      dx = ExpandedToInput(ctx, info, EDiv(ctx, ctx.output_grad(0), Emit1(ctx, "Exp", {Out(ctx, 0)})));
      break;
  }
  ctx.SetInputGrad(0, dx);
  return Status::OK();
}

template <AddKind K>
OpSchema Additive(const char* name) {
  return WithGrad(ReduceSchema(name, AdditiveCompute<K>), AdditiveGrad<K>);
}

}  // namespace

void RegisterReduceSum(OpRegistry* r) { r->Add(Additive<AddKind::kSum>("ReduceSum")); }
void RegisterReduceSumSquare(OpRegistry* r) { r->Add(Additive<AddKind::kSumSquare>("ReduceSumSquare")); }
void RegisterReduceMean(OpRegistry* r) { r->Add(Additive<AddKind::kMean>("ReduceMean")); }
void RegisterReduceL1(OpRegistry* r) { r->Add(Additive<AddKind::kL1>("ReduceL1")); }
void RegisterReduceL2(OpRegistry* r) { r->Add(Additive<AddKind::kL2>("ReduceL2")); }
void RegisterReduceLogSum(OpRegistry* r) { r->Add(Additive<AddKind::kLogSum>("ReduceLogSum")); }

}  // namespace strata::ops
