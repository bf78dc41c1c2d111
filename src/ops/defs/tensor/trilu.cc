// Trilu (opset 14): keeps the upper (upper=1, default) or lower triangle of the last two dimensions and zeroes the
// rest. The optional scalar int64 input k shifts the diagonal: upper keeps column - row >= k, lower keeps
// column - row <= k.
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status TriluInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Trilu k"));
  const PartialShape& in = ctx.input_shape(0);
  if (in.rank_known && in.rank() < 2) return ctx.Error("Trilu needs an input of rank >= 2, got ", in.ToString());
  return InferSameAsInput0(ctx);
}

Status TriluCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.Error("Trilu needs an input of rank >= 2, got ", x.shape().ToString());
  int64_t k = 0;
  if (ctx.has_input(1)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ReadInts(ctx.input(1), "Trilu k"));
    if (kv.size() != 1) return ctx.Error("k must be a scalar, got shape ", ctx.input(1).shape().ToString());
    k = kv[0];
  }
  const bool upper = ctx.node().GetInt("upper", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t rows = x.dim(x.rank() - 2);
  const int64_t cols = x.dim(x.rank() - 1);
  const int64_t mats = x.shape().Product(0, x.rank() - 2);
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* in = StorageOf<S>(x);
    S* out = StorageOf<S>(y);
    S zero{};  // all-zero bytes: 0 for every number type and false; the empty string for strings
    for (int64_t m = 0; m < mats; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t off = (m * rows + i) * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = upper ? (j - i >= k) : (j - i <= k);
          out[off + j] = keep ? in[off + j] : zero;
        }
      }
    }
    return Status::OK();
  });
}

// A fixed mask: dX = Trilu(dY) with the same triangle.
Status TriluGrad(GradContext& ctx) {
  std::vector<std::string> ins{ctx.output_grad(0)};
  if (ctx.node().has_input(1)) ins.push_back(In(ctx, 1));
  ctx.SetInputGrad(0, Emit1(ctx, "Trilu", ins, CopyAttrs(ctx.node(), {"upper"})));
  return Status::OK();
}

}  // namespace

void RegisterTrilu(OpRegistry* r) {
  OpSchema s;
  s.name = "Trilu";
  s.since_version = 14;
  s.max_inputs = 2;
  s.infer = TriluInfer;
  s.reference = TriluCompute;
  s.grad = TriluGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
