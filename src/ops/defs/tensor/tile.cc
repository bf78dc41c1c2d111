// Tile (opset 6, 13): repeats the input repeats[i] times along each axis i; repeats is a 1-D int64 input with one
// non-negative entry per input dimension.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status CheckRepeats(const Node& node, const std::vector<int64_t>& repeats, int rank) {
  if (static_cast<int>(repeats.size()) != rank)
    return InvalidArgumentError(node.Describe(), ": repeats ", repeats, " has ", repeats.size(),
                                " entries, expected one per input dimension (", rank, ")");
  for (int64_t r : repeats)
    if (r < 0) return InvalidArgumentError(node.Describe(), ": repeats ", repeats, " has a negative entry");
  return Status::OK();
}

Status TileInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Tile repeats"));
  const PartialShape& in = ctx.input_shape(0);
  STRATA_ASSIGN_OR_RETURN(auto repeats, KnownInts(ctx, 1, "Tile repeats"));
  if (!in.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  if (!repeats) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(in.rank()));
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(CheckRepeats(ctx.node(), *repeats, in.rank()));
  PartialShape out = in;
  for (int i = 0; i < in.rank(); ++i) {
    const Dim& d = in.dims[i];
    const int64_t r = (*repeats)[i];
    if (r == 1) continue;
    int64_t v = 0;
    out.dims[i] = d.known() ? (__builtin_mul_overflow(d.value, r, &v) ? Dim() : Dim(v)) : (r == 0 ? Dim(0) : Dim());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

Status TileCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ReadInts(ctx.input(1), "Tile repeats"));
  STRATA_RETURN_IF_ERROR(CheckRepeats(ctx.node(), repeats, x.rank()));
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    int64_t d = 0;
    if (__builtin_mul_overflow(x.dim(i), repeats[i], &d)) return ctx.Error("repeats ", repeats, " overflow int64");
    dims.push_back(d);
  }
  STRATA_ASSIGN_OR_RETURN(Shape out, ShapeFromDims(dims, ctx.node(), "Tile output shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  if (y->num_elements() == 0) return Status::OK();
  // The output laid out as [r0, d0, r1, d1, ...]: the repeat coordinates have stride 0 in the input.
  const std::vector<int64_t> in_strides = Strides(x.shape());
  Shape split;
  std::vector<int64_t> strides;
  for (int i = 0; i < x.rank(); ++i) {
    split.PushBack(repeats[i]);
    strides.push_back(0);
    split.PushBack(x.dim(i));
    strides.push_back(in_strides[i]);
  }
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    StridedGather(StorageOf<S>(x), 0, strides, split, StorageOf<S>(y));
    return Status::OK();
  });
}

// dX: every copy's gradient summed back onto the element it copied.
Status TileGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     return Emit1(ctx, "Tile", {data, In(ctx, 1)});
                   }));
  return Status::OK();
}

}  // namespace

void RegisterTile(OpRegistry* r) {
  OpSchema s;
  s.name = "Tile";
  s.since_version = 6;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = TileInfer;
  s.reference = TileCompute;
  s.grad = TileGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
