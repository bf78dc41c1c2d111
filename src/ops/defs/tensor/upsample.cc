// Upsample (opset 7 scales attribute, 9 scales input; deprecated in 10 in favour of Resize): resizes every
// dimension by its scale (>= 1 by the spec; smaller scales are accepted and downsample) to floor(in * scale), with
// asymmetric coordinates and nearest (rounding down) or linear sampling, exactly as Resize-10.
#include "ops/defs/tensor/resize.h"

namespace strata::ops {
namespace {

Status UpsampleInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  ResizeOperands ops;
  if (ctx.opset() < 9) {
    ops.scales = std::vector<double>();
    for (float f : ctx.node().GetFloats("scales")) ops.scales->push_back(f);
  } else if (const Tensor* v = ctx.input_value(1)) {
    STRATA_ASSIGN_OR_RETURN(ops.scales, ReadFloats(*v, ctx.node(), "scales"));
  } else {
    ops.unknown = true;
  }
  STRATA_RETURN_IF_ERROR(ParseResizeAttrs(ctx.node(), 10).status());
  if (!in.rank_known || ops.unknown) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(in.rank()));
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (const Dim& d : in.dims) dims.push_back(d.known() ? d.value : -1);
  std::vector<int64_t> out_dims;
  STRATA_ASSIGN_OR_RETURN(ResizeSpec spec, BuildResizeSpec(ctx.node(), 10, dims, ops, &out_dims));
  std::vector<Dim> out;
  for (int d = 0; d < in.rank(); ++d)
    out.push_back(out_dims[d] >= 0 ? Dim(out_dims[d]) : (spec.scales[d] == 1.0 ? in.dims[d] : Dim()));
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status UpsampleCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ResizeOperands ops;
  if (ctx.opset() < 9) {
    ops.scales = std::vector<double>();
    for (float f : ctx.node().GetFloats("scales")) ops.scales->push_back(f);
  } else {
    if (!ctx.has_input(1)) return ctx.Error("Upsample from opset 9 needs the scales input");
    STRATA_ASSIGN_OR_RETURN(ops.scales, ReadFloats(ctx.input(1), ctx.node(), "scales"));
  }
  std::vector<int64_t> out_dims;
  STRATA_ASSIGN_OR_RETURN(ResizeSpec spec, BuildResizeSpec(ctx.node(), 10, x.shape().ToVector(), ops, &out_dims));
  return ResizeRun(ctx, x, spec);
}

}  // namespace

void RegisterUpsample(OpRegistry* r) {
  OpSchema s;
  s.name = "Upsample";
  s.since_version = 7;
  s.max_inputs = 2;
  s.infer = UpsampleInfer;
  s.reference = UpsampleCompute;
  s.no_grad_reason = "not implemented: the gradient of interpolation (the adjoint of the resampling)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
