// Squeeze (opset 1, 11, 13): removes dimensions of size 1. The axes come from the `axes` attribute before opset 13
// and from the optional second input from opset 13; without axes every size-1 dimension is removed. Negative axes
// count from the back (opset 11; accepted for every opset). The output is a view of the input.
#include <algorithm>

#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// Which axes to remove from a shape of rank `rank`; `dims` gives known sizes (-1 when unknown) to check they are 1.
StatusOr<std::vector<bool>> SqueezeMask(const Node& node, const std::vector<int64_t>& axes,
                                        const std::vector<int64_t>& dims) {
  const int rank = static_cast<int>(dims.size());
  if (rank == 0 && !axes.empty())
    return InvalidArgumentError(node.Describe(), ": cannot squeeze axes ", axes, " of a scalar");
  STRATA_ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, rank, node));
  std::vector<bool> mask(rank, false);
  for (size_t i = 0; i < norm.size(); ++i) {
    const int64_t d = dims[norm[i]];
    if (d >= 0 && d != 1)
      return InvalidArgumentError(node.Describe(), ": cannot squeeze axis ", axes[i], ": its dimension is ", d,
                                  ", expected 1");
    mask[norm[i]] = true;
  }
  return mask;
}

Status SqueezeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  const DType dtype = ctx.input_dtype(0);
  std::optional<std::vector<int64_t>> axes;
  bool given = false;
  if (ctx.opset() < 13) {
    given = ctx.node().HasAttr("axes");
    if (given) axes = ctx.node().GetInts("axes");
  } else if (ctx.has_input(1)) {
    given = true;
    STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Squeeze axes"));
    STRATA_ASSIGN_OR_RETURN(axes, KnownInts(ctx, 1, "Squeeze axes"));
    const PartialShape& as = ctx.input_shape(1);
    if (!axes && in.rank_known && as.rank() == 1 && as.dims[0].known()) {
      ctx.SetOutput(0, dtype, UnknownShape(in.rank() - static_cast<int>(as.dims[0].value)));
      return Status::OK();
    }
  }
  if (!in.rank_known || (given && !axes)) {
    ctx.SetOutput(0, dtype, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (const Dim& d : in.dims) dims.push_back(d.known() ? d.value : -1);
  std::vector<bool> mask(dims.size(), false);
  if (given) {
    STRATA_ASSIGN_OR_RETURN(mask, SqueezeMask(ctx.node(), *axes, dims));
  } else {
    // Without axes the result depends on every dimension's size.
    if (std::find(dims.begin(), dims.end(), -1) != dims.end()) {
      ctx.SetOutput(0, dtype, PartialShape::Unknown());
      return Status::OK();
    }
    for (size_t i = 0; i < dims.size(); ++i) mask[i] = dims[i] == 1;
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!mask[i]) out.push_back(in.dims[i]);
  ctx.SetOutput(0, dtype, PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status SqueezeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> dims = x.shape().ToVector();
  std::vector<bool> mask(dims.size(), false);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() < 13) {
    if (ctx.node().HasAttr("axes")) axes = ctx.node().GetInts("axes");
  } else if (ctx.has_input(1)) {
    STRATA_ASSIGN_OR_RETURN(axes, ReadInts(ctx.input(1), "Squeeze axes"));
  }
  if (axes) {
    STRATA_ASSIGN_OR_RETURN(mask, SqueezeMask(ctx.node(), *axes, dims));
  } else {
    for (size_t i = 0; i < dims.size(); ++i) mask[i] = dims[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!mask[i]) out.PushBack(dims[i]);
  STRATA_ASSIGN_OR_RETURN(Tensor y, x.Reshaped(out));
  ctx.SetOutput(0, std::move(y));
  return Status::OK();
}

}  // namespace

void RegisterSqueeze(OpRegistry* r) {
  OpSchema s;
  s.name = "Squeeze";
  s.max_inputs = 2;
  s.infer = SqueezeInfer;
  s.reference = SqueezeCompute;
  s.view_input = 0;
  s.grad = ReshapeBackGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
