// strata.SyncBatchNormalization(X, scale, B, input_mean, input_var) -> Y, running_mean, running_var, saved_mean,
// saved_inv_std: training-mode batch normalization over X (N, C, D1..Dn) whose batch statistics are those of the
// workers' batches together (Keras's SyncBatchNormalization, BatchNormalization(synchronized=True)). Per channel:
//   M = the count over every worker (ops::AllReduceSum of the local N * D1 * ... * Dn),
//   mean = AllReduceSum(sum x) / M, var = AllReduceSum(sum (x - mean)^2) / M (biased),
//   Y = scale * (x - mean) / sqrt(var + epsilon) + B,
//   running = input * momentum + batch * (1 - momentum) (as ONNX BatchNormalization's training outputs).
// saved_mean and saved_inv_std (1 / sqrt(var + epsilon)) are for the gradient. Without a collective installed (one
// worker) it is BatchNormalization with training_mode=1. float32 or float64 (every input X's type); statistics in
// float64, reduced over the workers in float32.
//
// strata.SyncBatchNormalizationGrad(dY, X, scale, saved_mean, saved_inv_std) -> dX, dScale, dB. With the local sums
// dB = sum dY and dScale = sum dY * xhat (xhat = (x - mean) * inv_std) and their sums over the workers dB*, dScale*:
//   dX = scale * inv_std * (dY - dB* / M - xhat * dScale* / M)
// dScale and dB are this worker's own sums: averaging the workers' gradients (the trainer's allreduce) completes
// them. This is the gradient of the workers' mean loss: each worker's dY reaches every worker's X through the
// shared statistics.
#include <cmath>

#include "core/parallel.h"
#include "ops/collective.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// X is float32 or float64 (the finite-difference tests), of rank >= 2; inputs first_stat..last_stat are X's type with
// one value per channel.
Status CheckLayout(KernelContext& ctx, const Tensor& x, int first_stat, int last_stat, int64_t* outer,
                   int64_t* channels, int64_t* inner) {
  if ((x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) || x.rank() < 2)
    return ctx.Error("X must be float32 or float64 of rank >= 2 (N, C, ...), got ", x.TypeString());
  *outer = x.dim(0);
  *channels = x.dim(1);
  *inner = x.shape().Product(2, x.rank());
  for (int i = first_stat; i <= last_stat; ++i)
    if (ctx.input(i).dtype() != x.dtype() || ctx.input(i).shape() != Shape{*channels})
      return ctx.Error("input ", i, " must be ", DTypeName(x.dtype()), "[", *channels,
                       "] (one value per channel), got ", ctx.input(i).TypeString());
  return Status::OK();
}

// Sums over the workers (float32 on the wire: the precision multi-worker training runs at); exact without workers.
Status SumOverWorkers(std::vector<double>* v, const std::string& what) {
  if (!HasAllReduceSum()) return Status::OK();
  std::vector<float> f(v->begin(), v->end());
  STRATA_RETURN_IF_ERROR(AllReduceSum(f.data(), static_cast<int64_t>(f.size()), what));
  std::copy(f.begin(), f.end(), v->begin());
  return Status::OK();
}

Status SyncBnInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kFloat32 && t != DType::kFloat64 && t != DType::kUndefined)
    return ctx.Error("X must be float32 or float64, got ", DTypeName(t));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() < 2) return ctx.Error("X must have rank >= 2 (N, C, ...), got ", x.ToString());
  const PartialShape stat = x.rank_known ? PartialShape::Of({x.dims[1]}) : PartialShape::Unknown();
  ctx.SetOutput(0, t, x);
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, t, stat);
  return Status::OK();
}

