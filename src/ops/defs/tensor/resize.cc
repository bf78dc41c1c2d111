// Resize (opset 10, 11, 13): resizes every dimension by a scale (or to a size) with nearest, linear or cubic
// sampling. Opset 10 takes (X, scales) and samples asymmetric coordinates (nearest rounds down). From opset 11 the
// inputs are (X, roi, scales, sizes): exactly one of scales/sizes is given (absent inputs may also be empty
// tensors), roi is read only by tf_crop_and_resize, and coordinate_transformation_mode, nearest_mode,
// cubic_coeff_a, exclude_outside and extrapolation_value apply. With scales the output size is floor(in * scale);
// like ONNX's reference implementation (and unlike one sentence of the spec) roi does not change it. The opset 18
// `axes` attribute is accepted; antialias and keep_aspect_ratio_policy other than stretch are not supported.
#include "ops/defs/tensor/resize.h"

#include <algorithm>
#include <cmath>

namespace strata::ops {
namespace {

// Spreads per-axis values given for `axes` over all `rank` dimensions (fill elsewhere).
template <typename V>
StatusOr<std::vector<V>> OverAxes(const Node& node, const std::vector<V>& v, const std::vector<int>& axes, int rank,
                                  V fill, std::string_view what) {
  const size_t n = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  if (v.size() != n)
    return InvalidArgumentError(node.Describe(), ": ", what, " has ", v.size(), " values, expected ", n);
  if (axes.empty()) return v;
  std::vector<V> full(rank, fill);
  for (size_t i = 0; i < n; ++i) full[axes[i]] = v[i];
  return full;
}

}  // namespace

StatusOr<ResizeSpec> BuildResizeSpec(const Node& node, int opset, const std::vector<int64_t>& in,
                                     const ResizeOperands& ops, std::vector<int64_t>* out_dims) {
  STRATA_ASSIGN_OR_RETURN(ResizeSpec spec, ParseResizeAttrs(node, opset));
  const int rank = static_cast<int>(in.size());
  std::vector<int> axes;
  if (node.HasAttr("axes") && rank == 0)
    return InvalidArgumentError(node.Describe(), ": a scalar has no axes to resize");
  if (node.HasAttr("axes")) {
    STRATA_ASSIGN_OR_RETURN(axes, NormalizeAxes(node.GetInts("axes"), rank, node));
  }
  if (ops.scales.has_value() == ops.sizes.has_value())
    return InvalidArgumentError(node.Describe(), ": exactly one of scales and sizes must be given, got ",
                                ops.scales ? "both" : "neither");
  std::vector<int64_t>& out = *out_dims;
  out.assign(rank, -1);
  if (ops.sizes) {
    const std::string policy = node.GetString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch")
      return UnimplementedError(node.Describe(), ": keep_aspect_ratio_policy '", policy,
                                "' (opset 18) is not supported");
    STRATA_ASSIGN_OR_RETURN(out, OverAxes<int64_t>(node, *ops.sizes, axes, rank, -2, "sizes"));
    for (int d = 0; d < rank; ++d) {
      if (out[d] == -2) {
        out[d] = in[d];  // an axis not listed keeps its size
      } else if (out[d] < 0) {
        return InvalidArgumentError(node.Describe(), ": sizes ", *ops.sizes, " has a negative entry");
      }
      spec.scales.push_back(in[d] > 0 && out[d] >= 0 ? static_cast<double>(out[d]) / static_cast<double>(in[d]) : 1.0);
      spec.resized_len.push_back(static_cast<double>(out[d]));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(std::vector<double> scales, OverAxes<double>(node, *ops.scales, axes, rank, 1.0, "scales"));
    for (int d = 0; d < rank; ++d) {
      if (!(scales[d] > 0) || !std::isfinite(scales[d]))
        return InvalidArgumentError(node.Describe(), ": scales ", *ops.scales, " must be positive and finite");
      const double len = static_cast<double>(in[d]) * scales[d];
      if (len > 4.0e18) return InvalidArgumentError(node.Describe(), ": scales ", *ops.scales, " are too large");
      out[d] = in[d] < 0 ? -1 : static_cast<int64_t>(std::floor(len));
      spec.scales.push_back(scales[d]);
      spec.resized_len.push_back(len);
    }
  }
  if (std::find(out.begin(), out.end(), -1) == out.end()) {
    STRATA_ASSIGN_OR_RETURN(spec.out, ShapeFromDims(out, node, "Resize output shape"));
  }
  spec.roi_start.assign(rank, 0.0);
  spec.roi_end.assign(rank, 1.0);
  if (spec.coord == CoordMode::kTfCropAndResize && ops.roi) {
    const size_t n = axes.empty() ? static_cast<size_t>(rank) : axes.size();
    if (ops.roi->size() != 2 * n)
      return InvalidArgumentError(node.Describe(), ": roi has ", ops.roi->size(), " values, expected ", 2 * n);
    const std::vector<double> starts(ops.roi->begin(), ops.roi->begin() + n),
        ends(ops.roi->begin() + n, ops.roi->end());
    STRATA_ASSIGN_OR_RETURN(spec.roi_start, OverAxes<double>(node, starts, axes, rank, 0.0, "roi"));
    STRATA_ASSIGN_OR_RETURN(spec.roi_end, OverAxes<double>(node, ends, axes, rank, 1.0, "roi"));
  }
  return spec;
}

namespace {

Status ResizeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  ResizeOperands ops;
  const int scales_at = ctx.opset() < 11 ? 1 : 2;
  auto present = [&](int i) {
    if (!ctx.has_input(i)) return false;
    if (const Tensor* v = ctx.input_value(i)) return v->num_elements() > 0;
    const PartialShape& s = ctx.input_shape(i);
    return !(s.rank() == 1 && s.dims[0].known() && s.dims[0].value == 0);
  };
  // roi does not change the output shape: it is checked when the kernel runs.
  if (present(scales_at)) {
    if (const Tensor* v = ctx.input_value(scales_at)) {
      STRATA_ASSIGN_OR_RETURN(ops.scales, ReadFloats(*v, ctx.node(), "scales"));
    } else {
      ops.unknown = true;
    }
  }
  if (ctx.opset() >= 11 && present(3)) {
    STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 3, "Resize sizes"));
    STRATA_ASSIGN_OR_RETURN(ops.sizes, KnownInts(ctx, 3, "Resize sizes"));
    ops.unknown |= !ops.sizes.has_value();
  }
  STRATA_RETURN_IF_ERROR(ParseResizeAttrs(ctx.node(), ctx.opset()).status());
  if (!in.rank_known || ops.unknown) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(in.rank()));
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (const Dim& d : in.dims) dims.push_back(d.known() ? d.value : -1);
  std::vector<int64_t> out_dims;
  STRATA_ASSIGN_OR_RETURN(ResizeSpec spec, BuildResizeSpec(ctx.node(), ctx.opset(), dims, ops, &out_dims));
  std::vector<Dim> out;
  for (int d = 0; d < in.rank(); ++d) {
    // An unknown input dim passes through (symbol included) when its size is kept.
    const bool kept = dims[d] < 0 && (ops.sizes ? out_dims[d] < 0 : spec.scales[d] == 1.0);
    out.push_back(out_dims[d] >= 0 ? Dim(out_dims[d]) : (kept ? in.dims[d] : Dim()));
  }
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status ResizeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ResizeOperands ops;
  if (ctx.opset() < 11) {
    if (!ctx.has_input(1)) return ctx.Error("Resize-10 needs the scales input");
    STRATA_ASSIGN_OR_RETURN(ops.scales, ReadFloats(ctx.input(1), ctx.node(), "scales"));
  } else {
    if (HasNonEmptyInput(ctx, 1)) {
      STRATA_ASSIGN_OR_RETURN(ops.roi, ReadFloats(ctx.input(1), ctx.node(), "roi"));
    }
    if (HasNonEmptyInput(ctx, 2)) {
      STRATA_ASSIGN_OR_RETURN(ops.scales, ReadFloats(ctx.input(2), ctx.node(), "scales"));
    }
    if (HasNonEmptyInput(ctx, 3)) {
      STRATA_ASSIGN_OR_RETURN(ops.sizes, ReadInts(ctx.input(3), "Resize sizes"));
    }
  }
  std::vector<int64_t> out_dims;
  STRATA_ASSIGN_OR_RETURN(ResizeSpec spec,
                          BuildResizeSpec(ctx.node(), ctx.opset(), x.shape().ToVector(), ops, &out_dims));
  return ResizeRun(ctx, x, spec);
}

}  // namespace

void RegisterResize(OpRegistry* r) {
  OpSchema s;
  s.name = "Resize";
  s.since_version = 10;
  s.max_inputs = 4;
  s.infer = ResizeInfer;
  s.reference = ResizeCompute;
  s.no_grad_reason = "not implemented: the gradient of interpolation (the adjoint of the resampling)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
