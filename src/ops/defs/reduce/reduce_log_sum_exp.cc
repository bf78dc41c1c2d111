// ReduceLogSumExp (opset 1, 11, 13; axes input from opset 18): log(sum(exp(x))), computed stably as
// m + log(sum(exp(x - m))) with m the maximum of the reduced elements (m = 0 when it is not finite, so that all -inf
// gives -inf and any +inf gives +inf, as the plain formula does). Two passes of the shared reduction loop: the maxima,
// then the shifted sums. Integers compute in double and truncate toward zero.
#include "ops/defs/reduce/reduce_grad.h"
#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {
namespace {

template <typename T, typename C>
struct MaxPass {
  using Acc = C;
  using Out = C;
  Acc Init() const { return -std::numeric_limits<C>::infinity(); }
  Acc Map(T v, int64_t) const { return static_cast<C>(ToCompute(v)); }
  Acc Combine(Acc a, Acc b) const { return MaxNan(a, b); }
  C Finalize(Acc a, int64_t, int64_t) const { return std::isfinite(a) ? a : C(0); }
};

template <typename T, typename C>
struct ShiftedSumPass {
  const C* shift;
  using Acc = C;
  using Out = T;
  Acc Init() const { return C(0); }
  Acc Map(T v, int64_t o) const { return std::exp(static_cast<C>(ToCompute(v)) - shift[o]); }
  Acc Combine(Acc a, Acc b) const { return a + b; }
  T Finalize(Acc a, int64_t, int64_t o) const {
    const C r = std::log(a) + shift[o];
    if constexpr (std::is_integral_v<T>) {
      return FromDouble<T>(r);
    } else {
      return T(static_cast<ComputeType<T>>(r));
    }
  }
};

Status ReduceLogSumExpCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(ReduceAxes ax, ReduceAxesForRun(ctx));
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), ReducedShape(x.shape(), ax)));
  const ReducePlan plan = MakeReducePlan(x.shape(), ax.reduced);
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_integral_v<T>, double, ComputeType<T>>;
    std::vector<C> shift(static_cast<size_t>(plan.out_count));
    ReduceWalk(plan, x.data<T>(), shift.data(), MaxPass<T, C>{});
    ReduceWalk(plan, x.data<T>(), y->data<T>(), ShiftedSumPass<T, C>{shift.data()});
    return Status::OK();
  });
}

// dX = exp(x - y') dY' (the softmax of the reduced elements times the output gradient).
Status ReduceLogSumExpGrad(GradContext& ctx) {
  const ReduceGradInfo info = ReduceGradAxes(ctx);
  const std::string p = Emit1(ctx, "Exp", {ESub(ctx, In(ctx, 0), Unreduced(ctx, info, Out(ctx, 0)))});
  ctx.SetInputGrad(0, EMul(ctx, p, Unreduced(ctx, info, ctx.output_grad(0))));
  return Status::OK();
}

}  // namespace

void RegisterReduceLogSumExp(OpRegistry* r) {
  r->Add(WithGrad(ReduceSchema("ReduceLogSumExp", ReduceLogSumExpCompute), ReduceLogSumExpGrad));
}

}  // namespace strata::ops
