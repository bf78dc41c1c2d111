// MatMul (opset 1, 9, 13): numpy matmul. 1-D operands are promoted (a row vector on the left, a column vector on the
// right) and the added dimension removed afterwards; leading (batch) dimensions broadcast.
#include "ops/grad_util.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

struct MatMulDims {
  Shape out;             // full output shape
  Shape batch;           // broadcast batch shape
  int64_t m = 0, k = 0, n = 0;
  Shape a_batch, b_batch;  // each operand's own batch dims
};

// Works on concrete shapes; returns InvalidArgument on a K mismatch or non-broadcastable batches.
StatusOr<MatMulDims> MatMulShapes(const Node& node, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0)
    return InvalidArgumentError(node.Describe(), ": MatMul operands must have rank >= 1, got ", a.ToString(), " and ",
                                b.ToString());
  MatMulDims d;
  Shape a2 = a, b2 = b;
  if (a.rank() == 1) a2 = Shape{1, a[0]};
  if (b.rank() == 1) b2 = Shape{b[0], 1};
  d.m = a2[a2.rank() - 2];
  d.k = a2[a2.rank() - 1];
  const int64_t kb = b2[b2.rank() - 2];
  d.n = b2[b2.rank() - 1];
  if (d.k != kb)
    return InvalidArgumentError(node.Describe(), ": MatMul inner dimensions differ: A is ", a.ToString(), ", B is ",
                                b.ToString(), " (", d.k, " vs ", kb, ")");
  d.a_batch = Shape(std::span<const int64_t>(a2.data(), a2.rank() - 2));
  d.b_batch = Shape(std::span<const int64_t>(b2.data(), b2.rank() - 2));
  auto batch = BroadcastShapes(d.a_batch, d.b_batch);
  if (!batch.ok()) return InvalidArgumentError(node.Describe(), ": MatMul batch dimensions: ", batch.status().message());
  d.batch = *batch;
  d.out = d.batch;
  if (a.rank() != 1) d.out.PushBack(d.m);
  if (b.rank() != 1) d.out.PushBack(d.n);
  return d;
}

Status MatMulInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  const PartialShape& a = ctx.input_shape(0);
  const PartialShape& b = ctx.input_shape(1);
  if (!a.rank_known || !b.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("MatMul operands must have rank >= 1");
  PartialShape a2 = a, b2 = b;
  if (a.rank() == 1) a2 = PartialShape::Of({Dim(1), a.dims[0]});
  if (b.rank() == 1) b2 = PartialShape::Of({b.dims[0], Dim(1)});
  const Dim& ka = a2.dims[a2.rank() - 1];
  const Dim& kb = b2.dims[b2.rank() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return ctx.Error("MatMul inner dimensions differ: A is ", a.ToString(), ", B is ", b.ToString());
  PartialShape ab = PartialShape::Of({a2.dims.begin(), a2.dims.end() - 2});
  PartialShape bb = PartialShape::Of({b2.dims.begin(), b2.dims.end() - 2});
  auto batch = BroadcastPartial(ab, bb);
  if (!batch.ok()) return ctx.Error(batch.status().message());
  std::vector<Dim> out = batch->dims;
  if (a.rank() != 1) out.push_back(a2.dims[a2.rank() - 2]);
  if (b.rank() != 1) out.push_back(b2.dims[b2.rank() - 1]);
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

template <typename T>
void MatMulBatch(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n) {
  using C = ComputeType<T>;
  std::vector<C> acc(n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), C(0));
    for (int64_t p = 0; p < k; ++p) {
      const C av = C(a[i * k + p]);
      const T* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) acc[j] += av * C(brow[j]);
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = T(acc[j]);
  }
}

Status MatMulCompute(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    return ctx.Error("MatMul operands must have the same element type, got ", DTypeName(a.dtype()), " and ",
                     DTypeName(b.dtype()));
  STRATA_ASSIGN_OR_RETURN(MatMulDims d, MatMulShapes(ctx.node(), a.shape(), b.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, a.dtype(), d.out));
  const std::vector<int64_t> sa = BroadcastStrides(d.a_batch, d.batch);
  const std::vector<int64_t> sb = BroadcastStrides(d.b_batch, d.batch);
  const int64_t batches = d.batch.NumElements();
  return DispatchNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = y->data<T>();
    std::array<std::vector<int64_t>, 2> st{sa, sb};
    ForEachBroadcast<2>(d.batch, st, [&](int64_t o, const std::array<int64_t, 2>& off) {
      MatMulBatch(pa + off[0] * d.m * d.k, pb + off[1] * d.k * d.n, pc + o * d.m * d.n, d.m, d.k, d.n);
    });
    (void)batches;
    return Status::OK();
  });
}

// Transposes the last two dimensions of a value of the given rank.
std::string TransposeLast2(GradContext& ctx, const std::string& v, int rank) {
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[rank - 1], perm[rank - 2]);
  AttributeMap attrs;
  attrs["perm"] = Attribute::Ints(perm);
  return Emit1(ctx, "Transpose", {v}, std::move(attrs));
}

// dA = dY @ B^T and dB = A^T @ dY, on operands promoted to rank >= 2 as numpy does, then summed over broadcast batch
// dimensions back to each operand's shape.
Status MatMulGrad(GradContext& ctx) {
  const int ra = ctx.input_type(0).shape.rank();
  const int rb = ctx.input_type(1).shape.rank();
  if (ra < 1 || rb < 1) return UnimplementedError("MatMul gradient needs operands of known rank");
  std::string a = ctx.node().inputs[0], b = ctx.node().inputs[1], dy = ctx.output_grad(0);
  if (ra == 1) {
    a = Emit1(ctx, "Unsqueeze", {a, ConstInts(ctx, {0})});
    dy = Emit1(ctx, "Unsqueeze", {dy, ConstInts(ctx, {rb == 1 ? 0 : -2})});
  }
  if (rb == 1) {
    b = Emit1(ctx, "Unsqueeze", {b, ConstInts(ctx, {1})});
    dy = Emit1(ctx, "Unsqueeze", {dy, ConstInts(ctx, {-1})});
  }
  const int ra2 = std::max(ra, 2), rb2 = std::max(rb, 2);
  if (ctx.needs_input_grad(0)) {
    std::string da = Emit1(ctx, "MatMul", {dy, TransposeLast2(ctx, b, rb2)});
    if (ra == 1) da = Emit1(ctx, "Squeeze", {da, ConstInts(ctx, {-2})});
    const std::string shape = Emit1(ctx, "Shape", {ctx.node().inputs[0]});
    ctx.SetInputGrad(0, Emit1(ctx, "ReduceSumTo", {da, shape}, {}, graph::kStrataDomain));
  }
  if (ctx.needs_input_grad(1)) {
    std::string db = Emit1(ctx, "MatMul", {TransposeLast2(ctx, a, ra2), dy});
    if (rb == 1) db = Emit1(ctx, "Squeeze", {db, ConstInts(ctx, {-1})});
    const std::string shape = Emit1(ctx, "Shape", {ctx.node().inputs[1]});
    ctx.SetInputGrad(1, Emit1(ctx, "ReduceSumTo", {db, shape}, {}, graph::kStrataDomain));
  }
  return Status::OK();
}

}  // namespace

void RegisterMatMul(OpRegistry* r) {
  OpSchema s;
  s.name = "MatMul";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = MatMulInfer;
  s.reference = MatMulCompute;
  s.grad = MatMulGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
