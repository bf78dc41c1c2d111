// Compress (opset 9, 11): keeps the slices along `axis` whose entry of the 1-D bool `condition` is true; without
// axis the input is flattened first. condition may be shorter than the axis (the rest is dropped); entries past
// the end of the axis must be false.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status CompressInfer(InferContext& ctx) {
  if (ctx.input_dtype(1) != DType::kUndefined && ctx.input_dtype(1) != DType::kBool)
    return ctx.Error("condition must be bool, got ", DTypeName(ctx.input_dtype(1)));
  const PartialShape& cond = ctx.input_shape(1);
  if (cond.rank_known && cond.rank() != 1) return ctx.Error("condition must be 1-D, got ", cond.ToString());
  const PartialShape& in = ctx.input_shape(0);
  if (!ctx.node().HasAttr("axis")) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(1));
    return Status::OK();
  }
  if (!in.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  if (in.rank() == 0) return ctx.Error("Compress with an axis needs an input of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.node().GetInt("axis", 0), in.rank(), ctx.node()));
  PartialShape out = in;
  out.dims[axis] = Dim();
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

Status CompressCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DType::kBool || cond.rank() != 1)
    return ctx.Error("condition must be a 1-D bool tensor, got ", cond.TypeString());
  const bool has_axis = ctx.node().HasAttr("axis");
  int axis = 0;
  Shape shape = has_axis ? x.shape() : Shape{x.num_elements()};
  if (has_axis) {
    if (x.rank() == 0) return ctx.Error("Compress with an axis needs an input of rank >= 1");
    STRATA_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node().GetInt("axis", 0), x.rank(), ctx.node()));
  }
  const int64_t dim = shape[axis];
  std::vector<int64_t> keep;
  const bool* c = cond.data<bool>();
  for (int64_t i = 0; i < cond.dim(0); ++i) {
    if (!c[i]) continue;
    if (i >= dim) return ctx.Error("condition has a true entry at ", i, " but the axis has only ", dim, " elements");
    keep.push_back(i);
  }
  Shape out = shape;
  out[axis] = static_cast<int64_t>(keep.size());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  const int64_t outer = shape.Product(0, axis);
  const int64_t inner = shape.Product(axis + 1, shape.rank());
  const int64_t n = static_cast<int64_t>(keep.size());
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(x);
    S* dst = StorageOf<S>(y);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j) std::copy_n(src + (o * dim + keep[j]) * inner, inner, dst + (o * n + j) * inner);
    return Status::OK();
  });
}

// dY goes back to the slices it was taken from (zeros elsewhere), through the index map.
Status CompressGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     return Emit1(ctx, "Compress", {data, In(ctx, 1)}, CopyAttrs(ctx.node(), {"axis"}));
                   }));
  return Status::OK();
}

}  // namespace

void RegisterCompress(OpRegistry* r) {
  OpSchema s;
  s.name = "Compress";
  s.since_version = 9;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = CompressInfer;
  s.reference = CompressCompute;
  s.grad = CompressGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
