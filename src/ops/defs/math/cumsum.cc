// CumSum (opset 11, 14: float16/bfloat16): the running sum along the axis given by input 1 (a 0-D int32/int64 tensor;
// a 1-element 1-D tensor is accepted too). exclusive=1 leaves each element out of its own sum; reverse=1 sums from
// the end. Floats accumulate in their compute type (float for the 16-bit floats), integers wrap like numpy.
#include "ops/defs/reduce/reduce_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<int> ReadCumSumAxis(const Node& node, const Tensor& t, int rank) {
  if (t.num_elements() != 1 || t.rank() > 1)
    return InvalidArgumentError(node.Describe(), ": axis must be a 0-D tensor, got shape ", t.shape().ToString());
  auto v = ReadInts(t, "axis");
  if (!v.ok()) return InvalidArgumentError(node.Describe(), ": ", v.status().message());
  return NormalizeAxis((*v)[0], rank, node);
}

Status CumSumInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t) && !IsInteger(t))
    return ctx.Error("input x must be a number tensor, got ", DTypeName(t));
  const PartialShape& as = ctx.input_shape(1);
  if (as.rank_known && as.rank() > 1) return ctx.Error("axis must be a 0-D tensor, got shape ", as.ToString());
  const DType at = ctx.input_dtype(1);
  if (at != DType::kUndefined && at != DType::kInt32 && at != DType::kInt64)
    return ctx.Error("axis must be int32 or int64, got ", DTypeName(at));
  const PartialShape& in = ctx.input_shape(0);
  if (in.rank_known && in.rank() == 0) return ctx.Error("input x must have rank >= 1, got a scalar");
  if (const Tensor* axis = ctx.input_value(1); axis != nullptr && in.rank_known)
    STRATA_RETURN_IF_ERROR(ReadCumSumAxis(ctx.node(), *axis, in.rank()).status());
  ctx.SetOutput(0, t, in);
  return Status::OK();
}

template <typename T>
void CumSumTyped(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  using Acc = SumAcc<T>;
  std::vector<Acc> acc(inner);
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t i = reverse ? n - 1 - step : step;
      const int64_t off = (o * n + i) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const Acc v = static_cast<Acc>(ToCompute(x[off + j]));
        if (exclusive) {
          y[off + j] = static_cast<T>(static_cast<ComputeType<T>>(acc[j]));
          acc[j] = static_cast<Acc>(acc[j] + v);
        } else {
          acc[j] = static_cast<Acc>(acc[j] + v);
          y[off + j] = static_cast<T>(static_cast<ComputeType<T>>(acc[j]));
        }
      }
    }
  }
}

Status CumSumCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  if (s.rank() == 0) return ctx.Error("input x must have rank >= 1, got a scalar");
  STRATA_ASSIGN_OR_RETURN(int axis, ReadCumSumAxis(ctx.node(), ctx.input(1), s.rank()));
  const bool exclusive = ctx.node().GetInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().GetInt("reverse", 0) != 0;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), s));
  if (x.num_elements() == 0) return Status::OK();
  const int64_t outer = s.Product(0, axis), n = s[axis], inner = s.Product(axis + 1, s.rank());
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    CumSumTyped(x.data<T>(), y->data<T>(), outer, n, inner, exclusive, reverse);
    return Status::OK();
  });
}

// The adjoint of a running sum is the running sum in the other direction (exclusive stays exclusive).
Status CumSumGrad(GradContext& ctx) {
  AttributeMap attrs = CopyAttrs(ctx.node(), {"exclusive"});
  attrs["reverse"] = Attribute::Int(ctx.node().GetInt("reverse", 0) != 0 ? 0 : 1);
  ctx.SetInputGrad(0, Emit1(ctx, "CumSum", {ctx.output_grad(0), In(ctx, 1)}, std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterCumSum(OpRegistry* r) {
  OpSchema s;
  s.name = "CumSum";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = CumSumInfer;
  s.reference = CumSumCompute;
  s.grad = CumSumGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
