// SpaceToDepth (opset 1, 13): the inverse of DepthToSpace in DCR mode: b x b spatial blocks of a 4-D [N, C, H, W]
// input become channels, giving [N, C * b^2, H / b, W / b]; H and W must be divisible by b.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// blocksize must be in [1, 2^20] (so that blocksize^2 cannot overflow).
StatusOr<int64_t> BlockSize(const Node& node) {
  STRATA_ASSIGN_OR_RETURN(int64_t b, node.RequireInt("blocksize"));
  if (b <= 0 || b > (1 << 20)) return InvalidArgumentError(node.Describe(), ": blocksize must be in [1, 2^20], got ", b);
  return b;
}

Status SpaceToDepthInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx.node()));
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(4));
    return Status::OK();
  }
  if (in.rank() != 4) return ctx.Error("SpaceToDepth needs a 4-D input, got ", in.ToString());
  int64_t c = 0;
  const bool c_known = in.dims[1].known() && !__builtin_mul_overflow(in.dims[1].value, b * b, &c);
  std::vector<Dim> out = {in.dims[0], c_known ? Dim(c) : Dim()};
  for (int i = 2; i < 4; ++i) {
    const Dim& d = in.dims[i];
    if (d.known() && d.value % b != 0)
      return ctx.Error("spatial dimension ", i, " (", d.value, ") is not divisible by blocksize ", b);
    out.push_back(d.known() ? Dim(d.value / b) : Dim());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status SpaceToDepthCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx.node()));
  if (x.rank() != 4) return ctx.Error("SpaceToDepth needs a 4-D input, got ", x.shape().ToString());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0)
    return ctx.Error("spatial dimensions ", h, "x", w, " are not divisible by blocksize ", b);
  STRATA_ASSIGN_OR_RETURN(int64_t oc, CheckedMul(c, b * b, ctx.node(), "the output channel count"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{n, oc, h / b, w / b}));
  // [n, c, h/b, b, w/b, b] -> [n, b, b, c, h/b, w/b]
  const Shape six{n, c, h / b, b, w / b, b};
  const std::vector<int> perm{0, 3, 5, 1, 2, 4};
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    PermuteCopy(StorageOf<S>(x), six, perm, StorageOf<S>(y));
    return Status::OK();
  });
}

// A permutation of the elements: dY goes back through the index map.
Status SpaceToDepthGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     return Emit1(ctx, "SpaceToDepth", {data}, CopyAttrs(ctx.node(), {"blocksize"}));
                   }));
  return Status::OK();
}

}  // namespace

void RegisterSpaceToDepth(OpRegistry* r) {
  OpSchema s;
  s.name = "SpaceToDepth";
  s.infer = SpaceToDepthInfer;
  s.reference = SpaceToDepthCompute;
  s.grad = SpaceToDepthGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
