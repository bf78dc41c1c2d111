// LayerNormalization (opset 17): normalises X over the axes [axis, rank) (axis default -1, negative counts from the
// end), Y = (X - Mean) * InvStdDev * Scale + B, with InvStdDev = 1 / sqrt(population variance + epsilon). Scale and
// the optional B broadcast to X (unidirectionally). Optional outputs Mean and InvStdDev have shape
// X.shape[:axis] + [1] * (rank - axis) and the stash_type element type, which is also the precision of the
// computation: 1 (float32) is the spec's default; 11 (float64) is accepted as well, others are Unimplemented. An
// empty normalised part gives NaN statistics (the mean of nothing).
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<DType> ReadStashType(const Node& node) {
  const int64_t st = node.GetInt("stash_type", 1);
  if (st == 1) return DType::kFloat32;
  if (st == 11) return DType::kFloat64;
  return UnimplementedError(node.Describe(), ": stash_type ", st, " is not supported (1 = float32, 11 = float64)");
}

Status LayerNormInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "X"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "Scale"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "B"));
  STRATA_ASSIGN_OR_RETURN(DType stash, ReadStashType(ctx.node()));
  const PartialShape& x = ctx.input_shape(0);
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  if (!x.rank_known) {
    for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, stash, PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", -1), x.rank(), ctx.node()));
  if (x.rank() == 0) return ctx.Error("X must have rank >= 1");
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    auto b = BroadcastPartial(x, ctx.input_shape(i));
    if (!b.ok() || (b->rank_known && b->rank() != x.rank()))
      return ctx.Error(i == 1 ? "Scale " : "B ", ctx.input_shape(i).ToString(), " does not broadcast to X ",
                       x.ToString());
  }
  std::vector<Dim> stat(x.dims.begin(), x.dims.begin() + axis);
  stat.resize(x.rank(), Dim(1));
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, stash, PartialShape::Of(stat));
  return Status::OK();
}

// Element offsets of a tensor broadcast to `x`, split into the part from the outer axes [0, axis) and the part
// from the inner axes [axis, rank): offset(o, i) = outer[o] + inner[i].
void SplitOffsets(const Shape& t, const Shape& x, int axis, std::vector<int64_t>* outer, std::vector<int64_t>* inner) {
  const std::vector<int64_t> st = BroadcastStrides(t, x);
  auto fill = [&](int from, int to, std::vector<int64_t>* out) {
    out->assign(1, 0);
    for (int d = from; d < to; ++d) {  // odometer order: the last axis varies fastest
      std::vector<int64_t> next;
      next.reserve(out->size() * x[d]);
      for (int64_t base : *out)
        for (int64_t j = 0; j < x[d]; ++j) next.push_back(base + j * st[d]);
      *out = std::move(next);
    }
  };
  fill(0, axis, outer);
  fill(axis, x.rank(), inner);
}

