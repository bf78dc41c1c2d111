// MeanVarianceNormalization (opset 9, 13): Y = (X - mean) / (sqrt(var) + 1e-9) with mean and population variance
// taken over `axes` (default [0, 2, 3]; negative axes count from the end). Float element types (16-bit floats
// compute in float32).
#include <cmath>

#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<std::vector<int>> ReadMvnAxes(const Node& node, int rank) {
  return NormalizeAxes(node.GetInts("axes", {0, 2, 3}), rank, node);
}

Status MvnInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "X"));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known) STRATA_RETURN_IF_ERROR(ReadMvnAxes(ctx.node(), x.rank()).status());
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::OK();
}

Status MvnCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  STRATA_ASSIGN_OR_RETURN(std::vector<int> axes, ReadMvnAxes(ctx.node(), x.rank()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  // Group id of every element: its row-major index over the kept (non-reduced) axes.
  Shape kept = x.shape();
  for (int a : axes) kept[a] = 1;
  const std::array<std::vector<int64_t>, 1> group_strides{BroadcastStrides(kept, x.shape())};
  const int64_t groups = kept.NumElements();
  const int64_t count = groups > 0 ? x.num_elements() / groups : 0;
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    std::vector<C> mean(groups, C(0)), sq(groups, C(0));
    ForEachBroadcast<1>(x.shape(), group_strides,
                        [&](int64_t i, const std::array<int64_t, 1>& g) { mean[g[0]] += ToCompute(px[i]); });
    for (C& m : mean) m = count > 0 ? m / static_cast<C>(count) : C(0);
    ForEachBroadcast<1>(x.shape(), group_strides, [&](int64_t i, const std::array<int64_t, 1>& g) {
      const C d = ToCompute(px[i]) - mean[g[0]];
      sq[g[0]] += d * d;
    });
    std::vector<C> denom(groups);
    for (int64_t g = 0; g < groups; ++g)
      denom[g] = std::sqrt(count > 0 ? sq[g] / static_cast<C>(count) : C(0)) + static_cast<C>(1e-9);
    ForEachBroadcast<1>(x.shape(), group_strides, [&](int64_t i, const std::array<int64_t, 1>& g) {
      py[i] = FromCompute<T>((ToCompute(px[i]) - mean[g[0]]) / denom[g[0]]);
    });
    return Status::OK();
  });
}

// y = d / (s + e), d = x - mean, s = sqrt(mean(d^2)), e = 1e-9, means over the axes:
// dX = (g - mean(g) - y * mean(g * y) * (s + e) / s) / (s + e), g = dY.
Status MvnGrad(GradContext& ctx) {
  const std::string& x = In(ctx, 0);
  const std::string& y = Out(ctx, 0);
  const std::string& g = ctx.output_grad(0);
  const auto mean = [&](const std::string& v) {
    AttributeMap a;
    a["axes"] = Attribute::Ints(ctx.node().GetInts("axes", {0, 2, 3}));
    a["keepdims"] = Attribute::Int(1);
    return Emit1(ctx, "ReduceMean", {v}, std::move(a));
  };
  const std::string d = ESub(ctx, x, mean(x));
  const std::string s = Emit1(ctx, "Sqrt", {mean(EMul(ctx, d, d))});
  const std::string se = EAdd(ctx, s, ScalarConst(ctx, InType(ctx, 0), 1e-9));
  const std::string corr = EMul(ctx, EMul(ctx, y, mean(EMul(ctx, g, y))), EDiv(ctx, se, s));
  ctx.SetInputGrad(0, EDiv(ctx, ESub(ctx, ESub(ctx, g, mean(g)), corr), se));
  return Status::OK();
}

}  // namespace

void RegisterMeanVarianceNormalization(OpRegistry* r) {
  OpSchema s;
  s.name = "MeanVarianceNormalization";
  s.since_version = 13;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = MvnInfer;
  s.reference = MvnCompute;
  s.grad = MvnGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
