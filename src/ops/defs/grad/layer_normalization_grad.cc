// strata.LayerNormalizationGrad(dY, X[, Scale]) -> dX[, dScale]: the gradient of LayerNormalization's Y with respect
// to X and Scale (B's gradient is dY summed to B's shape, which needs no special op). Attributes axis (default -1)
// and epsilon, as the forward op; Scale broadcasts to X as it does there (absent: 1). Per row of the normalised part
// [axis, rank), with xhat = (x - mean) * istd and g = dY * Scale:
//   dX = istd * (g - mean(g) - xhat * mean(g * xhat)),   dScale = sum of dY * xhat over the broadcast, in Scale's
//   shape.
// Statistics are recomputed from X. Computes in float32 (float64 for float64 inputs).
#include <cmath>
#include <cstring>
#include <mutex>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"

namespace strata::ops {
namespace {

Status LayerNormGradInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "X"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "Scale"));
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(1));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, ctx.input_dtype(0), ctx.input_shape(2));
  return Status::OK();
}

// Offsets of a tensor broadcast to `x`, split into its outer [0, axis) and inner [axis, rank) parts.
void SplitOffsets(const Shape& t, const Shape& x, int axis, std::vector<int64_t>* outer, std::vector<int64_t>* inner) {
  const std::vector<int64_t> st = BroadcastStrides(t, x);
  auto fill = [&](int from, int to, std::vector<int64_t>* out) {
    out->assign(1, 0);
    for (int d = from; d < to; ++d) {
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
Status Run(KernelContext& ctx, int axis, C eps) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Shape& xs = x.shape();
  const int64_t outer = xs.Product(0, axis), inner = xs.Product(axis, xs.rank());
  const bool has_scale = ctx.has_input(2);
  std::vector<C> scale{C(1)};
  std::vector<int64_t> s_outer(outer, 0), s_inner(inner, 0);
  if (has_scale) {
    STRATA_ASSIGN_OR_RETURN(scale, nn::ReadAs<C>(ctx.input(2)));
    SplitOffsets(ctx.input(2).shape(), xs, axis, &s_outer, &s_inner);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), xs));
  const bool want_ds = has_scale && ctx.output_wanted(1);
  std::vector<C> dscale(want_ds ? scale.size() : 0, C(0));
  std::mutex mu;
  const T* px = x.data<T>();
  const T* pdy = dy.data<T>();
  T* pdx = dx->data<T>();
  ParallelFor(outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner)), [&](int64_t begin, int64_t end) {
    std::vector<C> xhat(inner), g(inner), part(dscale.size(), C(0));
    for (int64_t o = begin; o < end; ++o) {
      const T* xr = px + o * inner;
      const T* dyr = pdy + o * inner;
      C sum = C(0);
      for (int64_t i = 0; i < inner; ++i) sum += static_cast<C>(ToCompute(xr[i]));
      const C mean = sum / static_cast<C>(inner);
      C sq = C(0);
      for (int64_t i = 0; i < inner; ++i) {
        const C d = static_cast<C>(ToCompute(xr[i])) - mean;
        sq += d * d;
      }
      const C istd = C(1) / std::sqrt(sq / static_cast<C>(inner) + eps);
      C mg = C(0), mgx = C(0);
      for (int64_t i = 0; i < inner; ++i) {
        const C d = static_cast<C>(ToCompute(dyr[i]));
        xhat[i] = (static_cast<C>(ToCompute(xr[i])) - mean) * istd;
        g[i] = d * scale[s_outer[o] + s_inner[i]];
        mg += g[i];
        mgx += g[i] * xhat[i];
        if (want_ds) part[s_outer[o] + s_inner[i]] += d * xhat[i];
      }
      mg /= static_cast<C>(inner);
      mgx /= static_cast<C>(inner);
      for (int64_t i = 0; i < inner; ++i)
        pdx[o * inner + i] = FromCompute<T>(static_cast<ComputeType<T>>(istd * (g[i] - mg - xhat[i] * mgx)));
    }
    if (want_ds) {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t k = 0; k < part.size(); ++k) dscale[k] += part[k];
    }
  });
  if (want_ds) {
    STRATA_ASSIGN_OR_RETURN(Tensor * ds, ctx.Output(1, dy.dtype(), ctx.input(2).shape()));
    for (size_t k = 0; k < dscale.size(); ++k)
      ds->data<T>()[k] = FromCompute<T>(static_cast<ComputeType<T>>(dscale[k]));
  }
  return Status::OK();
}

Status LayerNormGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (!IsFloatingPoint(x.dtype()) || dy.dtype() != x.dtype() || dy.shape() != x.shape() ||
      (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype()))
    return ctx.Error("dY, X and Scale must share one float element type, and dY X's shape");
  if (x.rank() == 0) return ctx.Error("X must have rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", -1), x.rank(), ctx.node()));
  if (ctx.has_input(2)) {
    auto b = BroadcastShapes(x.shape(), ctx.input(2).shape());
    if (!b.ok() || *b != x.shape())
      return ctx.Error("Scale ", ctx.input(2).shape().ToString(), " does not broadcast to X ", x.shape().ToString());
  }
  if (x.num_elements() == 0) {
    STRATA_RETURN_IF_ERROR(ctx.Output(0, x.dtype(), x.shape()).status());
    if (ctx.has_input(2) && ctx.output_wanted(1)) {
      STRATA_ASSIGN_OR_RETURN(Tensor * ds, ctx.Output(1, x.dtype(), ctx.input(2).shape()));
      std::memset(ds->raw_data(), 0, ds->byte_size());
    }
    return Status::OK();
  }
  const double eps = ctx.node().GetFloat("epsilon", 1e-5f);
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) return Run<T, double>(ctx, axis, eps);
    return Run<T, float>(ctx, axis, static_cast<float>(eps));
  });
}

}  // namespace

void RegisterLayerNormalizationGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "LayerNormalizationGrad";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.min_outputs = 1;
  s.max_outputs = 2;
  s.infer = LayerNormGradInfer;
  s.reference = LayerNormGradCompute;
  s.no_grad_reason = "second derivatives of layer normalization are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
