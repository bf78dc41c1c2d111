// Reference kernels for elementwise ops: unary maps and broadcasting binary/variadic maps.
#pragma once

#include "ops/op_util.h"

namespace strata::ops {

// out[i] = f(in[i]) with out dtype = `out_dtype` (input 0's dtype when kUndefined).
template <typename In, typename Out, typename F>
Status UnaryMap(KernelContext& ctx, DType out_dtype, F&& f) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, out_dtype == DType::kUndefined ? x.dtype() : out_dtype, x.shape()));
  const In* in = x.data<In>();
  Out* out = y->data<Out>();
  const int64_t n = x.num_elements();
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
  return Status::OK();
}

// out = f(a, b) with numpy broadcasting.
template <typename In, typename Out, typename F>
Status BinaryMap(KernelContext& ctx, DType out_dtype, F&& f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  auto shape = BroadcastShapes(a.shape(), b.shape());
  if (!shape.ok()) return ctx.Error(shape.status().message());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, out_dtype == DType::kUndefined ? a.dtype() : out_dtype, *shape));
  const In* pa = a.data<In>();
  const In* pb = b.data<In>();
  Out* out = y->data<Out>();
  const int64_t n = y->num_elements();
  if (a.shape() == *shape && b.shape() == *shape) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(pa[i], pb[i]);
  } else if (b.num_elements() == 1 && a.shape() == *shape) {
    const In bv = pb[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(pa[i], bv);
  } else if (a.num_elements() == 1 && b.shape() == *shape) {
    const In av = pa[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, pb[i]);
  } else {
    std::array<std::vector<int64_t>, 2> st{BroadcastStrides(a.shape(), *shape), BroadcastStrides(b.shape(), *shape)};
    ForEachBroadcast<2>(*shape, st, [&](int64_t o, const std::array<int64_t, 2>& off) {
      out[o] = f(pa[off[0]], pb[off[1]]);
    });
  }
  return Status::OK();
}

// Folds any number of broadcasting inputs with f (Sum, Min, Max, Mean's sum part).
template <typename T, typename F>
Status VariadicFold(KernelContext& ctx, F&& f) {
  Shape shape = ctx.input(0).shape();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    auto s = BroadcastShapes(shape, ctx.input(i).shape());
    if (!s.ok()) return ctx.Error(s.status().message());
    shape = *s;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, ctx.input(0).dtype(), shape));
  T* out = y->data<T>();
  {
    const Tensor& a = ctx.input(0);
    std::array<std::vector<int64_t>, 1> st{BroadcastStrides(a.shape(), shape)};
    const T* pa = a.data<T>();
    ForEachBroadcast<1>(shape, st, [&](int64_t o, const std::array<int64_t, 1>& off) { out[o] = pa[off[0]]; });
  }
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& b = ctx.input(i);
    std::array<std::vector<int64_t>, 1> st{BroadcastStrides(b.shape(), shape)};
    const T* pb = b.data<T>();
    ForEachBroadcast<1>(shape, st, [&](int64_t o, const std::array<int64_t, 1>& off) { out[o] = f(out[o], pb[off[0]]); });
  }
  return Status::OK();
}

}  // namespace strata::ops
