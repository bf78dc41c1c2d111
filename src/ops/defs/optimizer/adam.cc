// Adam (ai.onnx.preview.training, opset 1): one Adam step for n tensors. Inputs R (learning rate), T (update count),
// then X_1..n, G_1..n, V_1..n (first moments), H_1..n (second moments); outputs X_new_1..n, V_new_1..n, H_new_1..n:
//   g = norm_coefficient * X + G;  V_new = alpha * V + (1 - alpha) * g;  H_new = beta * H + (1 - beta) * g * g
//   r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//   X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon))
// Defaults (the schema's): alpha 0.9, beta 0.999, epsilon 1e-6, norm_coefficient 0, norm_coefficient_post 0.
// Computed in double precision.
#include "ops/defs/optimizer/optimizer_util.h"

namespace strata::ops {
namespace {

Status AdamInfer(InferContext& ctx) { return optimizer::InferUpdate(ctx, 4, {0, 2, 3}); }

Status AdamCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const double alpha = node.GetFloat("alpha", 0.9f), beta = node.GetFloat("beta", 0.999f);
  const double eps = node.GetFloat("epsilon", 1e-6f), norm = node.GetFloat("norm_coefficient", 0.0f);
  const double post = node.GetFloat("norm_coefficient_post", 0.0f);
  STRATA_ASSIGN_OR_RETURN(optimizer::Step step, optimizer::ReadStep(ctx, 4, {0, 2, 3}));
  const double t = static_cast<double>(step.t);
  const double r = step.t > 0 ? step.r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : step.r;
  return optimizer::ForEachTensor(ctx, step, [&](std::vector<double>& v) {
    // v = [x, g, v, h] -> outputs [x_new, v_new, h_new]
    const double g = norm * v[0] + v[1];
    const double m = alpha * v[2] + (1.0 - alpha) * g;
    const double h = beta * v[3] + (1.0 - beta) * g * g;
    const double x = v[0] - r * m / (std::sqrt(h) + eps);
    v[0] = (1.0 - post) * x;
    v[1] = m;
    v[2] = h;
  });
}

}  // namespace

void RegisterAdam(OpRegistry* r) {
  OpSchema s;
  s.domain = std::string(optimizer::kTrainingDomain);
  s.name = "Adam";
  s.since_version = 1;
  s.min_inputs = 6;
  s.max_inputs = -1;
  s.min_outputs = 3;
  s.max_outputs = -1;
  s.infer = AdamInfer;
  s.reference = AdamCompute;
  s.no_grad_reason = "an optimizer update, applied after the gradients";
  r->Add(std::move(s));
}

}  // namespace strata::ops
