// strata.ReluGrad(dY, Y) -> dX = dY where Y > 0, else 0: the gradient of Relu, computed from its output.
#include "ops/defs/train/train_util.h"

namespace strata::ops {
namespace {

Status ReluGradInfer(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(0));
  return Status::OK();
}

Status ReluGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (dy.dtype() != y.dtype() || dy.shape() != y.shape())
    return ctx.Error("dY and Y must have the same type, got ", dy.TypeString(), " and ", y.TypeString());
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), dy.shape()));
  return DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* __restrict g = dy.data<T>();
    const T* __restrict py = y.data<T>();
    T* __restrict out = dx->data<T>();
    train_ops::ParallelElements(dy.num_elements(), [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
#pragma omp simd
        for (int64_t i = b; i < e; ++i) out[i] = py[i] > T(0) ? g[i] : T(0);
      } else {
        for (int64_t i = b; i < e; ++i) out[i] = C(py[i]) > C(0) ? g[i] : T(C(0));
      }
    });
    return Status::OK();
  });
}

}  // namespace

void RegisterReluGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ReluGrad";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = ReluGradInfer;
  s.reference = ReluGradCompute;
  s.no_grad_reason = "second derivatives are not needed for training";
  r->Add(std::move(s));
}

}  // namespace strata::ops
