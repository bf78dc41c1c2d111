#include "ops/defs/grad/loss_grad.h"

#include <cmath>

#include "core/parallel.h"
#include "ops/defs/loss/loss_util.h"
#include "ops/op_util.h"

namespace strata::ops {

Status InferLossGrad(InferContext& ctx, bool softmax) {
  STRATA_RETURN_IF_ERROR(ParseLossAttrs(ctx.node()).status());
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t))
    return ctx.Error("dloss must be a float tensor, got ", DTypeName(t));
  const DType tt = ctx.input_dtype(2);
  if (tt != DType::kUndefined && tt != DType::kInt32 && tt != DType::kInt64)
    return ctx.Error("the target must be int32 or int64, got ", DTypeName(tt));
  if (softmax) {
    ctx.SetOutput(0, t, ctx.input_shape(1));
    return Status::OK();
  }
  PartialShape out;
  if (const Tensor* shape = ctx.input_value(1)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(*shape, "input shape"));
    out = PartialShape::Of(std::vector<Dim>(dims.begin(), dims.end()));
  } else if (ctx.input_shape(1).rank_known && ctx.input_shape(1).dims[0].known()) {
    out = PartialShape::Of(std::vector<Dim>(ctx.input_shape(1).dims[0].value));
  }
  ctx.SetOutput(0, t, out);
  return Status::OK();
}

namespace {

template <typename T>
Status LossGradRun(KernelContext& ctx, const LossAttrs& attrs, bool softmax, const Shape& in_shape) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Tensor& dloss = ctx.input(0);
  const Tensor& target_t = ctx.input(2);
  const int64_t n_count = in_shape[0], c_count = in_shape[1], d_count = in_shape.Product(2, in_shape.rank());
  bool ok = target_t.rank() == in_shape.rank() - 1 && target_t.dim(0) == n_count;
  for (int i = 1; ok && i < target_t.rank(); ++i) ok = target_t.dim(i) == in_shape[i + 1];
  if (!ok) return ctx.Error("the target shape ", target_t.shape().ToString(), " does not match ", in_shape.ToString());
  const Shape dloss_want = attrs.reduction == LossReduction::kNone ? target_t.shape() : Shape{};
  if (dloss.num_elements() != dloss_want.NumElements())
    return ctx.Error("dloss has shape ", dloss.shape().ToString(), ", expected ", dloss_want.ToString());
  const T* w = nullptr;
  if (ctx.has_input(3)) {
    const Tensor& wt = ctx.input(3);
    if (wt.dtype() != dloss.dtype() || wt.rank() != 1 || wt.dim(0) != c_count)
      return ctx.Error("the weight must be ", DTypeName(dloss.dtype()), " [", c_count, "], got ", wt.TypeString());
    w = wt.data<T>();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> target, ReadInts(target_t, "target"));
  // a[i] = w[t] * s_i per position; 0 where ignored.
  const int64_t count = n_count * d_count;
  std::vector<C> a(static_cast<size_t>(count), C(0));
  double weight_sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = target[i];
    if (attrs.has_ignore && t == attrs.ignore_index) continue;
    if (t < 0 || t >= c_count)
      return ctx.Error("target value ", t, " at flat position ", i, " is outside [0, ", c_count, ")");
    a[i] = w ? static_cast<C>(ToCompute(w[t])) : C(1);
    weight_sum += static_cast<double>(a[i]);
  }
  const T* pd = dloss.data<T>();
  if (attrs.reduction == LossReduction::kNone) {
    for (int64_t i = 0; i < count; ++i) a[i] *= static_cast<C>(ToCompute(pd[i]));
  } else {
    double s = static_cast<double>(ToCompute(pd[0]));
    if (attrs.reduction == LossReduction::kMean) s /= weight_sum;
    for (C& v : a) v = static_cast<C>(v * s);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dloss.dtype(), in_shape));
  T* out = dx->data<T>();
  const T* logp = softmax ? ctx.input(1).data<T>() : nullptr;
  ParallelFor(n_count, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, c_count * d_count)),
              [&](int64_t begin, int64_t end) {
                for (int64_t n = begin; n < end; ++n)
                  for (int64_t c = 0; c < c_count; ++c)
                    for (int64_t d = 0; d < d_count; ++d) {
                      const int64_t i = n * d_count + d, o = (n * c_count + c) * d_count + d;
                      const C hit = target[i] == c ? C(1) : C(0);
                      const C v = softmax ? a[i] * (std::exp(static_cast<C>(ToCompute(logp[o]))) - hit) : -a[i] * hit;
                      out[o] = T(static_cast<ComputeType<T>>(v));
                    }
              });
  return Status::OK();
}

}  // namespace

Status LossGradCompute(KernelContext& ctx, bool softmax) {
  STRATA_ASSIGN_OR_RETURN(LossAttrs attrs, ParseLossAttrs(ctx.node()));
  Shape in_shape;
  if (softmax) {
    in_shape = ctx.input(1).shape();
    if (ctx.input(1).dtype() != ctx.input(0).dtype())
      return ctx.Error("log_prob must have dloss's element type ", DTypeName(ctx.input(0).dtype()));
  } else {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(ctx.input(1), "input shape"));
    for (int64_t d : dims)
      if (d < 0) return ctx.Error("the input shape ", dims, " has a negative dimension");
    in_shape = Shape(dims);
  }
  if (in_shape.rank() < 2) return ctx.Error("the input must have shape [N, C, d1, ...], got ", in_shape.ToString());
  return DispatchFloat(ctx.input(0).dtype(), [&](auto tag) {
    return LossGradRun<typename decltype(tag)::type>(ctx, attrs, softmax, in_shape);
  });
}

OpSchema LossGradSchema(const char* name) {
  OpSchema s;
  s.domain = "strata";
  s.name = name;
  s.min_inputs = 3;
  s.max_inputs = 4;
  s.no_grad_reason = "second derivatives of the losses are not implemented";
  return s;
}

}  // namespace strata::ops
