// Softmax, LogSoftmax, Hardmax (opset 1, 11, 13): three near-identical ops sharing this file, one table row each.
// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalises each row of the flattened [axis:] part;
// opset >= 13 normalises along `axis` alone (default -1). Negative axes count from the end. Softmax and LogSoftmax
// subtract the maximum first (numerically stable); Hardmax sets 1 at the first maximum (a NaN counts as the maximum, as
// numpy's argmax does) and 0 elsewhere. Float element types (16-bit floats compute in float32); rank >= 1.
#include <cmath>

#include "core/parallel.h"
#include "ops/defs/grad/softmax_grad.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

struct SoftmaxLayout {
  int64_t outer = 1, len = 1, inner = 1;  // normalise over `len` elements spaced `inner` apart
};

StatusOr<SoftmaxLayout> Layout(const Node& node, int opset, const Shape& s) {
  if (s.rank() == 0) return InvalidArgumentError(node.Describe(), ": the input must have rank >= 1, got a scalar");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(node.GetInt("axis", opset < 13 ? 1 : -1), s.rank(), node));
  SoftmaxLayout l;
  l.outer = s.Product(0, axis);
  if (opset < 13) {
    l.len = s.Product(axis, s.rank());
  } else {
    l.len = s[axis];
    l.inner = s.Product(axis + 1, s.rank());
  }
  return l;
}

Status SoftmaxInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "input"));
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known) {
    if (x.rank() == 0) return ctx.Error("the input must have rank >= 1, got a scalar");
    STRATA_RETURN_IF_ERROR(
        NormalizeAxis(ctx.node().GetInt("axis", ctx.opset() < 13 ? 1 : -1), x.rank(), ctx.node()).status());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::OK();
}

// One outer slice: `len` x `inner` values, normalised along len for each of the inner positions.
template <SoftmaxKind kKind, typename T>
void SoftmaxSlice(const T* x, T* y, int64_t len, int64_t inner, std::vector<ComputeType<T>>* scratch) {
  using C = ComputeType<T>;
  scratch->resize(2 * inner);
  C* best = scratch->data();
  C* sum = best + inner;
  if constexpr (kKind == SoftmaxKind::kHardmax) {
    std::vector<int64_t> at(inner, 0);
    for (int64_t i = 0; i < inner; ++i) best[i] = ToCompute(x[i]);
    for (int64_t j = 1; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const C v = ToCompute(x[j * inner + i]);
        if (v > best[i] || (std::isnan(v) && !std::isnan(best[i]))) best[i] = v, at[i] = j;
      }
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) y[j * inner + i] = FromCompute<T>(C(at[i] == j ? 1 : 0));
    return;
  } else {
    // exp() values are kept in float32 for 16-bit outputs (rounded once at the end), in y itself otherwise.
    C* ex = nullptr;
    if constexpr (std::is_same_v<T, C>) {
      ex = y;
    } else {
      scratch->resize(2 * inner + len * inner);
      best = scratch->data();
      sum = best + inner;
      ex = sum + inner;
    }
    for (int64_t i = 0; i < inner; ++i) best[i] = ToCompute(x[i]), sum[i] = C(0);
    for (int64_t j = 1; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) best[i] = std::max(best[i], ToCompute(x[j * inner + i]));
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const C e = std::exp(ToCompute(x[j * inner + i]) - best[i]);
        sum[i] += e;
        if constexpr (kKind == SoftmaxKind::kSoftmax) ex[j * inner + i] = e;
      }
    for (int64_t i = 0; i < inner; ++i) sum[i] = kKind == SoftmaxKind::kSoftmax ? C(1) / sum[i] : std::log(sum[i]);
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = j * inner + i;
        if constexpr (kKind == SoftmaxKind::kSoftmax)
          y[k] = FromCompute<T>(ex[k] * sum[i]);
        else
          y[k] = FromCompute<T>(ToCompute(x[k]) - best[i] - sum[i]);
      }
  }
}

template <SoftmaxKind kKind>
Status SoftmaxCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("the input must be a float tensor, got ", DTypeName(x.dtype()));
  STRATA_ASSIGN_OR_RETURN(SoftmaxLayout l, Layout(ctx.node(), ctx.opset(), x.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  if (l.len == 0) return Status::OK();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const int64_t slice = l.len * l.inner;
    ParallelFor(l.outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, slice)), [&](int64_t begin, int64_t end) {
      std::vector<ComputeType<T>> scratch;
      for (int64_t o = begin; o < end; ++o)
        SoftmaxSlice<kKind, T>(px + o * slice, py + o * slice, l.len, l.inner, &scratch);
    });
    return Status::OK();
  });
}

OpSchema SoftmaxSchema(const char* name, ComputeFn fn) {
  OpSchema s;
  s.name = name;
  s.since_version = 13;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = SoftmaxInfer;
  s.reference = fn;
  return s;
}

// dX = strata.SoftmaxGrad / LogSoftmaxGrad (dY, Y) along the same axes.
Status SoftmaxGradient(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, ctx.node().op_type == "Softmax" ? "SoftmaxGrad" : "LogSoftmaxGrad",
                            {ctx.output_grad(0), Out(ctx, 0)}, SoftmaxGradAttrs(ctx.node()), graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterSoftmax(OpRegistry* r) {
  r->Add(WithGrad(SoftmaxSchema("Softmax", SoftmaxCompute<SoftmaxKind::kSoftmax>), SoftmaxGradient));
}
void RegisterLogSoftmax(OpRegistry* r) {
  r->Add(WithGrad(SoftmaxSchema("LogSoftmax", SoftmaxCompute<SoftmaxKind::kLogSoftmax>), SoftmaxGradient));
}
void RegisterHardmax(OpRegistry* r) {
  OpSchema s = SoftmaxSchema("Hardmax", SoftmaxCompute<SoftmaxKind::kHardmax>);
  s.no_grad_reason = "piecewise-constant one-hot output (zero gradient almost everywhere)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
