// Gemm (opset 1, 6, 7, 9, 11, 13): Y = alpha * A' * B' + beta * C, where A' is A (M x K) or its transpose (transA),
// B' is B (K x N) or its transpose (transB), and C broadcasts unidirectionally to (M, N). C is optional from opset
// 11 (required before); opset < 7's `broadcast` attribute is accepted (broadcasting is always allowed). beta == 0
// ignores C's contents. float16/bfloat16 compute in float32; integer types compute in their own type with alpha and
// beta converted to it. The arithmetic is the blocked GEMM of the nn family (ops/defs/nn/gemm_kernel.h), which also
// serves Conv, parallel over tiles of Y.
#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status GemmInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t == DType::kBool || t == DType::kString || t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 ||
      t == DType::kUInt16)
    return ctx.Error("A must be float16, bfloat16, float32, float64, int32, int64, uint32 or uint64, got ",
                     DTypeName(t));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "B"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "C"));
  if (!ctx.has_input(2) && ctx.opset() < 11) return ctx.Error("input C is required before opset 11");
  const PartialShape& a = ctx.input_shape(0);
  const PartialShape& b = ctx.input_shape(1);
  if ((a.rank_known && a.rank() != 2) || (b.rank_known && b.rank() != 2))
    return ctx.Error("A and B must be 2-D, got ", a.ToString(), " and ", b.ToString());
  const bool ta = ctx.node().GetInt("transA", 0) != 0, tb = ctx.node().GetInt("transB", 0) != 0;
  const Dim m = a.rank_known ? a.dims[ta ? 1 : 0] : Dim();
  const Dim ka = a.rank_known ? a.dims[ta ? 0 : 1] : Dim();
  const Dim kb = b.rank_known ? b.dims[tb ? 1 : 0] : Dim();
  const Dim n = b.rank_known ? b.dims[tb ? 0 : 1] : Dim();
  if (ka.known() && kb.known() && ka.value != kb.value)
    return ctx.Error("inner dimensions differ: A", ta ? "^T" : "", " is ", a.ToString(), ", B", tb ? "^T" : "", " is ",
                     b.ToString());
  PartialShape y = PartialShape::Of({m, n});
  if (ctx.has_input(2)) {
    auto bc = BroadcastPartial(y, ctx.input_shape(2));
    if (!bc.ok() || (bc->rank_known && bc->rank() != 2))
      return ctx.Error("C ", ctx.input_shape(2).ToString(), " does not broadcast to (M, N) = ", y.ToString());
  }
  ctx.SetOutput(0, t, std::move(y));
  return Status::OK();
}

// Y = alpha * op(A) op(B) + beta * C on buffers of type T (float, double or an integer type).
template <typename T>
void GemmRun(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha, double beta,
             Tensor* y) {
  const int64_t m = y->dim(0), n = y->dim(1), k = a.dim(ta ? 0 : 1);
  T* py = y->data<T>();
  const bool use_c = c != nullptr && beta != 0.0;
  if (use_c) {
    const T bt = static_cast<T>(beta);
    const T* pc = c->data<T>();
    const std::array<std::vector<int64_t>, 1> st{BroadcastStrides(c->shape(), y->shape())};
    ForEachBroadcast<1>(y->shape(), st, [&](int64_t i, const std::array<int64_t, 1>& off) { py[i] = bt * pc[off[0]]; });
  }
  nn::GemmBatch<T>(1, ta, tb, m, n, k, static_cast<T>(alpha), a.dim(1), b.dim(1), use_c ? T(1) : T(0), n, [&](int64_t) {
    return nn::GemmOperands<T>{a.data<T>(), b.data<T>(), py};
  });
}

