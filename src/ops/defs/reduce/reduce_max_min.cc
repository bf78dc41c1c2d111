// ReduceMax and ReduceMin (opset 1, 11, 12: int8/uint8, 13: bfloat16), one table row each. NaN propagates, as in
// numpy. A reduction over an empty set gives the identity: -inf for ReduceMax and +inf for ReduceMin on floats, the
// type's lowest/highest value on integers (ONNX opset 18 wording).
#include "ops/defs/reduce/reduce_grad.h"
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

// The elements equal to the extremum share dY evenly (ties split it, as TensorFlow and PyTorch's amax/amin do).
Status ExtremumGrad(GradContext& ctx) {
  const ReduceGradInfo info = ReduceGradAxes(ctx);
  AttributeMap to;
  to["to"] = Attribute::Int(static_cast<int64_t>(InType(ctx, 0)));
  const std::string mask =
      Emit1(ctx, "Cast", {Emit1(ctx, "Equal", {In(ctx, 0), Unreduced(ctx, info, Out(ctx, 0))})}, std::move(to));
  std::vector<std::string> sum_inputs{mask};
  if (!info.axes.empty()) sum_inputs.push_back(info.axes);
  AttributeMap sum_attrs;
  sum_attrs["keepdims"] = Attribute::Int(1);
  sum_attrs["noop_with_empty_axes"] = Attribute::Int(ctx.node().GetInt("noop_with_empty_axes", 0));
  const std::string count = Emit1(ctx, "ReduceSum", sum_inputs, std::move(sum_attrs));
  const std::string share = EDiv(ctx, Unreduced(ctx, info, ctx.output_grad(0)), count);
  ctx.SetInputGrad(0, EMul(ctx, mask, share));
  return Status::OK();
}

}  // namespace

void RegisterReduceMax(OpRegistry* r) {
  r->Add(WithGrad(ReduceSchema("ReduceMax", ExtremumCompute<true>), ExtremumGrad));
}
void RegisterReduceMin(OpRegistry* r) {
  r->Add(WithGrad(ReduceSchema("ReduceMin", ExtremumCompute<false>), ExtremumGrad));
}

}  // namespace strata::ops
