// Shared by the strata-domain activation gradient ops (ReluGrad, SigmoidGrad, TanhGrad, GeluGrad): dX = f(dY, V)
// elementwise, where V is the forward output (or input) of the same shape and float type.
#pragma once

#include "ops/elementwise.h"

namespace strata::ops {

// Inference: two inputs of one float type and one shape (unknown dims accepted); output 0 like input 0.
Status InferActivationGrad(InferContext& ctx);

// Runs dx[i] = f(dy[i], v[i]) in the compute type (float for the 16-bit floats); `f` is generic over float/double.
template <typename F>
Status ActivationGradKernel(KernelContext& ctx, F&& f) {
  const Tensor& dy = ctx.input(0);
  const Tensor& v = ctx.input(1);
  if (dy.dtype() != v.dtype() || dy.shape() != v.shape())
    return ctx.Error("dY ", dy.TypeString(), " and the forward value ", v.TypeString(),
                     " must have the same type and shape");
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), dy.shape()));
  return DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* pdy = dy.data<T>();
    const T* pv = v.data<T>();
    T* out = dx->data<T>();
    const int64_t n = dy.num_elements();
    for (int64_t i = 0; i < n; ++i) out[i] = T(static_cast<C>(f(static_cast<C>(pdy[i]), static_cast<C>(pv[i]))));
    return Status::OK();
  });
}

// The schema of an activation gradient op in the strata domain.
OpSchema ActivationGradSchema(const char* name, ComputeFn reference, GradFn grad = nullptr);

}  // namespace strata::ops
