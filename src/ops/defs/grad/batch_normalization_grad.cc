// strata.BatchNormalizationGrad(dY, X, scale, mean, var) -> dX, dScale, dB: the gradient of BatchNormalization's Y.
// Attributes: epsilon, training_mode (1: the forward normalised with the batch statistics, which are recomputed here
// from X and differentiated through; the mean/var inputs are then unused), spatial (opset < 9; 0 = statistics per
// (C, D1..Dn) element). With M the count per channel, xhat = (x - mu) / sqrt(var + eps), istd = 1 / sqrt(var + eps):
//   dB = sum(dY), dScale = sum(dY * xhat)
//   training:  dX = scale * istd / M * (M dY - dB - xhat dScale)
//   inference: dX = scale * istd * dY
// dScale and dB have scale's element type, dX has dY's. Computes in float32 (float64 when any input is float64).
#include <cmath>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"

namespace strata::ops {
namespace {

Status BatchNormGradInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "X"));
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(1));
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, ctx.input_dtype(2), ctx.input_shape(2));
  return Status::OK();
}

template <typename C>
Status Run(KernelContext& ctx, bool training, C eps, int64_t outer, int64_t channels, int64_t inner) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  STRATA_ASSIGN_OR_RETURN(std::vector<C> scale, nn::ReadAs<C>(ctx.input(2)));
  std::vector<C> mean(channels), var(channels);
  if (!training) {
    STRATA_ASSIGN_OR_RETURN(mean, nn::ReadAs<C>(ctx.input(3)));
    STRATA_ASSIGN_OR_RETURN(var, nn::ReadAs<C>(ctx.input(4)));
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<C> vdy, nn::ReadAs<C>(dy));
  STRATA_ASSIGN_OR_RETURN(std::vector<C> vx, nn::ReadAs<C>(x));
  std::vector<C> dscale(channels), dbias(channels), istd(channels);
  const int64_t count = outer * inner;
  ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      if (training) {
        C sum = C(0);
        for (int64_t n = 0; n < outer; ++n)
          for (int64_t i = 0; i < inner; ++i) sum += vx[(n * channels + c) * inner + i];
        const C m = count > 0 ? sum / static_cast<C>(count) : C(0);
        C sq = C(0);
        for (int64_t n = 0; n < outer; ++n)
          for (int64_t i = 0; i < inner; ++i) {
            const C d = vx[(n * channels + c) * inner + i] - m;
            sq += d * d;
          }
        mean[c] = m;
        var[c] = count > 0 ? sq / static_cast<C>(count) : C(0);
      }
      istd[c] = C(1) / std::sqrt(var[c] + eps);
      C sb = C(0), ss = C(0);
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = (n * channels + c) * inner + i;
          sb += vdy[k];
          ss += vdy[k] * (vx[k] - mean[c]) * istd[c];
        }
      dbias[c] = sb;
      dscale[c] = ss;
    }
  });
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), x.shape()));
  STRATA_RETURN_IF_ERROR(DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = dx->data<T>();
    ParallelFor(outer * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t c = t % channels;
                    const C a = scale[c] * istd[c];
                    for (int64_t i = 0; i < inner; ++i) {
                      const int64_t k = t * inner + i;
                      C v = a * vdy[k];
                      if (training && count > 0) {
                        const C xhat = (vx[k] - mean[c]) * istd[c];
                        v = a * (vdy[k] - (dbias[c] + xhat * dscale[c]) / static_cast<C>(count));
                      }
                      out[k] = T(static_cast<ComputeType<T>>(v));
                    }
                  }
                });
    return Status::OK();
  }));
  for (int j = 1; j <= 2; ++j) {
    if (!ctx.output_wanted(j)) continue;
    const Tensor& s = ctx.input(2);
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(j, s.dtype(), s.shape()));
    const std::vector<C>& src = j == 1 ? dscale : dbias;
    STRATA_RETURN_IF_ERROR(DispatchFloat(s.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t c = 0; c < channels; ++c) t->data<T>()[c] = T(static_cast<ComputeType<T>>(src[c]));
      return Status::OK();
    }));
  }
  return Status::OK();
}

Status BatchNormGradCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const bool training = node.GetInt("training_mode", 0) != 0;
  for (int i = 0; i < 5; ++i)
    if ((i < 3 || !training) && (!ctx.has_input(i) || !IsFloatingPoint(ctx.input(i).dtype())))
      return ctx.Error("input ", i, " must be a float tensor");
  if (x.rank() < 2 || dy.shape() != x.shape() || dy.dtype() != x.dtype())
    return ctx.Error("dY ", dy.TypeString(), " and X ", x.TypeString(), " must match, with rank >= 2");
  const bool spatial = node.GetInt("spatial", 1) != 0;
  const int64_t outer = x.dim(0);
  const int64_t channels = spatial ? x.dim(1) : x.shape().Product(1, x.rank());
  const int64_t inner = spatial ? x.shape().Product(2, x.rank()) : 1;
  for (int i = 2; i < 5; ++i)
    if ((i < 3 || !training) && ctx.input(i).num_elements() != channels)
      return ctx.Error("input ", i, " must have ", channels, " values (one per channel), got ",
                       ctx.input(i).shape().ToString());
  bool use_double = false;
  for (int i = 0; i < 5; ++i) use_double |= ctx.has_input(i) && ctx.input(i).dtype() == DType::kFloat64;
  const double eps = node.GetFloat("epsilon", 1e-5f);
  return use_double ? Run<double>(ctx, training, eps, outer, channels, inner)
                    : Run<float>(ctx, training, static_cast<float>(eps), outer, channels, inner);
}

}  // namespace

void RegisterBatchNormalizationGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "BatchNormalizationGrad";
  s.min_inputs = 3;
  s.max_inputs = 5;
  s.min_outputs = 1;
  s.max_outputs = 3;
  s.infer = BatchNormGradInfer;
  s.reference = BatchNormGradCompute;
  s.no_grad_reason = "second derivatives of batch normalization are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