template <typename T>
Status SyncBnRun(KernelContext& ctx, int64_t outer, int64_t channels, int64_t inner) {
  const Tensor& x = ctx.input(0);
  const double eps = ctx.node().GetFloat("epsilon", 1e-5f);
  const double momentum = ctx.node().GetFloat("momentum", 0.9f);
  const T* px = x.data<T>();
  const std::string what = ctx.node().Describe();
  // Sums per channel, then the count, reduced over the workers in one call.
  std::vector<double> sums(channels + 1);
  ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double s = 0;
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) s += px[(n * channels + c) * inner + i];
      sums[c] = s;
    }
  });
  sums[channels] = static_cast<double>(outer * inner);
  STRATA_RETURN_IF_ERROR(SumOverWorkers(&sums, what));
  const double count = sums[channels];
  if (!(count > 0)) return ctx.Error("the workers' batches hold no elements");
  std::vector<double> mean(channels), sq(channels);
  for (int64_t c = 0; c < channels; ++c) mean[c] = sums[c] / count;
  ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double s = 0;
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = px[(n * channels + c) * inner + i] - mean[c];
          s += d * d;
        }
      sq[c] = s;
    }
  });
  STRATA_RETURN_IF_ERROR(SumOverWorkers(&sq, what));
  const T* scale = ctx.input(1).data<T>();
  const T* bias = ctx.input(2).data<T>();
  std::vector<double> var(channels), inv_std(channels), a(channels), b(channels);  // y = x * a + b
  for (int64_t c = 0; c < channels; ++c) {
    var[c] = sq[c] / count;
    inv_std[c] = 1.0 / std::sqrt(var[c] + eps);
    a[c] = scale[c] * inv_std[c];
    b[c] = bias[c] - mean[c] * a[c];
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  T* py = y->data<T>();
  ParallelFor(outer * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)),
              [&](int64_t begin, int64_t end) {
                for (int64_t t = begin; t < end; ++t) {
                  const int64_t c = t % channels;
                  for (int64_t i = 0; i < inner; ++i)
                    py[t * inner + i] = static_cast<T>(px[t * inner + i] * a[c] + b[c]);
                }
              });
  auto write = [&](int out, auto value) -> Status {
    if (!ctx.output_wanted(out)) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(out, x.dtype(), Shape{channels}));
    for (int64_t c = 0; c < channels; ++c) t->data<T>()[c] = static_cast<T>(value(c));
    return Status::OK();
  };
  const T* in_mean = ctx.input(3).data<T>();
  const T* in_var = ctx.input(4).data<T>();
  STRATA_RETURN_IF_ERROR(write(1, [&](int64_t c) { return in_mean[c] * momentum + mean[c] * (1.0 - momentum); }));
  STRATA_RETURN_IF_ERROR(write(2, [&](int64_t c) { return in_var[c] * momentum + var[c] * (1.0 - momentum); }));
  STRATA_RETURN_IF_ERROR(write(3, [&](int64_t c) { return mean[c]; }));
  return write(4, [&](int64_t c) { return inv_std[c]; });
}

Status SyncBnCompute(KernelContext& ctx) {
  int64_t outer = 0, channels = 0, inner = 0;
  STRATA_RETURN_IF_ERROR(CheckLayout(ctx, ctx.input(0), 1, 4, &outer, &channels, &inner));
  return ctx.input(0).dtype() == DType::kFloat64 ? SyncBnRun<double>(ctx, outer, channels, inner)
                                                 : SyncBnRun<float>(ctx, outer, channels, inner);
}

Status SyncBnGrad(GradContext& ctx) {
  if (!ctx.output_grad(1).empty() || !ctx.output_grad(2).empty() || !ctx.output_grad(3).empty() ||
      !ctx.output_grad(4).empty())
    return UnimplementedError(ctx.node().Describe(), ": only Y is differentiated (not the statistics outputs)");
  if (ctx.needs_input_grad(3) || ctx.needs_input_grad(4))
    return UnimplementedError(ctx.node().Describe(), ": the moving statistics inputs are not differentiated");
  const std::vector<std::string> g =
      ctx.Emit("SyncBatchNormalizationGrad",
               {ctx.output_grad(0), In(ctx, 0), In(ctx, 1), ctx.ForwardOutput(3), ctx.ForwardOutput(4)}, {}, 3,
               graph::kStrataDomain);
  for (int i = 0; i < 3; ++i)
    if (ctx.needs_input_grad(i)) ctx.SetInputGrad(i, g[i]);
  return Status::OK();
}