template <typename T, typename C>
Status LayerNormRun(KernelContext& ctx, int axis, C eps, DType stash) {
  const Tensor& x = ctx.input(0);
  const int64_t outer = x.shape().Product(0, axis), inner = x.shape().Product(axis, x.rank());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  Shape stat_shape = x.shape();
  for (int d = axis; d < x.rank(); ++d) stat_shape[d] = 1;
  C* pmean = nullptr;
  C* pinv = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(1, stash, stat_shape));
    pmean = t->data<C>();
  }
  if (ctx.output_wanted(2)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(2, stash, stat_shape));
    pinv = t->data<C>();
  }
  std::vector<C> vals[2];
  std::vector<int64_t> outer_off[2], inner_off[2];
  for (int i = 0; i < 2; ++i) {
    if (!ctx.has_input(i + 1)) continue;
    const Tensor& t = ctx.input(i + 1);
    STRATA_ASSIGN_OR_RETURN(vals[i], nn::ReadAs<C>(t));
    SplitOffsets(t.shape(), x.shape(), axis, &outer_off[i], &inner_off[i]);
  }
  const T* px = x.data<T>();
  T* py = y->data<T>();
  const bool has_b = ctx.has_input(2);
  ParallelFor(outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner)), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* src = px + o * inner;
      T* dst = py + o * inner;
      C sum = C(0);
      for (int64_t i = 0; i < inner; ++i) sum += static_cast<C>(ToCompute(src[i]));
      const C mean = inner > 0 ? sum / static_cast<C>(inner) : std::numeric_limits<C>::quiet_NaN();
      C sq = C(0);
      for (int64_t i = 0; i < inner; ++i) {
        const C d = static_cast<C>(ToCompute(src[i])) - mean;
        sq += d * d;
      }
      const C var = inner > 0 ? sq / static_cast<C>(inner) : std::numeric_limits<C>::quiet_NaN();
      const C inv = C(1) / std::sqrt(var + eps);
      if (pmean) pmean[o] = mean;
      if (pinv) pinv[o] = inv;
      const C* scale = vals[0].data() + outer_off[0][o];
      const C* bias = has_b ? vals[1].data() + outer_off[1][o] : nullptr;
      for (int64_t i = 0; i < inner; ++i) {
        C v = (static_cast<C>(ToCompute(src[i])) - mean) * inv * scale[inner_off[0][i]];
        if (bias) v += bias[inner_off[1][i]];
        dst[i] = FromCompute<T>(v);
      }
    }
  });
  return Status::OK();
}

Status LayerNormCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype()) || ctx.input(1).dtype() != x.dtype() ||
      (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype()))
    return ctx.Error("X, Scale and B must share one float element type");
  if (x.rank() == 0) return ctx.Error("X must have rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", -1), x.rank(), ctx.node()));
  STRATA_ASSIGN_OR_RETURN(DType stash, ReadStashType(ctx.node()));
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    auto b = BroadcastShapes(x.shape(), ctx.input(i).shape());
    if (!b.ok() || *b != x.shape())
      return ctx.Error(i == 1 ? "Scale " : "B ", ctx.input(i).shape().ToString(), " does not broadcast to X ",
                       x.shape().ToString());
  }
  const double eps = ctx.node().GetFloat("epsilon", 1e-5f);
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return stash == DType::kFloat64 ? LayerNormRun<T, double>(ctx, axis, eps, stash)
                                    : LayerNormRun<T, float>(ctx, axis, static_cast<float>(eps), stash);
  });
}

// dX, dScale = strata.LayerNormalizationGrad(dY, X, Scale); dB = dY summed to B's shape. The Mean and InvStdDev
// outputs are not differentiated.
Status LayerNormGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  if (!ctx.output_grad(1).empty() || !ctx.output_grad(2).empty())
    return UnimplementedError(node.Describe(), ": the Mean and InvStdDev outputs are not differentiable here");
  if (ctx.needs_input_grad(0) || ctx.needs_input_grad(1)) {
    const std::vector<std::string> g =
        ctx.Emit("LayerNormalizationGrad", {ctx.output_grad(0), In(ctx, 0), In(ctx, 1)},
                 CopyAttrs(node, {"axis", "epsilon"}), ctx.needs_input_grad(1) ? 2 : 1, graph::kStrataDomain);
    if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, g[0]);
    if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, g[1]);
  }
  if (node.has_input(2) && ctx.needs_input_grad(2))
    ctx.SetInputGrad(2, Emit1(ctx, "ReduceSumTo", {ctx.output_grad(0), Emit1(ctx, "Shape", {In(ctx, 2)})}, {},
                              graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterLayerNormalization(OpRegistry* r) {
  OpSchema s;
  s.name = "LayerNormalization";
  s.since_version = 17;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.min_outputs = 1;
  s.max_outputs = 3;
  s.infer = LayerNormInfer;
  s.reference = LayerNormCompute;
  s.grad = LayerNormGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
