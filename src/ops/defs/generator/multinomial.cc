// Multinomial (opset 7): for each row of a [batch, classes] float input of unnormalised log-probabilities, draws
// sample_size (default 1) class indices, as int32 (default) or int64 per `dtype`. See random_util.h for seeding.
#include <algorithm>
#include <cmath>

#include "ops/defs/generator/random_util.h"
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

StatusOr<DType> MultinomialDtype(const Node& node) {
  const int64_t t = node.GetInt("dtype", 6);
  if (t == 6) return DType::kInt32;
  if (t == 7) return DType::kInt64;
  return InvalidArgumentError(node.Describe(), ": dtype ", t, " must be int32 (6) or int64 (7)");
}

StatusOr<int64_t> SampleSize(const Node& node) {
  const int64_t n = node.GetInt("sample_size", 1);
  if (n < 0) return InvalidArgumentError(node.Describe(), ": sample_size must be >= 0, got ", n);
  return n;
}

Status MultinomialInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, MultinomialDtype(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(int64_t n, SampleSize(ctx.node()));
  const PartialShape& in = ctx.input_shape(0);
  if (in.rank_known && in.rank() != 2) return ctx.Error("the input must be [batch, classes], got ", in.ToString());
  ctx.SetOutput(0, dtype, PartialShape::Of({in.rank_known ? in.dims[0] : Dim(), Dim(n)}));
  return Status::OK();
}

Status MultinomialCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(DType dtype, MultinomialDtype(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(int64_t n, SampleSize(ctx.node()));
  if (x.rank() != 2) return ctx.Error("the input must be [batch, classes], got ", x.shape().ToString());
  const int64_t batch = x.dim(0), classes = x.dim(1);
  if (classes == 0 && batch > 0 && n > 0) return ctx.Error("cannot sample from zero classes");
  std::vector<double> logits(x.num_elements());
  STRATA_RETURN_IF_ERROR(DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<double>(ToCompute(p[i]));
    return Status::OK();
  }));
  STRATA_ASSIGN_OR_RETURN(Shape out, ShapeFromDims({batch, n}, ctx.node(), "the output shape"));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, out));
  if (n == 0 || batch == 0) return Status::OK();
  NumpyRandom rng(OpSeed(ctx.node()));
  std::vector<double> cdf(classes);
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = &logits[b * classes];
    const double mx = *std::max_element(row, row + classes);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) cdf[c] = total += std::exp(row[c] - mx);
    if (!(total > 0) || !std::isfinite(total)) return ctx.Error("row ", b, " has no finite, positive probability");
    for (int64_t s = 0; s < n; ++s) {
      const double u = rng.Uniform() * total;
      const int64_t c = std::min<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), classes - 1);
      if (dtype == DType::kInt32)
        y->data<int32_t>()[b * n + s] = static_cast<int32_t>(c);
      else
        y->data<int64_t>()[b * n + s] = c;
    }
  }
  return Status::OK();
}

}  // namespace

void RegisterMultinomial(OpRegistry* r) {
  OpSchema s;
  s.name = "Multinomial";
  s.since_version = 7;
  s.infer = MultinomialInfer;
  s.reference = MultinomialCompute;
  s.no_grad_reason = "random integer output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
