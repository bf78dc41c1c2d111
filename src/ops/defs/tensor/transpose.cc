// Transpose (opset 1, 13): permutes the axes; output dimension i is input dimension perm[i]. Without perm the axes
// are reversed. perm must be a permutation of [0, rank).
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

StatusOr<std::vector<int>> TransposePerm(const Node& node, int rank) {
  std::vector<int> perm;
  if (!node.HasAttr("perm")) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  const std::vector<int64_t> p = node.GetInts("perm");
  if (static_cast<int>(p.size()) != rank)
    return InvalidArgumentError(node.Describe(), ": perm ", p, " has ", p.size(), " entries, expected the rank ", rank);
  std::vector<bool> seen(rank, false);
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[v])
      return InvalidArgumentError(node.Describe(), ": perm ", p, " is not a permutation of [0, ", rank, ")");
    seen[v] = true;
    perm.push_back(static_cast<int>(v));
  }
  return perm;
}

Status TransposeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    const bool has_perm = ctx.node().HasAttr("perm");
    ctx.SetOutput(
        0, ctx.input_dtype(0),
        has_perm ? UnknownShape(static_cast<int>(ctx.node().GetInts("perm").size())) : PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int> perm, TransposePerm(ctx.node(), in.rank()));
  std::vector<Dim> out;
  for (int p : perm) out.push_back(in.dims[p]);
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status TransposeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<int> perm, TransposePerm(ctx.node(), x.rank()));
  Shape out;
  for (int p : perm) out.PushBack(x.dim(p));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    PermuteCopy(StorageOf<S>(x), x.shape(), perm, StorageOf<S>(y));
    return Status::OK();
  });
}

// dX = Transpose(dY, inverse(perm)).
Status TransposeGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  const int rank = ctx.input_type(0).shape.rank();
  if (rank < 0) return UnimplementedError(ctx.node().Describe(), ": Transpose gradient needs a known rank");
  STRATA_ASSIGN_OR_RETURN(std::vector<int> perm, TransposePerm(ctx.node(), rank));
  std::vector<int64_t> inverse(rank);
  for (int i = 0; i < rank; ++i) inverse[perm[i]] = i;
  AttributeMap attrs;
  attrs["perm"] = Attribute::Ints(inverse);
  ctx.SetInputGrad(0, Emit1(ctx, "Transpose", {ctx.output_grad(0)}, std::move(attrs)));
  return Status::OK();
}

}  // namespace

void RegisterTranspose(OpRegistry* r) {
  OpSchema s;
  s.name = "Transpose";
  s.infer = TransposeInfer;
  s.reference = TransposeCompute;
  s.grad = TransposeGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
