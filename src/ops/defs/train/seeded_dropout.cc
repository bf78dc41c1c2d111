// strata.SeededDropout(X, seed) -> (Y, mask): inverted dropout for training graphs. Each element is kept with
// probability 1 - rate and scaled by 1 / (1 - rate) (Keras Dropout); rate = 0 is the identity and rate = 1 gives
// zeros. The draws are a pure function of (seed, element index), and `seed` is an int64 *input*, so the trainer
// feeds a new seed every step: masks differ per step and are reproducible (resume, determinism), whatever the
// thread count. mask holds the factor applied to each element (0 or 1/(1-rate)), so dX = dY * mask.
#include "ops/defs/train/train_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using train_ops::CounterUniform;

Status SeededDropoutInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("X must be a float type, got ", DTypeName(t));
  const DType s = ctx.input_dtype(1);
  if (s != DType::kUndefined && s != DType::kInt64) return ctx.Error("seed must be int64, got ", DTypeName(s));
  const float rate = ctx.node().GetFloat("rate", 0.5f);
  if (!(rate >= 0 && rate <= 1)) return ctx.Error("rate must be in [0, 1], got ", rate);
  ctx.SetOutput(0, t, ctx.input_shape(0));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, t, ctx.input_shape(0));
  return Status::OK();
}

Status SeededDropoutCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& seed_t = ctx.input(1);
  if (seed_t.dtype() != DType::kInt64 || seed_t.num_elements() != 1)
    return ctx.Error("seed must be an int64 scalar, got ", seed_t.TypeString());
  const uint64_t seed = static_cast<uint64_t>(seed_t.data<int64_t>()[0]) ^
                        static_cast<uint64_t>(ctx.node().GetInt("seed_salt", 0)) * 0x9E3779B97F4A7C15ULL;
  const double rate = ctx.node().GetFloat("rate", 0.5f);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  Tensor* mask = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(mask, ctx.Output(1, x.dtype(), x.shape()));
  }
  const int64_t n = x.num_elements();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const C scale = rate >= 1 ? C(0) : static_cast<C>(1.0 / (1.0 - rate));
    const T* in = x.data<T>();
    T* out = y->data<T>();
    T* m = mask ? mask->data<T>() : nullptr;
    train_ops::ParallelElements(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const bool keep = rate <= 0 || (rate < 1 && CounterUniform(seed, static_cast<uint64_t>(i)) >= rate);
        const C f = keep ? scale : C(0);
        out[i] = T(C(ToCompute(in[i]) * f));
        if (m) m[i] = T(f);
      }
    });
    return Status::OK();
  });
}

// dX = dY * mask. The mask output must be named (the nn layer always names it).
Status SeededDropoutGrad(GradContext& ctx) {
  if (!ctx.needs_input_grad(0)) return Status::OK();
  const std::string& mask = ctx.node().outputs.size() > 1 ? ctx.node().outputs[1] : std::string();
  if (mask.empty()) return UnimplementedError("SeededDropout gradient needs the mask output to be named");
  ctx.SetInputGrad(0, Emit1(ctx, "Mul", {ctx.output_grad(0), mask}));
  return Status::OK();
}

}  // namespace

void RegisterSeededDropout(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "SeededDropout";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.max_outputs = 2;
  s.infer = SeededDropoutInfer;
  s.reference = SeededDropoutCompute;
  s.grad = SeededDropoutGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
