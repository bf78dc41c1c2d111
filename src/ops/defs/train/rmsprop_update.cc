// strata.RMSpropUpdate(w, g, vel, lr, mom?, avg?, grad_scale?) -> (w_new, vel_new, mom_new?, avg_new?): one step of
// Keras RMSprop for one variable:
//   g <- g * grad_scale;  w <- w - w * weight_decay * lr (decoupled, when set)
//   vel <- rho * vel + (1 - rho) * g^2
//   centered: avg <- rho * avg + (1 - rho) * g; denom = vel - avg^2 + epsilon; else denom = vel + epsilon
//   inc = lr * g / sqrt(denom)
//   momentum > 0: mom <- momentum * mom + inc; w <- w - mom;   else w <- w - inc
// Defaults: rho 0.9, momentum 0, epsilon 1e-7, centered 0.
#include <cmath>

#include "ops/defs/train/train_util.h"

namespace strata::ops {
namespace {

Status RmsCompute(KernelContext& ctx) {
  const Tensor& w = ctx.input(0);
  const double rho = ctx.node().GetFloat("rho", 0.9f);
  const double mu = ctx.node().GetFloat("momentum", 0.0f);
  const double eps = ctx.node().GetFloat("epsilon", 1e-7f);
  const double wd = ctx.node().GetFloat("weight_decay", 0.0f);
  const bool centered = ctx.node().GetInt("centered", 0) != 0;
  if (mu > 0 && !ctx.has_input(4)) return ctx.Error("momentum ", mu, " needs the momentum slot input");
  if (centered && !ctx.has_input(5)) return ctx.Error("centered needs the average-gradient slot input");
  STRATA_RETURN_IF_ERROR(train_ops::CheckLikeInput0(ctx, {1, 2, 4, 5}));
  STRATA_ASSIGN_OR_RETURN(double lr, train_ops::ScalarInput(ctx, 3, "lr", 0.001));
  STRATA_ASSIGN_OR_RETURN(double scale, train_ops::ScalarInput(ctx, 6, "grad_scale", 1.0));
  STRATA_ASSIGN_OR_RETURN(Tensor * w_new, ctx.Output(0, w.dtype(), w.shape()));
  STRATA_ASSIGN_OR_RETURN(Tensor * vel_new, ctx.Output(1, w.dtype(), w.shape()));
  Tensor *mom_new = nullptr, *avg_new = nullptr;
  if (mu > 0) {
    STRATA_ASSIGN_OR_RETURN(mom_new, ctx.Output(2, w.dtype(), w.shape()));
  }
  if (centered) {
    STRATA_ASSIGN_OR_RETURN(avg_new, ctx.Output(3, w.dtype(), w.shape()));
  }
  return DispatchFloat(w.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *pw = w.data<T>(), *pg = ctx.input(1).data<T>(), *pvel = ctx.input(2).data<T>();
      const T* pmom = mom_new ? ctx.input(4).data<T>() : nullptr;
      const T* pavg = avg_new ? ctx.input(5).data<T>() : nullptr;
      T *ow = w_new->data<T>(), *ovel = vel_new->data<T>();
      T* omom = mom_new ? mom_new->data<T>() : nullptr;
      T* oavg = avg_new ? avg_new->data<T>() : nullptr;
      const T trho = T(rho), one_rho = T(1 - rho), tlr = T(lr), te = T(eps), tmu = T(mu), tsc = T(scale);
      const T decay = T(1.0 - wd * lr);
      train_ops::ParallelElements(w.num_elements(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const T g = pg[i] * tsc;
          const T vel = trho * pvel[i] + one_rho * g * g;
          ovel[i] = vel;
          T denom = vel + te;
          if (oavg) {
            const T avg = trho * pavg[i] + one_rho * g;
            oavg[i] = avg;
            denom = vel - avg * avg + te;
          }
          const T inc = tlr * g / std::sqrt(denom);
          T x = wd > 0 ? pw[i] * decay : pw[i];
          if (omom) {
            const T m = tmu * pmom[i] + inc;
            omom[i] = m;
            x -= m;
          } else {
            x -= inc;
          }
          ow[i] = x;
        }
      });
      return Status::OK();
    }
    return ctx.Error("variables must be float32 or float64");
  });
}

}  // namespace

void RegisterRMSpropUpdate(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "RMSpropUpdate";
  s.min_inputs = 4;
  s.max_inputs = 7;
  s.min_outputs = 2;
  s.max_outputs = 4;
  s.infer = train_ops::InferUpdate;
  s.reference = RmsCompute;
  s.no_grad_reason = "optimizer update (applied after differentiation)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
