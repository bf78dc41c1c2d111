// Unsqueeze (opset 1, 11, 13): inserts size-1 dimensions at the given axes of the output. The axes come from the
// required `axes` attribute before opset 13 and from the required second input from opset 13; they index the output
// (rank + len(axes)), may be negative (opset 11; accepted for every opset) and in any order, but not repeated. The
// output is a view of the input.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// Marks the inserted positions of an output of rank `out_rank`.
StatusOr<std::vector<bool>> UnsqueezeMask(const Node& node, const std::vector<int64_t>& axes, int out_rank) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, out_rank, node));
  std::vector<bool> mask(out_rank, false);
  for (int a : norm) mask[a] = true;
  return mask;
}

Status UnsqueezeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  const DType dtype = ctx.input_dtype(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() < 13) {
    STRATA_ASSIGN_OR_RETURN(axes, ctx.node().RequireInts("axes"));
  } else {
    if (!ctx.has_input(1)) return ctx.Error("Unsqueeze from opset 13 needs the axes input");
    STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Unsqueeze axes"));
    STRATA_ASSIGN_OR_RETURN(axes, KnownInts(ctx, 1, "Unsqueeze axes"));
    const PartialShape& as = ctx.input_shape(1);
    if (!axes) {
      const bool n_known = as.rank() == 1 && as.dims[0].known();
      ctx.SetOutput(0, dtype,
                    in.rank_known && n_known ? UnknownShape(in.rank() + static_cast<int>(as.dims[0].value))
                                             : PartialShape::Unknown());
      return Status::OK();
    }
  }
  if (!in.rank_known) {
    ctx.SetOutput(0, dtype, PartialShape::Unknown());
    return Status::OK();
  }
  const int out_rank = in.rank() + static_cast<int>(axes->size());
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> mask, UnsqueezeMask(ctx.node(), *axes, out_rank));
  std::vector<Dim> out;
  int next = 0;
  for (int i = 0; i < out_rank; ++i) out.push_back(mask[i] ? Dim(1) : in.dims[next++]);
  ctx.SetOutput(0, dtype, PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status UnsqueezeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (ctx.opset() < 13) {
    STRATA_ASSIGN_OR_RETURN(axes, ctx.node().RequireInts("axes"));
  } else {
    if (!ctx.has_input(1)) return ctx.Error("Unsqueeze from opset 13 needs the axes input");
    STRATA_ASSIGN_OR_RETURN(axes, ReadInts(ctx.input(1), "Unsqueeze axes"));
  }
  const int out_rank = x.rank() + static_cast<int>(axes.size());
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> mask, UnsqueezeMask(ctx.node(), axes, out_rank));
  Shape out;
  int next = 0;
  for (int i = 0; i < out_rank; ++i) out.PushBack(mask[i] ? 1 : x.dim(next++));
  STRATA_ASSIGN_OR_RETURN(Tensor y, x.Reshaped(out));
  ctx.SetOutput(0, std::move(y));
  return Status::OK();
}

}  // namespace

void RegisterUnsqueeze(OpRegistry* r) {
  OpSchema s;
  s.name = "Unsqueeze";
  s.max_inputs = 2;
  s.infer = UnsqueezeInfer;
  s.reference = UnsqueezeCompute;
  s.view_input = 0;
  s.grad = ReshapeBackGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
