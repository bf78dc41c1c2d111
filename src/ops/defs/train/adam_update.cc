// strata.AdamUpdate(w, g, m, v, lr, iterations, grad_scale?, vhat?) -> (w_new, m_new, v_new, vhat_new?): one step
// of Keras Adam/AdamW for one variable, at t = iterations + 1 (iterations: int64 scalar, steps taken so far):
//   g <- g * grad_scale;  w <- w - w * weight_decay * lr (AdamW: decoupled, before the update)
//   m <- m + (g - m)(1 - beta_1);  v <- v + (g^2 - v)(1 - beta_2)
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   w <- w - alpha * m / (sqrt(v) + epsilon)          (amsgrad: vhat <- max(vhat, v), sqrt(vhat) instead)
// epsilon is added to the uncorrected sqrt(v) ("epsilon hat"), as Keras does. Defaults: beta_1 0.9, beta_2 0.999,
// epsilon 1e-7.
#include <cmath>

#include "ops/defs/train/train_util.h"

namespace strata::ops {
namespace {

Status AdamCompute(KernelContext& ctx) {
  const Tensor& w = ctx.input(0);
  const double b1 = ctx.node().GetFloat("beta_1", 0.9f);
  const double b2 = ctx.node().GetFloat("beta_2", 0.999f);
  const double eps = ctx.node().GetFloat("epsilon", 1e-7f);
  const double wd = ctx.node().GetFloat("weight_decay", 0.0f);
  const bool amsgrad = ctx.node().GetInt("amsgrad", 0) != 0;
  if (amsgrad && !ctx.has_input(7)) return ctx.Error("amsgrad needs the vhat slot input");
  STRATA_RETURN_IF_ERROR(train_ops::CheckLikeInput0(ctx, {1, 2, 3, 7}));
  STRATA_ASSIGN_OR_RETURN(double lr, train_ops::ScalarInput(ctx, 4, "lr", 0.001));
  const Tensor& it = ctx.input(5);
  if (it.dtype() != DType::kInt64 || it.num_elements() != 1)
    return ctx.Error("iterations must be an int64 scalar, got ", it.TypeString());
  const double t = static_cast<double>(it.data<int64_t>()[0] + 1);
  STRATA_ASSIGN_OR_RETURN(double scale, train_ops::ScalarInput(ctx, 6, "grad_scale", 1.0));
  const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  STRATA_ASSIGN_OR_RETURN(Tensor * w_new, ctx.Output(0, w.dtype(), w.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * m_new, ctx.Output(1, w.dtype(), w.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * v_new, ctx.Output(2, w.dtype(), w.shape()));
  Tensor* vh_new = nullptr;
  if (amsgrad) {
    STRATA_ASSIGN_OR_RETURN(vh_new, ctx.Output(3, w.dtype(), w.shape()));
  }
  return DispatchFloat(w.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* __restrict pw = w.data<T>();
      const T* __restrict pg = ctx.input(1).data<T>();
      const T* __restrict pm = ctx.input(2).data<T>();
      const T* __restrict pv = ctx.input(3).data<T>();
      const T* __restrict pvh = amsgrad ? ctx.input(7).data<T>() : nullptr;
      T* __restrict ow = w_new->data<T>();
      T* __restrict om = m_new->data<T>();
      T* __restrict ov = v_new->data<T>();
      T* __restrict ovh = vh_new ? vh_new->data<T>() : nullptr;
      const T one_b1 = T(1 - b1), one_b2 = T(1 - b2), ta = T(alpha), te = T(eps), tsc = T(scale);
      const T decay = wd > 0 ? T(1.0 - wd * lr) : T(1);
      train_ops::ParallelElements(w.num_elements(), [&](int64_t b, int64_t e) {
        if (ovh) {
          for (int64_t i = b; i < e; ++i) {
            const T g = pg[i] * tsc;
            const T m = pm[i] + (g - pm[i]) * one_b1;
            const T v = pv[i] + (g * g - pv[i]) * one_b2;
            const T vh = std::max(pvh[i], v);
            om[i] = m, ov[i] = v, ovh[i] = vh;
            ow[i] = pw[i] * decay - ta * m / (std::sqrt(vh) + te);
          }
          return;
        }
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const T g = pg[i] * tsc;
          const T m = pm[i] + (g - pm[i]) * one_b1;
          const T v = pv[i] + (g * g - pv[i]) * one_b2;
          om[i] = m;
          ov[i] = v;
          ow[i] = pw[i] * decay - ta * m / (std::sqrt(v) + te);
        }
      });
      return Status::OK();
    }
    return ctx.Error("variables must be float32 or float64");
  });
}

}  // namespace

void RegisterAdamUpdate(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "AdamUpdate";
  s.min_inputs = 6;
  s.max_inputs = 8;
  s.min_outputs = 3;
  s.max_outputs = 4;
  s.infer = train_ops::InferUpdate;
  s.reference = AdamCompute;
  s.no_grad_reason = "optimizer update (applied after differentiation)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
