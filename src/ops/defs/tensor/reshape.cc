// Reshape (opset 5, 13, 14): the target shape comes from input 1; 0 copies the input dimension (unless allowzero=1)
// and one -1 is inferred. The output is a view of the input.
#include "ops/grad_util.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

// Resolves the requested shape against the input shape. Unknown input dims (-1 in `in`) leave unknowns (-1).
StatusOr<std::vector<int64_t>> ResolveReshape(const Node& node, const std::vector<int64_t>& in, bool in_known,
                                              const std::vector<int64_t>& req, bool allowzero) {
  std::vector<int64_t> out(req.size());
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < req.size(); ++i) {
    if (req[i] == -1) {
      if (infer_at >= 0) return InvalidArgumentError(node.Describe(), ": the shape ", req, " has more than one -1");
      infer_at = static_cast<int>(i);
      out[i] = -1;
    } else if (req[i] == 0 && !allowzero) {
      if (i >= in.size())
        return InvalidArgumentError(node.Describe(), ": the shape ", req, " copies dimension ", i,
                                    " (0) but the input has rank ", in.size());
      out[i] = in[i];
    } else if (req[i] < 0) {
      return InvalidArgumentError(node.Describe(), ": the shape ", req, " has a negative dimension ", req[i]);
    } else {
      has_zero |= req[i] == 0;
      out[i] = req[i];
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return InvalidArgumentError(node.Describe(), ": with allowzero=1 the shape ", req, " cannot hold both 0 and -1");
  if (!in_known) return out;
  int64_t total = 1;
  for (int64_t d : in) total *= d;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i)
    if (static_cast<int>(i) != infer_at) known *= out[i];
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      return InvalidArgumentError(node.Describe(), ": cannot reshape ", in.size(), "-d input with ", total,
                                  " elements to ", req);
    out[infer_at] = total / known;
  } else if (known != total) {
    return InvalidArgumentError(node.Describe(), ": cannot reshape input with ", total, " elements to ", req, " (",
                                known, " elements)");
  }
  return out;
}

Status ReshapeInfer(InferContext& ctx) {
  const Tensor* shape_value = ctx.input_value(1);
  const bool allowzero = ctx.node().GetInt("allowzero", 0) != 0;
  if (ctx.input_shape(1).rank_known && ctx.input_shape(1).rank() != 1)
    return ctx.Error("the shape input must be 1-D, got ", ctx.input_shape(1).ToString());
  if (shape_value == nullptr) {
    PartialShape out;
    const auto& ss = ctx.input_shape(1);
    if (ss.rank_known && ss.dims[0].known()) out = PartialShape::Of(std::vector<Dim>(ss.dims[0].value));
    ctx.SetOutput(0, ctx.input_dtype(0), out);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> req, ReadInts(*shape_value, "Reshape shape"));
  const PartialShape& in = ctx.input_shape(0);
  std::vector<int64_t> in_dims;
  for (const Dim& d : in.dims) in_dims.push_back(d.known() ? d.value : -1);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> out,
                          ResolveReshape(ctx.node(), in_dims, in.IsFullyKnown(), req, allowzero));
  std::vector<Dim> dims;
  for (size_t i = 0; i < out.size(); ++i) {
    // A 0 that copies an unknown/symbolic input dimension keeps its symbol.
    if (out[i] < 0 && req[i] == 0 && !allowzero && i < in.dims.size())
      dims.push_back(in.dims[i]);
    else
      dims.push_back(out[i] < 0 ? Dim() : Dim(out[i]));
  }
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(dims)));
  return Status::OK();
}

Status ReshapeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> req, ReadInts(ctx.input(1), "Reshape shape"));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> out, ResolveReshape(ctx.node(), x.shape().ToVector(), true, req,
                                                                   ctx.node().GetInt("allowzero", 0) != 0));
  STRATA_ASSIGN_OR_RETURN(Tensor y, x.Reshaped(Shape(out)));
  ctx.SetOutput(0, std::move(y));
  return Status::OK();
}

// dX = Reshape(dY, Shape(X)).
Status ReshapeGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  const std::string shape = Emit1(ctx, "Shape", {ctx.node().inputs[0]});
  ctx.SetInputGrad(0, Emit1(ctx, "Reshape", {ctx.output_grad(0), shape}));
  return Status::OK();
}

}  // namespace

void RegisterReshape(OpRegistry* r) {
  OpSchema s;
  s.name = "Reshape";
  s.since_version = 5;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = ReshapeInfer;
  s.reference = ReshapeCompute;
  s.grad = ReshapeGrad;
  s.view_input = 0;
  s.grad = ReshapeBackGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
