// strata.SGDUpdate(w, g, lr, m?, grad_scale?) -> (w_new, m_new?): one step of Keras SGD for one variable.
//   g <- g * grad_scale (clipping; 1 when absent)
//   w <- w - w * weight_decay * lr (decoupled weight decay, before the update, when weight_decay > 0)
//   momentum == 0: w <- w - lr * g
//   momentum > 0 : m <- momentum * m - lr * g; w <- w + m, or with nesterov w <- w + momentum * m - lr * g
// The momentum slot m is required when momentum > 0. The outputs are new tensors: the trainer feeds variables and
// slots in and takes the updated values out (functional state; see docs/training.md).
#include "ops/defs/train/train_util.h"

namespace strata::ops {
namespace {

Status SgdCompute(KernelContext& ctx) {
  const Tensor& w = ctx.input(0);
  const float momentum = ctx.node().GetFloat("momentum", 0.0f);
  const bool nesterov = ctx.node().GetInt("nesterov", 0) != 0;
  const double wd = ctx.node().GetFloat("weight_decay", 0.0f);
  if (momentum > 0 && !ctx.has_input(3)) return ctx.Error("momentum ", momentum, " needs the momentum slot input m");
  STRATA_RETURN_IF_ERROR(train_ops::CheckLikeInput0(ctx, {1, 3}));
  STRATA_ASSIGN_OR_RETURN(double lr, train_ops::ScalarInput(ctx, 2, "lr", 0.01));
  STRATA_ASSIGN_OR_RETURN(double scale, train_ops::ScalarInput(ctx, 4, "grad_scale", 1.0));
  STRATA_ASSIGN_OR_RETURN(Tensor * w_new, ctx.Output(0, w.dtype(), w.shape()));
  Tensor* m_new = nullptr;
  if (momentum > 0) {
    STRATA_ASSIGN_OR_RETURN(m_new, ctx.Output(1, w.dtype(), w.shape()));
  }
  return DispatchFloat(w.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* __restrict pw = w.data<T>();
      const T* __restrict pg = ctx.input(1).data<T>();
      const T* __restrict pm = momentum > 0 ? ctx.input(3).data<T>() : nullptr;
      T* __restrict ow = w_new->data<T>();
      T* __restrict om = m_new ? m_new->data<T>() : nullptr;
      const T tlr = T(lr), tsc = T(scale), mu = T(momentum), decay = wd > 0 ? T(1.0 - wd * lr) : T(1);
      train_ops::ParallelElements(w.num_elements(), [&](int64_t b, int64_t e) {
        if (!om) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) ow[i] = pw[i] * decay - tlr * (pg[i] * tsc);
        } else if (nesterov) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            const T g = pg[i] * tsc;
            const T m = mu * pm[i] - tlr * g;
            om[i] = m;
            ow[i] = pw[i] * decay + mu * m - tlr * g;
          }
        } else {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            const T m = mu * pm[i] - tlr * (pg[i] * tsc);
            om[i] = m;
            ow[i] = pw[i] * decay + m;
          }
        }
      });
      return Status::OK();
    }
    return ctx.Error("variables must be float32 or float64");
  });
}

}  // namespace

void RegisterSGDUpdate(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SGDUpdate";
  s.min_inputs = 3;
  s.max_inputs = 5;
  s.max_outputs = 2;
  s.infer = train_ops::InferUpdate;
  s.reference = SgdCompute;
  s.no_grad_reason = "optimizer update (applied after differentiation)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