Status SyncBnGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(1), ctx.input_shape(1));
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, ctx.input_dtype(2), ctx.input_shape(2));
  return Status::OK();
}

template <typename T>
Status SyncBnGradRun(KernelContext& ctx, int64_t outer, int64_t channels, int64_t inner) {
  const Tensor& x = ctx.input(1);
  const T* pdy = ctx.input(0).data<T>();
  const T* px = x.data<T>();
  const T* scale = ctx.input(2).data<T>();
  const T* mean = ctx.input(3).data<T>();
  const T* inv_std = ctx.input(4).data<T>();
  // Local dB, dScale and count; then their sums over the workers.
  std::vector<double> local(2 * channels + 1);
  ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double db = 0, ds = 0;
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = (n * channels + c) * inner + i;
          db += pdy[k];
          ds += static_cast<double>(pdy[k]) * ((static_cast<double>(px[k]) - mean[c]) * inv_std[c]);
        }
      local[c] = db;
      local[channels + c] = ds;
    }
  });
  local[2 * channels] = static_cast<double>(outer * inner);
  std::vector<double> global = local;
  STRATA_RETURN_IF_ERROR(SumOverWorkers(&global, ctx.node().Describe()));
  const double count = global[2 * channels];
  if (!(count > 0)) return ctx.Error("the workers' batches hold no elements");
  if (ctx.output_wanted(0)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, x.dtype(), x.shape()));
    T* pdx = dx->data<T>();
    ParallelFor(outer * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t c = t % channels;
                    const double k = static_cast<double>(scale[c]) * inv_std[c];
                    const double mdb = global[c] / count, mds = global[channels + c] / count;
                    for (int64_t i = 0; i < inner; ++i) {
                      const int64_t j = t * inner + i;
                      const double xhat = (static_cast<double>(px[j]) - mean[c]) * inv_std[c];
                      pdx[j] = static_cast<T>(k * (pdy[j] - mdb - xhat * mds));
                    }
                  }
                });
  }
  for (int out = 1; out <= 2; ++out) {
    if (!ctx.output_wanted(out)) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(out, ctx.input(2).dtype(), Shape{channels}));
    const double* src = local.data() + (out == 1 ? channels : 0);
    for (int64_t c = 0; c < channels; ++c) t->data<T>()[c] = static_cast<T>(src[c]);
  }
  return Status::OK();
}

Status SyncBnGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  int64_t outer = 0, channels = 0, inner = 0;
  STRATA_RETURN_IF_ERROR(CheckLayout(ctx, x, 2, 4, &outer, &channels, &inner));
  if (dy.dtype() != x.dtype() || dy.shape() != x.shape())
    return ctx.Error("dY ", dy.TypeString(), " must match X ", x.TypeString());
  return x.dtype() == DType::kFloat64 ? SyncBnGradRun<double>(ctx, outer, channels, inner)
                                      : SyncBnGradRun<float>(ctx, outer, channels, inner);
}

}  // namespace

void RegisterSyncBatchNormalization(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SyncBatchNormalization";
  s.min_inputs = 5;
  s.max_inputs = 5;
  s.min_outputs = 1;
  s.max_outputs = 5;
  s.infer = SyncBnInfer;
  s.reference = SyncBnCompute;
  s.grad = SyncBnGrad;
  r->Add(std::move(s));
  OpSchema g;
  g.domain = "strata";
  g.name = "SyncBatchNormalizationGrad";
  g.min_inputs = 5;
  g.max_inputs = 5;
  g.min_outputs = 1;
  g.max_outputs = 3;
  g.infer = SyncBnGradInfer;
  g.reference = SyncBnGradCompute;
  g.no_grad_reason = "second derivatives of batch normalization are not implemented";
  r->Add(std::move(g));
}

}  // namespace strata::ops
