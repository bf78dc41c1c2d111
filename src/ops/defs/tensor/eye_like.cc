// EyeLike (opset 9): a 2-D tensor shaped like the input with ones on the diagonal shifted by k (column - row == k)
// and zeros elsewhere. The output type is the `dtype` attribute, or the input's type.
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

StatusOr<DType> EyeLikeDtype(const Node& node, DType input) {
  if (!node.HasAttr("dtype")) return input;
  auto t = DTypeFromOnnx(static_cast<int>(node.GetInt("dtype", 0)));
  if (!t.ok()) return InvalidArgumentError(node.Describe(), ": dtype: ", t.status().message());
  return *t;
}

Status EyeLikeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  if (in.rank_known && in.rank() != 2) return ctx.Error("EyeLike needs a 2-D input, got ", in.ToString());
  STRATA_ASSIGN_OR_RETURN(DType dtype, EyeLikeDtype(ctx.node(), ctx.input_dtype(0)));
  if (dtype == DType::kString) return ctx.Error("EyeLike cannot produce strings");
  ctx.SetOutput(0, dtype, in.rank_known ? in : UnknownShape(2));
  return Status::OK();
}

Status EyeLikeCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) return ctx.Error("EyeLike needs a 2-D input, got ", x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(DType dtype, EyeLikeDtype(ctx.node(), x.dtype()));
  if (dtype == DType::kString) return ctx.Error("EyeLike cannot produce strings");
  const int64_t k = ctx.node().GetInt("k", 0);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, x.shape()));
  std::memset(y->raw_data(), 0, y->byte_size());
  // A one of the output type, copied bytewise onto the diagonal.
  Tensor one = Tensor::Zeros(dtype, Shape{});
  STRATA_RETURN_IF_ERROR(ConvertElements(Tensor::Scalar<float>(1.0f), &one));
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const size_t size = DTypeSize(dtype);
  char* out = static_cast<char*>(y->raw_data());
  for (int64_t i = 0; i < rows; ++i) {
    if (k < -i || k >= cols - i) continue;  // column i + k outside [0, cols)
    std::memcpy(out + (i * cols + i + k) * size, one.raw_data(), size);
  }
  return Status::OK();
}

}  // namespace

void RegisterEyeLike(OpRegistry* r) {
  OpSchema s;
  s.name = "EyeLike";
  s.since_version = 9;
  s.infer = EyeLikeInfer;
  s.reference = EyeLikeCompute;
  s.no_grad_reason = "the output does not depend on the input's values";
  r->Add(std::move(s));
}

}  // namespace strata::ops
