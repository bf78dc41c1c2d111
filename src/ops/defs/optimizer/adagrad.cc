// Adagrad (ai.onnx.preview.training, opset 1): one Adagrad step for n tensors. Inputs R (learning rate, float scalar),
// T (update count, int64 scalar), then X_1..X_n, G_1..G_n, H_1..H_n; outputs X_new_1..n, H_new_1..n:
//   r = R / (1 + T * decay_factor);  g = norm_coefficient * X + G;  H_new = H + g * g;
//   X_new = X - r * g / (sqrt(H_new) + epsilon)
// Defaults (the schema's): decay_factor 0, epsilon 1e-6, norm_coefficient 0. Computed in double precision.
#include "ops/defs/optimizer/optimizer_util.h"

namespace strata::ops {
namespace {

Status AdagradInfer(InferContext& ctx) { return optimizer::InferUpdate(ctx, 3, {0, 2}); }

Status AdagradCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const double decay = node.GetFloat("decay_factor", 0.0f), eps = node.GetFloat("epsilon", 1e-6f);
  const double norm = node.GetFloat("norm_coefficient", 0.0f);
  STRATA_ASSIGN_OR_RETURN(optimizer::Step step, optimizer::ReadStep(ctx, 3, {0, 2}));
  const double r = step.r / (1.0 + static_cast<double>(step.t) * decay);
  return optimizer::ForEachTensor(ctx, step, [&](std::vector<double>& v) {
    // v = [x, g, h] -> outputs [x_new, h_new]
    const double g = norm * v[0] + v[1];
    const double h = v[2] + g * g;
    v[0] = v[0] - r * g / (std::sqrt(h) + eps);
    v[1] = h;
  });
}

}  // namespace

void RegisterAdagrad(OpRegistry* r) {
  OpSchema s;
  s.domain = std::string(optimizer::kTrainingDomain);
  s.name = "Adagrad";
  s.since_version = 1;
  s.min_inputs = 5;
  s.max_inputs = -1;
  s.min_outputs = 2;
  s.max_outputs = -1;
  s.infer = AdagradInfer;
  s.reference = AdagradCompute;
  s.no_grad_reason = "an optimizer update, applied after the gradients";
  r->Add(std::move(s));
}

}  // namespace strata::ops
