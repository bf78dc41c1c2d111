// Where (opset 9, 16): out = condition ? X : Y, numpy broadcasting across all three inputs. condition is bool; X and
// Y share any one dtype (strings included), which is the output's.
#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

template <typename T>
void SelectRows(const bool* c, const Shape& cs, const T* x, const Shape& xs, const T* y, const Shape& ys, T* out,
                const Shape& os) {
  const ew::BroadcastPlan<3> plan = ew::MakeBroadcastPlan<3>(os, {cs, xs, ys});
  ew::ForEachRow<3>(plan, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    const bool* pc = c + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    T* po = out + o;
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i * st[0]] ? px[i * st[1]] : py[i * st[2]];
    }
  });
}

Status WhereCompute(KernelContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kBool));
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (x.dtype() != y.dtype())
    return ctx.Error("X and Y must have the same element type, got ", DTypeName(x.dtype()), " and ",
                     DTypeName(y.dtype()));
  auto s1 = BroadcastShapes(c.shape(), x.shape());
  if (!s1.ok()) return ctx.Error(s1.status().message());
  auto s2 = BroadcastShapes(*s1, y.shape());
  if (!s2.ok()) return ctx.Error(s2.status().message());
  const Shape out_shape = *s2;
  STRATA_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(0, x.dtype(), out_shape));
  return DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SelectRows<T>(c.data<bool>(), c.shape(), x.data<T>(), x.shape(), y.data<T>(), y.shape(), z->data<T>(), out_shape);
    return Status::OK();
  });
}

Status InferWhere(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, TypeClass::kBool));
  const DType tx = ctx.input_dtype(1), ty = ctx.input_dtype(2);
  if (tx != DType::kUndefined && ty != DType::kUndefined && tx != ty)
    return ctx.Error("X and Y must have the same element type, got ", DTypeName(tx), " and ", DTypeName(ty));
  auto s1 = BroadcastPartial(ctx.input_shape(0), ctx.input_shape(1));
  if (!s1.ok()) return ctx.Error(s1.status().message());
  auto s2 = BroadcastPartial(*s1, ctx.input_shape(2));
  if (!s2.ok()) return ctx.Error(s2.status().message());
  ctx.SetOutput(0, tx != DType::kUndefined ? tx : ty, *s2);
  return Status::OK();
}

// The gradient goes to X where the condition holds and to Y elsewhere, each reduced to its input's shape.
Status WhereGrad(GradContext& ctx) {
  const std::string& dz = ctx.output_grad(0);
  const std::string& c = In(ctx, 0);
  const std::string zero = ScalarConst(ctx, InType(ctx, 1), 0.0);
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, ReduceGradTo(ctx, EWhere(ctx, c, dz, zero), 1));
  if (ctx.needs_input_grad(2)) ctx.SetInputGrad(2, ReduceGradTo(ctx, EWhere(ctx, c, zero, dz), 2));
  return Status::OK();
}

}  // namespace

void RegisterWhere(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Where", 9, 3, 3, InferWhere, WhereCompute), WhereGrad));
}

}  // namespace strata::ops
