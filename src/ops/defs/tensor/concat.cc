// Concat (opset 4, 11, 13): joins the inputs along `axis` (required; negative since opset 11, accepted for every
// opset). Every input has the same dtype and rank and equal dimensions off the axis; inputs may be empty.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ConcatInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().RequireInt("axis"));
  int rank = -1;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i) || !ctx.input_shape(i).rank_known) continue;
    if (rank < 0) rank = ctx.input_shape(i).rank();
    if (ctx.input_shape(i).rank() != rank)
      return ctx.Error("all inputs must have the same rank; input 0 is ", ctx.input_shape(0).ToString(), ", input ", i,
                       " is ", ctx.input_shape(i).ToString());
  }
  if (rank < 0) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  if (rank == 0) return ctx.Error("Concat needs inputs of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, rank, ctx.node()));
  std::vector<Dim> out(rank);
  int64_t total = 0;
  bool total_known = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const PartialShape& s = ctx.input_shape(i);
    if (!s.rank_known) {
      total_known = false;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis) {
        if (s.dims[d].known())
          total += s.dims[d].value;
        else
          total_known = false;
        continue;
      }
      if (!out[d].known() && out[d].symbol.empty()) {
        out[d] = s.dims[d];
      } else if (out[d].known() && s.dims[d].known() && out[d].value != s.dims[d].value) {
        return ctx.Error("input ", i, " has shape ", s.ToString(), " but earlier inputs have dimension ", d, " = ",
                         out[d].value, " (only axis ", axis, " may differ)");
      } else if (!out[d].known() && s.dims[d].known()) {
        out[d] = s.dims[d];
      }
    }
  }
  out[axis] = total_known ? Dim(total) : Dim();
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status ConcatCompute(KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  const int rank = first.rank();
  if (rank == 0) return ctx.Error("Concat needs inputs of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().RequireInt("axis"));
  STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, rank, ctx.node()));
  Shape out = first.shape();
  out[axis] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype())
      return ctx.Error("all inputs must have the same element type; input 0 is ", DTypeName(first.dtype()), ", input ",
                       i, " is ", DTypeName(t.dtype()));
    bool ok = t.rank() == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == axis || t.dim(d) == first.dim(d);
    if (!ok)
      return ctx.Error("input ", i, " has shape ", t.shape().ToString(), ", incompatible with input 0 ",
                       first.shape().ToString(), " (only axis ", axis, " may differ)");
    out[axis] += t.dim(axis);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, first.dtype(), out));
  const int64_t outer = out.Product(0, axis);
  const int64_t inner = out.Product(axis + 1, rank);
  const int64_t out_run = out[axis] * inner;
  return DispatchStorage(first.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* dst = StorageOf<S>(y);
    int64_t offset = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      const S* src = StorageOf<S>(t);
      const int64_t run = t.dim(axis) * inner;
      if (run > 0)
        for (int64_t o = 0; o < outer; ++o) std::copy_n(src + o * run, run, dst + o * out_run + offset);
      offset += run;
    }
    return Status::OK();
  });
}

// dY split back into the inputs' extents along the axis (read from their shapes, at run time unless known).
Status ConcatGrad(GradContext& ctx) {
  const int n = static_cast<int>(ctx.node().inputs.size());
  const int64_t axis = ctx.node().GetInt("axis", 0);
  std::vector<int64_t> known;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = ctx.input_type(i).shape;
    if (!s.rank_known) break;
    const int64_t a = axis < 0 ? axis + s.rank() : axis;
    if (a < 0 || a >= s.rank() || !s.dims[a].known()) break;
    known.push_back(s.dims[a].value);
  }
  std::string sizes;
  if (static_cast<int>(known.size()) == n) {
    sizes = ConstInts(ctx, known);
  } else {
    std::vector<std::string> parts;
    const std::string index = ConstInts(ctx, {axis});
    for (int i = 0; i < n; ++i) parts.push_back(Emit1(ctx, "Gather", {Emit1(ctx, "Shape", {In(ctx, i)}), index}));
    AttributeMap cat;
    cat["axis"] = Attribute::Int(0);
    sizes = Emit1(ctx, "Concat", parts, std::move(cat));
  }
  AttributeMap attrs;
  attrs["axis"] = Attribute::Int(axis);
  const std::vector<std::string> pieces = ctx.Emit("Split", {ctx.output_grad(0), sizes}, std::move(attrs), n);
  for (int i = 0; i < n; ++i)
    if (ctx.needs_input_grad(i)) ctx.SetInputGrad(i, pieces[i]);
  return Status::OK();
}

}  // namespace

void RegisterConcat(OpRegistry* r) {
  OpSchema s;
  s.name = "Concat";
  s.since_version = 4;
  s.max_inputs = -1;
  s.infer = ConcatInfer;
  s.reference = ConcatCompute;
  s.grad = ConcatGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
