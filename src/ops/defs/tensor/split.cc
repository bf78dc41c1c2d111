// Split (opset 2, 11, 13, 18): splits the input along `axis` into one piece per output. Piece sizes come from the
// `split` attribute before opset 13 and from the optional second input from opset 13; without them the axis is split
// into equal parts (it must divide evenly), or, when the opset 18 `num_outputs` attribute is present, into parts of
// ceil(dim / num_outputs) with a smaller last part.
#include <algorithm>

#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// Piece sizes along an axis of size `dim` (-1 when unknown: only explicit sizes can then be given).
StatusOr<std::vector<int64_t>> SplitSizes(const Node& node, int64_t dim, int num_outputs,
                                          const std::optional<std::vector<int64_t>>& split) {
  if (split) {
    if (static_cast<int>(split->size()) != num_outputs)
      return InvalidArgumentError(node.Describe(), ": split ", *split, " has ", split->size(), " sizes for ",
                                  num_outputs, " outputs");
    int64_t total = 0;
    for (int64_t s : *split) {
      if (s < 0) return InvalidArgumentError(node.Describe(), ": split ", *split, " has a negative size");
      if (__builtin_add_overflow(total, s, &total))
        return InvalidArgumentError(node.Describe(), ": split ", *split, " overflows int64");
    }
    if (dim >= 0 && total != dim)
      return InvalidArgumentError(node.Describe(), ": split ", *split, " sums to ", total, " but the axis has size ",
                                  dim);
    return *split;
  }
  if (dim < 0) return std::vector<int64_t>(num_outputs, -1);
  if (node.HasAttr("num_outputs")) {
    const int64_t n = node.GetInt("num_outputs", 0);
    if (n != num_outputs)
      return InvalidArgumentError(node.Describe(), ": num_outputs is ", n, " but the node has ", num_outputs,
                                  " outputs");
    const int64_t chunk = (dim + n - 1) / n;
    std::vector<int64_t> sizes;
    for (int64_t i = 0, left = dim; i < n; ++i, left -= chunk) sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
    return sizes;
  }
  if (dim % num_outputs != 0)
    return InvalidArgumentError(node.Describe(), ": cannot split an axis of size ", dim, " into ", num_outputs,
                                " equal parts");
  return std::vector<int64_t>(num_outputs, dim / num_outputs);
}

StatusOr<int> SplitAxis(const Node& node, int rank) { return NormalizeAxis(node.GetInt("axis", 0), rank, node); }

Status SplitInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  const int n = ctx.num_outputs();
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (ctx.opset() < 13) {
    if (ctx.node().HasAttr("split")) split = ctx.node().GetInts("split");
  } else if (ctx.has_input(1)) {
    STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Split split"));
    STRATA_ASSIGN_OR_RETURN(split, KnownInts(ctx, 1, "Split split"));
    split_unknown = !split.has_value();
    if (split && split->empty()) split.reset();  // an empty tensor means "not given"
  }
  if (!in.rank_known || in.rank() == 0) {
    if (in.rank() == 0) return ctx.Error("Split needs an input of rank >= 1");
    for (int i = 0; i < n; ++i) ctx.SetOutput(i, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(int axis, SplitAxis(ctx.node(), in.rank()));
  std::vector<int64_t> sizes(n, -1);
  if (!split_unknown) {
    const Dim& d = in.dims[axis];
    STRATA_ASSIGN_OR_RETURN(sizes, SplitSizes(ctx.node(), d.known() ? d.value : -1, n, split));
  }
  for (int i = 0; i < n; ++i) {
    PartialShape out = in;
    out.dims[axis] = sizes[i] >= 0 ? Dim(sizes[i]) : Dim();
    ctx.SetOutput(i, ctx.input_dtype(0), std::move(out));
  }
  return Status::OK();
}

Status SplitCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return ctx.Error("Split needs an input of rank >= 1");
  STRATA_ASSIGN_OR_RETURN(int axis, SplitAxis(ctx.node(), x.rank()));
  std::optional<std::vector<int64_t>> split;
  if (ctx.opset() < 13) {
    if (ctx.node().HasAttr("split")) split = ctx.node().GetInts("split");
  } else if (HasNonEmptyInput(ctx, 1)) {
    STRATA_ASSIGN_OR_RETURN(split, ReadInts(ctx.input(1), "Split split"));
  }
  const int n = ctx.num_outputs();
  const int64_t dim = x.dim(axis);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(ctx.node(), dim, n, split));
  const int64_t outer = x.shape().Product(0, axis);
  const int64_t inner = x.shape().Product(axis + 1, x.rank());
  return DispatchStorage(x.dtype(), [&](auto tag) -> Status {
    using S = typename decltype(tag)::type;
    const S* in = StorageOf<S>(x);
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t size = sizes[i];
      if (ctx.output_wanted(i)) {
        Shape shape = x.shape();
        shape[axis] = size;
        STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(i, x.dtype(), shape));
        S* out = StorageOf<S>(y);
        const int64_t run = size * inner;
        for (int64_t o = 0; o < outer; ++o) std::copy_n(in + (o * dim + offset) * inner, run, out + o * run);
      }
      offset += size;
    }
    return Status::OK();
  });
}

// dX = the output gradients concatenated back along the axis (zeros for outputs without one).
Status SplitGrad(GradContext& ctx) {
  std::vector<std::string> parts;
  for (int i = 0; i < static_cast<int>(ctx.node().outputs.size()); ++i) {
    const std::string g = ctx.output_grad(i);
    parts.push_back(!g.empty() ? g : ZerosLike(ctx, ctx.ForwardOutput(i), InType(ctx, 0)));
  }
  AttributeMap attrs;
  attrs["axis"] = Attribute::Int(ctx.node().GetInt("axis", 0));
  ctx.SetInputGrad(0, Emit1(ctx, "Concat", parts, std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterSplit(OpRegistry* r) {
  OpSchema s;
  s.name = "Split";
  s.since_version = 2;
  s.max_inputs = 2;
  s.max_outputs = -1;
  s.infer = SplitInfer;
  s.reference = SplitCompute;
  s.grad = SplitGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
