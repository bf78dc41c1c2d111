// LpNormalization (opset 1): Y = X / ||X||_p along `axis` (default -1, negative counts from the end), p in {1, 2}
// (default 2). A slice whose norm is zero gives zeros (instead of 0/0). Float element types (16-bit floats compute in
// float32).
#include <cmath>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<int64_t> ReadLpP(const Node& node) {
  const int64_t p = node.GetInt("p", 2);
  if (p != 1 && p != 2) return InvalidArgumentError(node.Describe(), ": p must be 1 or 2, got ", p);
  return p;
}

Status LpNormInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "input"));
  STRATA_RETURN_IF_ERROR(ReadLpP(ctx.node()).status());
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known) {
    if (x.rank() == 0) return ctx.Error("input must have rank >= 1");
    STRATA_RETURN_IF_ERROR(NormalizeAxis(ctx.node().GetInt("axis", -1), x.rank(), ctx.node()).status());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::OK();
}

Status LpNormCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("input must be a float tensor, got ", DTypeName(x.dtype()));
  if (x.rank() == 0) return ctx.Error("input must have rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", -1), x.rank(), ctx.node()));
  STRATA_ASSIGN_OR_RETURN(int64_t p, ReadLpP(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t outer = x.shape().Product(0, axis), len = x.dim(axis), inner = x.shape().Product(axis + 1, x.rank());
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    ParallelFor(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, len)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t base = t / inner * len * inner + t % inner;
        C norm = C(0);
        for (int64_t j = 0; j < len; ++j) {
          const C v = ToCompute(px[base + j * inner]);
          norm += p == 1 ? std::abs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t j = 0; j < len; ++j)
          py[base + j * inner] = FromCompute<T>(norm == C(0) ? C(0) : ToCompute(px[base + j * inner]) / norm);
      }
    });
    return Status::OK();
  });
}

// y = x / n with n = ||x||_p along the axis: dX = (dY - s * sum(dY * y)) / n, s = y (p = 2) or sign(x) (p = 1).
Status LpNormalizationGrad(GradContext& ctx) {
  const int64_t p = ctx.node().GetInt("p", 2);
  if (p != 1 && p != 2) return UnimplementedError(ctx.node().Describe(), ": p must be 1 or 2");
  const std::string& x = In(ctx, 0);
  const std::string& y = Out(ctx, 0);
  const std::string& dy = ctx.output_grad(0);
  AttributeMap keep;
  keep["keepdims"] = Attribute::Int(1);
  keep["axes"] = Attribute::Ints({ctx.node().GetInt("axis", -1)});
  const std::string norm = Emit1(ctx, p == 2 ? "ReduceL2" : "ReduceL1", {x}, keep);
  AttributeMap keep2;
  keep2["keepdims"] = Attribute::Int(1);
  const std::string dot =
      Emit1(ctx, "ReduceSum", {EMul(ctx, dy, y), ConstInts(ctx, {ctx.node().GetInt("axis", -1)})}, std::move(keep2));
  const std::string s = p == 2 ? y : Emit1(ctx, "Sign", {x});
  ctx.SetInputGrad(0, EDiv(ctx, ESub(ctx, dy, EMul(ctx, s, dot)), norm));
  return Status::OK();
}

}  // namespace

void RegisterLpNormalization(OpRegistry* r) {
  OpSchema s;
  s.name = "LpNormalization";
  s.since_version = 1;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = LpNormInfer;
  s.reference = LpNormCompute;
  s.grad = LpNormalizationGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
