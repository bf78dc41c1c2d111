#include "ops/defs/loss/loss_util.h"

namespace strata::ops {

StatusOr<LossAttrs> ParseLossAttrs(const Node& node) {
  LossAttrs a;
  const std::string r = node.GetString("reduction", "mean");
  if (r == "none") {
    a.reduction = LossReduction::kNone;
  } else if (r == "sum") {
    a.reduction = LossReduction::kSum;
  } else if (r == "mean") {
    a.reduction = LossReduction::kMean;
  } else {
    return InvalidArgumentError(node.Describe(), ": reduction must be 'none', 'sum' or 'mean', got '", r, "'");
  }
  a.has_ignore = node.HasAttr("ignore_index");
  a.ignore_index = node.GetInt("ignore_index", 0);
  return a;
}

namespace {

// Whether two dims that must be equal can be (either may be unknown).
bool SameDim(const Dim& a, const Dim& b) { return !a.known() || !b.known() || a.value == b.value; }

}  // namespace

Status InferLoss(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(LossAttrs attrs, ParseLossAttrs(ctx.node()));
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t))
    return ctx.Error("input 0 must be a float tensor, got ", DTypeName(t));
  const DType tt = ctx.input_dtype(1);
  if (tt != DType::kUndefined && tt != DType::kInt32 && tt != DType::kInt64)
    return ctx.Error("the target must be int32 or int64, got ", DTypeName(tt));
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kUndefined && t != DType::kUndefined && ctx.input_dtype(2) != t)
    return ctx.Error("the weight must have the input's element type ", DTypeName(t), ", got ",
                     DTypeName(ctx.input_dtype(2)));
  const PartialShape& in = ctx.input_shape(0);
  const PartialShape& target = ctx.input_shape(1);
  if (in.rank_known && in.rank() < 2) return ctx.Error("input 0 must have shape [N, C, d1, ...], got ", in.ToString());
  PartialShape loss_shape = target;
  if (in.rank_known && target.rank_known) {
    if (target.rank() != in.rank() - 1)
      return ctx.Error("the target must have shape [N, d1, ...] for input ", in.ToString(), ", got ",
                       target.ToString());
    std::vector<Dim> dims;
    for (int i = 0; i < target.rank(); ++i) {
      const Dim& a = in.dims[i == 0 ? 0 : i + 1];
      const Dim& b = target.dims[i];
      if (!SameDim(a, b))
        return ctx.Error("the target shape ", target.ToString(), " does not match input shape ", in.ToString());
      dims.push_back(b.known() ? b : a);
    }
    loss_shape = PartialShape::Of(std::move(dims));
  }
  if (ctx.has_input(2)) {
    const PartialShape& w = ctx.input_shape(2);
    if (w.rank_known && w.rank() != 1) return ctx.Error("the weight must be 1-D [C], got ", w.ToString());
    if (w.rank_known && in.rank_known && !SameDim(w.dims[0], in.dims[1]))
      return ctx.Error("the weight shape ", w.ToString(), " does not match C of input shape ", in.ToString());
  }
  ctx.SetOutput(0, t, attrs.reduction == LossReduction::kNone ? loss_shape : PartialShape::Of(std::vector<Dim>{}));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, t, in);
  return Status::OK();
}

StatusOr<LossDims> CheckLossShapes(const KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  const Shape& target = ctx.input(1).shape();
  if (in.rank() < 2) return ctx.Error("input 0 must have shape [N, C, d1, ...], got ", in.ToString());
  bool ok = target.rank() == in.rank() - 1 && target[0] == in[0];
  for (int i = 1; ok && i < target.rank(); ++i) ok = target[i] == in[i + 1];
  if (!ok) return ctx.Error("the target shape ", target.ToString(), " does not match input shape ", in.ToString());
  if (ctx.input(1).dtype() != DType::kInt32 && ctx.input(1).dtype() != DType::kInt64)
    return ctx.Error("the target must be int32 or int64, got ", DTypeName(ctx.input(1).dtype()));
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.dtype() != ctx.input(0).dtype())
      return ctx.Error("the weight must have the input's element type ", DTypeName(ctx.input(0).dtype()), ", got ",
                       DTypeName(w.dtype()));
    if (w.rank() != 1 || w.dim(0) != in[1])
      return ctx.Error("the weight must have shape [", in[1], "], got ", w.shape().ToString());
  }
  LossDims d;
  d.n = in[0];
  d.c = in[1];
  d.d = in.Product(2, in.rank());
  return d;
}

}  // namespace strata::ops
