// DepthToSpace (opset 1, 11 mode, 13): moves channel blocks of a 4-D [N, C, H, W] input into b x b spatial
// blocks, giving [N, C / b^2, H * b, W * b]. mode DCR (default) reads the channel as (block_row, block_col, c);
// CRD reads it as (c, block_row, block_col).
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

StatusOr<bool> IsCrd(const Node& node) {
  const std::string mode = node.GetString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return InvalidArgumentError(node.Describe(), ": mode '", mode, "' is not DCR or CRD");
  return mode == "CRD";
}

Status DepthToSpaceInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx.node()));
  STRATA_RETURN_IF_ERROR(IsCrd(ctx.node()).status());
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(4));
    return Status::OK();
  }
  if (in.rank() != 4) return ctx.Error("DepthToSpace needs a 4-D input, got ", in.ToString());
  const Dim& c = in.dims[1];
  if (c.known() && c.value % (b * b) != 0)
    return ctx.Error("channels ", c.value, " are not divisible by blocksize^2 = ", b * b);
  auto scaled = [b](const Dim& d) {
    int64_t v = 0;
    return d.known() && !__builtin_mul_overflow(d.value, b, &v) ? Dim(v) : Dim();
  };
  ctx.SetOutput(0, ctx.input_dtype(0),
                PartialShape::Of(
                    {in.dims[0], c.known() ? Dim(c.value / (b * b)) : Dim(), scaled(in.dims[2]), scaled(in.dims[3])}));
  return Status::OK();
}

Status DepthToSpaceCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(bool crd, IsCrd(ctx.node()));
  if (x.rank() != 4) return ctx.Error("DepthToSpace needs a 4-D input, got ", x.shape().ToString());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0) return ctx.Error("channels ", c, " are not divisible by blocksize^2 = ", b * b);
  const int64_t oc = c / (b * b);
  STRATA_ASSIGN_OR_RETURN(int64_t oh, CheckedMul(h, b, ctx.node(), "the output height"));
  STRATA_ASSIGN_OR_RETURN(int64_t ow, CheckedMul(w, b, ctx.node(), "the output width"));
  STRATA_ASSIGN_OR_RETURN(Shape out, ShapeFromDims({n, oc, oh, ow}, ctx.node(), "the output shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  // DCR: [n, b, b, oc, h, w] -> [n, oc, h, b, w, b]; CRD: [n, oc, b, b, h, w] -> [n, oc, h, b, w, b].
  const Shape six = crd ? Shape{n, oc, b, b, h, w} : Shape{n, b, b, oc, h, w};
  const std::vector<int> perm = crd ? std::vector<int>{0, 1, 4, 2, 5, 3} : std::vector<int>{0, 3, 4, 1, 5, 2};
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    PermuteCopy(StorageOf<S>(x), six, perm, StorageOf<S>(y));
    return Status::OK();
  });
}

// A permutation of the elements: dY goes back through the index map.
Status DepthToSpaceGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     return Emit1(ctx, "DepthToSpace", {data}, CopyAttrs(ctx.node(), {"blocksize", "mode"}));
                   }));
  return Status::OK();
}

}  // namespace

void RegisterDepthToSpace(OpRegistry* r) {
  OpSchema s;
  s.name = "DepthToSpace";
  s.infer = DepthToSpaceInfer;
  s.reference = DepthToSpaceCompute;
  s.grad = DepthToSpaceGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