Status GemmCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (b.dtype() != a.dtype() || (c && c->dtype() != a.dtype()))
    return ctx.Error("A, B and C must have the same element type, got ", DTypeName(a.dtype()), ", ",
                     DTypeName(b.dtype()), c ? StrCat(", ", DTypeName(c->dtype())) : std::string());
  if (a.rank() != 2 || b.rank() != 2)
    return ctx.Error("A and B must be 2-D, got ", a.shape().ToString(), " and ", b.shape().ToString());
  const bool ta = node.GetInt("transA", 0) != 0, tb = node.GetInt("transB", 0) != 0;
  const int64_t m = a.dim(ta ? 1 : 0), k = a.dim(ta ? 0 : 1), kb = b.dim(tb ? 1 : 0), n = b.dim(tb ? 0 : 1);
  if (k != kb)
    return ctx.Error("inner dimensions differ: A", ta ? "^T" : "", " is ", a.shape().ToString(), ", B", tb ? "^T" : "",
                     " is ", b.shape().ToString(), " (", k, " vs ", kb, ")");
  const Shape out{m, n};
  if (c) {
    auto bc = BroadcastShapes(c->shape(), out);
    if (!bc.ok() || *bc != out)
      return ctx.Error("C ", c->shape().ToString(), " does not broadcast to (M, N) = ", out.ToString());
  }
  const double alpha = node.GetFloat("alpha", 1.0f), beta = node.GetFloat("beta", 1.0f);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, a.dtype(), out));
  switch (a.dtype()) {
    case DType::kFloat32:
      GemmRun<float>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kFloat64:
      GemmRun<double>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kInt32:
      GemmRun<int32_t>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kInt64:
      GemmRun<int64_t>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kUInt32:
      GemmRun<uint32_t>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kUInt64:
      GemmRun<uint64_t>(a, b, c, ta, tb, alpha, beta, y);
      return Status::OK();
    case DType::kFloat16:
    case DType::kBFloat16: {
      STRATA_ASSIGN_OR_RETURN(Tensor af, nn::ConvertTo(a, DType::kFloat32, ctx.allocator()));
      STRATA_ASSIGN_OR_RETURN(Tensor bf, nn::ConvertTo(b, DType::kFloat32, ctx.allocator()));
      Tensor cf;
      if (c) {
        STRATA_ASSIGN_OR_RETURN(cf, nn::ConvertTo(*c, DType::kFloat32, ctx.allocator()));
      }
      STRATA_ASSIGN_OR_RETURN(Tensor yf, Tensor::Create(DType::kFloat32, out, ctx.allocator()));
      GemmRun<float>(af, bf, c ? &cf : nullptr, ta, tb, alpha, beta, &yf);
      return ConvertElements(yf, y);
    }
    default:
      return UnimplementedError(node.Describe(), ": Gemm does not support element type ", DTypeName(a.dtype()));
  }
}

// With A' = op(A), B' = op(B): dA' = alpha dY B'^T, dB' = alpha A'^T dY, each emitted as one Gemm that also undoes
// the transposition (dA = alpha B' dY^T when transA, ...); dC = beta dY summed to C's shape.
Status GemmGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  const int64_t ta = node.GetInt("transA", 0) != 0, tb = node.GetInt("transB", 0) != 0;
  const float alpha = node.GetFloat("alpha", 1.0f), beta = node.GetFloat("beta", 1.0f);
  const std::string& dy = ctx.output_grad(0);
  const auto gemm = [&](const std::string& a, const std::string& b, int64_t trans_a, int64_t trans_b) {
    AttributeMap attrs;
    attrs["alpha"] = Attribute::Float(alpha);
    attrs["transA"] = Attribute::Int(trans_a);
    attrs["transB"] = Attribute::Int(trans_b);
    return Emit1(ctx, "Gemm", {a, b}, std::move(attrs));
  };
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, ta ? gemm(In(ctx, 1), dy, tb, 1) : gemm(dy, In(ctx, 1), 0, 1 - tb));
  if (ctx.needs_input_grad(1)) ctx.SetInputGrad(1, tb ? gemm(dy, In(ctx, 0), 1, ta) : gemm(In(ctx, 0), dy, 1 - ta, 0));
  if (node.has_input(2) && ctx.needs_input_grad(2)) {
    std::string dc = dy;
    if (beta != 1.0f) dc = EMul(ctx, dy, ScalarConst(ctx, InType(ctx, 2), beta));
    ctx.SetInputGrad(2, ReduceGradTo(ctx, dc, 2));
  }
  return Status::OK();
}

}  // namespace

void RegisterGemm(OpRegistry* r) {
  OpSchema s;
  s.name = "Gemm";
  s.since_version = 13;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = GemmInfer;
  s.reference = GemmCompute;
  s.grad = GemmGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
