// Momentum (ai.onnx.preview.training, opset 1): one SGD-with-momentum step for n tensors. Inputs R (learning rate),
// T (update count), then X_1..n, G_1..n, V_1..n; outputs X_new_1..n, V_new_1..n. alpha, beta, mode and
// norm_coefficient are required:
//   g = norm_coefficient * X + G;  b = T > 0 ? beta : 1;  V_new = alpha * V + b * g
//   mode "standard": X_new = X - R * V_new;   mode "nesterov": X_new = X - R * (g + alpha * V_new)
// Computed in double precision.
#include "ops/defs/optimizer/optimizer_util.h"

namespace strata::ops {
namespace {

Status MomentumInfer(InferContext& ctx) {
  const Node& node = ctx.node();
  for (const char* a : {"alpha", "beta", "norm_coefficient"}) STRATA_RETURN_IF_ERROR(node.RequireFloat(a).status());
  const std::string mode = node.GetString("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return ctx.Error("attribute mode (standard or nesterov) is required, got '", mode, "'");
  return optimizer::InferUpdate(ctx, 3, {0, 2});
}

Status MomentumCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(float alpha, node.RequireFloat("alpha"));
  STRATA_ASSIGN_OR_RETURN(float beta, node.RequireFloat("beta"));
  STRATA_ASSIGN_OR_RETURN(float norm, node.RequireFloat("norm_coefficient"));
  const std::string mode = node.GetString("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return ctx.Error("attribute mode (standard or nesterov) is required, got '", mode, "'");
  const bool nesterov = mode == "nesterov";
  STRATA_ASSIGN_OR_RETURN(optimizer::Step step, optimizer::ReadStep(ctx, 3, {0, 2}));
  const double a = alpha, b = step.t > 0 ? static_cast<double>(beta) : 1.0, r = step.r;
  return optimizer::ForEachTensor(ctx, step, [&](std::vector<double>& v) {
    // v = [x, g, v] -> outputs [x_new, v_new]
    const double g = static_cast<double>(norm) * v[0] + v[1];
    const double m = a * v[2] + b * g;
    v[0] = nesterov ? v[0] - r * (g + a * m) : v[0] - r * m;
    v[1] = m;
  });
}

}  // namespace

void RegisterMomentum(OpRegistry* r) {
  OpSchema s;
  s.domain = std::string(optimizer::kTrainingDomain);
  s.name = "Momentum";
  s.since_version = 1;
  s.min_inputs = 5;
  s.max_inputs = -1;
  s.min_outputs = 2;
  s.max_outputs = -1;
  s.infer = MomentumInfer;
  s.reference = MomentumCompute;
  s.no_grad_reason = "an optimizer update, applied after the gradients";
  r->Add(std::move(s));
}

}  // namespace strata::ops
