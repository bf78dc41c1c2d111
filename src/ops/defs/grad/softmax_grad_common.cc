#include <cmath>

#include "core/parallel.h"
#include "ops/defs/grad/activation_grad.h"
#include "ops/defs/grad/softmax_grad.h"

namespace strata::ops {

Status InferSoftmaxGrad(InferContext& ctx) { return InferActivationGrad(ctx); }

namespace {

struct Layout {
  int64_t outer = 1, len = 1, inner = 1;
};

StatusOr<Layout> LayoutOf(const Node& node, const Shape& s) {
  if (s.rank() == 0) return InvalidArgumentError(node.Describe(), ": the input must have rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(node.GetInt("axis", -1), s.rank(), node));
  Layout l;
  l.outer = s.Product(0, axis);
  if (node.GetInt("flatten", 0) != 0) {
    l.len = s.Product(axis, s.rank());
  } else {
    l.len = s[axis];
    l.inner = s.Product(axis + 1, s.rank());
  }
  return l;
}

template <typename T>
void Slice(const T* dy, const T* y, T* dx, const Layout& l, bool log, std::vector<ComputeType<T>>* sums) {
  using C = ComputeType<T>;
  sums->assign(static_cast<size_t>(l.inner), C(0));
  C* s = sums->data();
  for (int64_t j = 0; j < l.len; ++j)
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t o = j * l.inner + i;
      s[i] += log ? static_cast<C>(dy[o]) : static_cast<C>(dy[o]) * static_cast<C>(y[o]);
    }
  for (int64_t j = 0; j < l.len; ++j)
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t o = j * l.inner + i;
      const C g = static_cast<C>(dy[o]), v = static_cast<C>(y[o]);
      dx[o] = T(log ? g - std::exp(v) * s[i] : v * (g - s[i]));
    }
}

}  // namespace

Status SoftmaxGradCompute(KernelContext& ctx, bool log) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (!IsFloatingPoint(dy.dtype()) || y.dtype() != dy.dtype() || y.shape() != dy.shape())
    return ctx.Error("dY ", dy.TypeString(), " and Y ", y.TypeString(), " must share one float type and shape");
  STRATA_ASSIGN_OR_RETURN(Layout l, LayoutOf(ctx.node(), dy.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), dy.shape()));
  return DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t slice = l.len * l.inner;
    const T* pdy = dy.data<T>();
    const T* py = y.data<T>();
    T* pdx = dx->data<T>();
    ParallelFor(l.outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, slice)), [&](int64_t begin, int64_t end) {
      std::vector<ComputeType<T>> sums;
      for (int64_t o = begin; o < end; ++o) Slice(pdy + o * slice, py + o * slice, pdx + o * slice, l, log, &sums);
    });
    return Status::OK();
  });
}

OpSchema SoftmaxGradSchema(const char* name, ComputeFn reference, GradFn grad) {
  OpSchema s;
  s.domain = "strata";
  s.name = name;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = InferSoftmaxGrad;
  s.reference = reference;
  s.grad = grad;
  if (grad == nullptr) s.no_grad_reason = "second derivatives of softmax are not implemented";
  return s;
}

AttributeMap SoftmaxGradAttrs(const Node& forward) {
  AttributeMap a;
  const bool legacy = forward.opset > 0 && forward.opset < 13;
  a["axis"] = Attribute::Int(forward.GetInt("axis", legacy ? 1 : -1));
  a["flatten"] = Attribute::Int(legacy ? 1 : 0);
  return a;
}

}  // namespace strata::ops
