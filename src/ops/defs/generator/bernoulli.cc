// Bernoulli (opset 15): out[i] = 1 with probability input[i] (a float in [0, 1]), else 0, in the type of the
// `dtype` attribute (any number type or bool; default: the input's type). See random_util.h for seeding.
#include <cmath>

#include "ops/defs/generator/random_util.h"
#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

StatusOr<DType> BernoulliDtype(const Node& node, DType input) {
  if (!node.HasAttr("dtype")) return input;
  auto t = DTypeFromOnnx(static_cast<int>(node.GetInt("dtype", 1)));
  if (!t.ok()) return InvalidArgumentError(node.Describe(), ": dtype: ", t.status().message());
  if (*t == DType::kString) return InvalidArgumentError(node.Describe(), ": dtype cannot be string");
  return *t;
}

Status BernoulliInfer(InferContext& ctx) {
  const DType in = ctx.input_dtype(0);
  if (in != DType::kUndefined && !IsFloatingPoint(in))
    return ctx.Error("the probabilities must be a float type, got ", DTypeName(in));
  STRATA_ASSIGN_OR_RETURN(DType dtype, BernoulliDtype(ctx.node(), in));
  ctx.SetOutput(0, dtype, ctx.input_shape(0));
  return Status::OK();
}

Status BernoulliCompute(KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(DType dtype, BernoulliDtype(ctx.node(), p.dtype()));
  std::vector<double> prob(p.num_elements());
  STRATA_RETURN_IF_ERROR(DispatchFloat(p.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = p.data<T>();
    for (size_t i = 0; i < prob.size(); ++i) prob[i] = static_cast<double>(ToCompute(in[i]));
    return Status::OK();
  }));
  for (size_t i = 0; i < prob.size(); ++i)
    if (!(prob[i] >= 0 && prob[i] <= 1))
      return ctx.Error("probability ", prob[i], " at element ", i, " is outside [0, 1]");
  // Draw as float64 0/1, then convert to the output type.
  NumpyRandom rng(OpSeed(ctx.node()));
  Tensor draws = Tensor::Empty(DType::kFloat64, p.shape());
  double* d = draws.data<double>();
  for (size_t i = 0; i < prob.size(); ++i) d[i] = rng.Uniform() < prob[i] ? 1.0 : 0.0;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype, p.shape()));
  return ConvertElements(draws, y);
}

}  // namespace

void RegisterBernoulli(OpRegistry* r) {
  OpSchema s;
  s.name = "Bernoulli";
  s.since_version = 15;
  s.infer = BernoulliInfer;
  s.reference = BernoulliCompute;
  s.no_grad_reason = "random output";
  s.deterministic = false;
  r->Add(std::move(s));
}

}  // namespace strata::ops
