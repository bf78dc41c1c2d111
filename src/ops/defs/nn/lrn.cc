// LRN (opset 1, 13): local response normalisation across channels of X (N, C, D1..Dk), rank >= 3:
//   square_sum[n, c, d] = sum of X[n, i, d]^2 for i in [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]
//   Y = X / (bias + alpha / size * square_sum) ^ beta
// size is required and positive. Float element types (16-bit floats compute in float32).
#include <cmath>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"

namespace strata::ops {
namespace {

StatusOr<int64_t> ReadSize(const Node& node) {
  STRATA_ASSIGN_OR_RETURN(int64_t size, node.RequireInt("size"));
  if (size < 1) return InvalidArgumentError(node.Describe(), ": size must be >= 1, got ", size);
  return size;
}

Status LrnInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "X"));
  STRATA_RETURN_IF_ERROR(ReadSize(ctx.node()).status());
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known && x.rank() < 3) return ctx.Error("X must have rank >= 3 (N, C, spatial...), got ", x.ToString());
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::OK();
}

Status LrnCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  if (x.rank() < 3) return ctx.Error("X must have rank >= 3 (N, C, spatial...), got ", x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(int64_t size, ReadSize(ctx.node()));
  const double alpha = ctx.node().GetFloat("alpha", 1e-4f), beta = ctx.node().GetFloat("beta", 0.75f);
  const double bias = ctx.node().GetFloat("bias", 1.0f);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t batch = x.dim(0), channels = x.dim(1), inner = x.shape().Product(2, x.rank());
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const C scale = static_cast<C>(alpha / static_cast<double>(size));
    ParallelFor(batch * channels, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, inner * size)),
                [&](int64_t begin, int64_t end) {
                  std::vector<C> acc(inner);
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t n = t / channels, c = t % channels;
                    std::fill(acc.begin(), acc.end(), C(0));
                    const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
                    for (int64_t i = lo; i <= hi; ++i) {
                      const T* src = px + (n * channels + i) * inner;
                      for (int64_t j = 0; j < inner; ++j) {
                        const C v = ToCompute(src[j]);
                        acc[j] += v * v;
                      }
                    }
                    const T* src = px + t * inner;
                    T* dst = py + t * inner;
                    for (int64_t j = 0; j < inner; ++j)
                      dst[j] = FromCompute<T>(ToCompute(src[j]) /
                                              std::pow(static_cast<C>(bias) + scale * acc[j], static_cast<C>(beta)));
                  }
                });
    return Status::OK();
  });
}

}  // namespace

void RegisterLRN(OpRegistry* r) {
  OpSchema s;
  s.name = "LRN";
  s.since_version = 13;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = LrnInfer;
  s.reference = LrnCompute;
  s.no_grad_reason = "not implemented: the gradient of local response normalization";
  r->Add(std::move(s));
}

}  // namespace strata::ops
