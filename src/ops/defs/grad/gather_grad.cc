// strata.GatherGrad(dY, indices, shape), attribute axis (default 0): the gradient of Gather. dX has `shape` (the
// gathered data's shape) and dX[..., indices[j], ...] += dY[..., j, ...] along `axis`: rows gathered more than once
// accumulate (the Embedding gradient). Negative indices count from the back; every index is checked. Float types;
// accumulation is in the compute type, row by row in index order (deterministic).
#include "core/parallel.h"
#include "ops/grad_util.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

Status GatherGradInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("dY must be a float tensor, got ", DTypeName(t));
  const DType it = ctx.input_dtype(1);
  if (it != DType::kUndefined && it != DType::kInt32 && it != DType::kInt64)
    return ctx.Error("indices must be int32 or int64, got ", DTypeName(it));
  const Tensor* shape = ctx.input_value(2);
  if (shape == nullptr) {
    const PartialShape& s = ctx.input_shape(2);
    PartialShape out;
    if (s.rank_known && s.rank() == 1 && s.dims[0].known()) out = PartialShape::Of(std::vector<Dim>(s.dims[0].value));
    ctx.SetOutput(0, t, out);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(*shape, "GatherGrad shape"));
  ctx.SetOutput(0, t, PartialShape::Of(std::vector<Dim>(dims.begin(), dims.end())));
  return Status::OK();
}

Status GatherGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(ctx.input(1), "GatherGrad indices"));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(ctx.input(2), "GatherGrad shape"));
  const Shape shape(dims);
  if (shape.rank() == 0) return ctx.Error("the data shape must have rank >= 1");
  for (int64_t d : dims)
    if (d < 0) return ctx.Error("the data shape ", shape.ToString(), " has a negative dimension");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), shape.rank(), ctx.node()));
  Shape want;
  for (int d = 0; d < axis; ++d) want.PushBack(shape[d]);
  for (int64_t d : ctx.input(1).shape()) want.PushBack(d);
  for (int d = axis + 1; d < shape.rank(); ++d) want.PushBack(shape[d]);
  if (dy.shape() != want)
    return ctx.Error("dY has shape ", dy.shape().ToString(), ", expected ", want.ToString(), " for data ",
                     shape.ToString(), " and indices ", ctx.input(1).shape().ToString());
  const int64_t dim = shape[axis];
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      return ctx.Error("index ", i, " is out of range for a dimension of size ", dim, " (expected [", -dim, ", ",
                       dim - 1, "])");
    if (i < 0) i += dim;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), shape));
  const int64_t outer = shape.Product(0, axis), inner = shape.Product(axis + 1, shape.rank());
  const int64_t n = static_cast<int64_t>(idx.size());
  return DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* src = dy.data<T>();
    T* dst = dx->data<T>();
    std::fill_n(dst, dx->num_elements(), T(C(0)));
    // Parallel over (outer, column blocks): each task owns its output columns, so rows accumulate in index order.
    const int64_t block = 256, blocks = (inner + block - 1) / block;
    ParallelFor(outer * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / blocks, c0 = (t % blocks) * block, c1 = std::min(inner, c0 + block);
        for (int64_t j = 0; j < n; ++j) {
          const T* row = src + (o * n + j) * inner;
          T* out = dst + (o * dim + idx[j]) * inner;
          for (int64_t c = c0; c < c1; ++c) out[c] = T(static_cast<C>(static_cast<C>(out[c]) + static_cast<C>(row[c])));
        }
      }
    });
    return Status::OK();
  });
}

// GatherGrad is linear in dY: its gradient is Gather(ddX, indices).
Status GatherGradGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(0, Emit1(ctx, "Gather", {ctx.output_grad(0), In(ctx, 1)}, CopyAttrs(ctx.node(), {"axis"})));
  return Status::OK();
}

}  // namespace

void RegisterGatherGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "GatherGrad";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = GatherGradInfer;
  s.reference = GatherGradCompute;
  s.grad = GatherGradGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
