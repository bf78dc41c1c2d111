#include "ops/defs/grad/activation_grad.h"

namespace strata::ops {

Status InferActivationGrad(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("dY must be a float tensor, got ", DTypeName(t));
  if (ctx.input_dtype(1) != DType::kUndefined && t != DType::kUndefined && ctx.input_dtype(1) != t)
    return ctx.Error("dY (", DTypeName(t), ") and the forward value (", DTypeName(ctx.input_dtype(1)),
                     ") must have the same element type");
  const PartialShape& a = ctx.input_shape(0);
  const PartialShape& b = ctx.input_shape(1);
  if (a.rank_known && b.rank_known) {
    bool ok = a.rank() == b.rank();
    for (int i = 0; ok && i < a.rank(); ++i)
      ok = !a.dims[i].known() || !b.dims[i].known() || a.dims[i].value == b.dims[i].value;
    if (!ok) return ctx.Error("dY ", a.ToString(), " and the forward value ", b.ToString(), " must have one shape");
  }
  ctx.SetOutput(0, t, a.rank_known ? a : b);
  return Status::OK();
}

OpSchema ActivationGradSchema(const char* name, ComputeFn reference, GradFn grad) {
  OpSchema s;
  s.domain = "strata";
  s.name = name;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = InferActivationGrad;
  s.reference = reference;
  s.grad = grad;
  if (grad == nullptr) s.no_grad_reason = "second derivatives of this activation are not implemented";
  return s;
}

}  // namespace strata::ops
