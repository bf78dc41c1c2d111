// strata.GlobalNorm(x_1, ..., x_n) -> (norm, scale): norm = sqrt(sum_k sum(x_k^2)) (accumulated in double) and, with
// attribute clip_norm > 0, scale = clip_norm / max(norm, clip_norm) (tf.clip_by_global_norm; 1 when the norm is
// within the limit). The optimizer feeds `scale` to every update op of the group as grad_scale, so clipping costs
// no copy of the gradients. Both outputs are float32 scalars (float64 when the inputs are).
#include <cmath>

#include "ops/defs/train/train_util.h"

namespace strata::ops {
namespace {

Status GlobalNormInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0) == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  ctx.SetOutput(0, t, PartialShape::Of(std::vector<Dim>{}));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, t, PartialShape::Of(std::vector<Dim>{}));
  return Status::OK();
}

Status GlobalNormCompute(KernelContext& ctx) {
  double sum = 0;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k)) continue;
    const Tensor& x = ctx.input(k);
    if (x.dtype() == DType::kFloat32) {
      const float* p = x.data<float>();
      double s = 0;
      for (int64_t i = 0; i < x.num_elements(); ++i) s += static_cast<double>(p[i]) * p[i];
      sum += s;
    } else if (x.dtype() == DType::kFloat64) {
      const double* p = x.data<double>();
      for (int64_t i = 0; i < x.num_elements(); ++i) sum += p[i] * p[i];
    } else {
      return ctx.Error("input ", k, " must be float32 or float64, got ", x.TypeString());
    }
  }
  const double norm = std::sqrt(sum);
  const double clip = ctx.node().GetFloat("clip_norm", 0.0f);
  const double scale = clip > 0 ? clip / std::max(norm, clip) : 1.0;
  const DType t = ctx.input(0).dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  STRATA_ASSIGN_OR_RETURN(Tensor * out_norm, ctx.Output(0, t, Shape{}));
  Tensor* out_scale = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(out_scale, ctx.Output(1, t, Shape{}));
  }
  if (t == DType::kFloat64) {
    out_norm->data<double>()[0] = norm;
    if (out_scale) out_scale->data<double>()[0] = scale;
  } else {
    out_norm->data<float>()[0] = static_cast<float>(norm);
    if (out_scale) out_scale->data<float>()[0] = static_cast<float>(scale);
  }
  return Status::OK();
}

}  // namespace

void RegisterGlobalNorm(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "GlobalNorm";
  s.min_inputs = 1;
  s.max_inputs = -1;
  s.max_outputs = 2;
  s.infer = GlobalNormInfer;
  s.reference = GlobalNormCompute;
  s.no_grad_reason = "used for gradient clipping after differentiation";
  r->Add(std::move(s));
}

}  // namespace strata::ops
