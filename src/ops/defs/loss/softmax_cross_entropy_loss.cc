// SoftmaxCrossEntropyLoss (opset 12, 13: bfloat16): scores [N, C, d1..dk], labels [N, d1..dk], optional weights [C];
// attributes reduction (none/sum/mean, default mean) and ignore_index. The log-softmax over C is computed stably in
// double (x - max - log(sum(exp(x - max)))), optionally returned as output 1 (log_prob, the scores' shape), and fed
// to the same weighted negative log-likelihood as NegativeLogLikelihoodLoss (loss_util.h).
#include "ops/defs/loss/loss_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// logp[n, c, d] = log_softmax over c of x[n, :, d]; every array is [N, C, D].
template <typename T>
void LogSoftmaxAxis1(const T* x, double* logp, const LossDims& dims) {
  const int64_t c_count = dims.c, d_count = dims.d;
  std::vector<double> mx(d_count), sum(d_count);
  for (int64_t n = 0; n < dims.n; ++n) {
    const T* xs = x + n * c_count * d_count;
    double* ls = logp + n * c_count * d_count;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t d = 0; d < d_count; ++d)
        mx[d] = std::max(mx[d], static_cast<double>(ToCompute(xs[c * d_count + d])));
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t d = 0; d < d_count; ++d)
        sum[d] += std::exp(static_cast<double>(ToCompute(xs[c * d_count + d])) - mx[d]);
    for (int64_t d = 0; d < d_count; ++d) sum[d] = mx[d] + std::log(sum[d]);
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t d = 0; d < d_count; ++d)
        ls[c * d_count + d] = static_cast<double>(ToCompute(xs[c * d_count + d])) - sum[d];
  }
}

Status SceCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(LossAttrs attrs, ParseLossAttrs(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(LossDims dims, CheckLossShapes(ctx));
  const Tensor& x = ctx.input(0);
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::vector<double> logp(static_cast<size_t>(x.num_elements()));
    LogSoftmaxAxis1(x.data<T>(), logp.data(), dims);
    if (ctx.output_wanted(1)) {
      STRATA_ASSIGN_OR_RETURN(Tensor * lp, ctx.Output(1, x.dtype(), x.shape()));
      T* out = lp->data<T>();
      for (size_t i = 0; i < logp.size(); ++i) out[i] = T(static_cast<ComputeType<T>>(logp[i]));
    }
    return WeightedNll<T>(ctx, attrs, dims, logp.data());
  });
}

// dScores = strata.SoftmaxCrossEntropyLossGrad(dloss, log_prob, target, weight), reading the forward node's log_prob
// output (named for the purpose when the graph does not use it), plus LogSoftmaxGrad of log_prob's own gradient.
Status SceGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(2))
    return UnimplementedError(ctx.node().Describe(),
                              ": the gradient with respect to the class weights is not supported");
  const std::string log_prob = ctx.ForwardOutput(1);
  std::string dx;
  if (!ctx.output_grad(0).empty()) {
    std::vector<std::string> ins{ctx.output_grad(0), log_prob, In(ctx, 1)};
    if (ctx.node().has_input(2)) ins.push_back(In(ctx, 2));
    dx = Emit1(ctx, "SoftmaxCrossEntropyLossGrad", ins, CopyAttrs(ctx.node(), {"reduction", "ignore_index"}),
               graph::kStrataDomain);
  }
  if (!ctx.output_grad(1).empty()) {
    AttributeMap axis;
    axis["axis"] = Attribute::Int(1);
    const std::string d2 =
        Emit1(ctx, "LogSoftmaxGrad", {ctx.output_grad(1), log_prob}, std::move(axis), graph::kStrataDomain);
    dx = dx.empty() ? d2 : EAdd(ctx, dx, d2);
  }
  ctx.SetInputGrad(0, dx);
  return Status::OK();
}

}  // namespace

void RegisterSoftmaxCrossEntropyLoss(OpRegistry* r) {
  OpSchema s;
  s.name = "SoftmaxCrossEntropyLoss";
  s.since_version = 12;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.min_outputs = 1;
  s.max_outputs = 2;
  s.infer = InferLoss;
  s.reference = SceCompute;
  s.grad = SceGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
