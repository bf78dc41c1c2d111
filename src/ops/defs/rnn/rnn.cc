// RNN (opset 7, 14): the simple recurrent cell H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), f = Tanh by default.
// Directions forward/reverse/bidirectional, per-direction activations (with activation_alpha/beta), clip on the
// pre-activation, sequence_lens (steps past a sequence's end leave the state unchanged and give zeros in Y), optional
// initial_h, and layout (opset 14: batch-major X, Y, initial_h and Y_h). float16/bfloat16 compute in float32.
#include "ops/defs/rnn/rnn_util.h"

namespace strata::ops {
namespace {

const std::vector<std::string> kRnnActs = {"Tanh"};

Status RnnInfer(InferContext& ctx) { return rnn::InferRnn(ctx, 1, kRnnActs); }

template <typename C>
Status RunRnn(KernelContext& ctx, const rnn::RnnAttrs& a) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnData<C> d, rnn::ReadInputs<C>(ctx, a, 1));
  const int64_t H = d.hidden, B = d.batch, S = d.seq;
  std::vector<C> y(static_cast<size_t>(S * a.dirs * B * H), C(0)), yh(static_cast<size_t>(a.dirs * B * H));
  std::vector<C> xw, bias(H), g(B * H);
  for (int dir = 0; dir < a.dirs; ++dir) {
    for (int64_t j = 0; j < H; ++j) bias[j] = d.b[dir * 2 * H + j] + d.b[dir * 2 * H + H + j];
    rnn::InputProjection(d, dir, 1, bias, &xw);
    C* h = yh.data() + dir * B * H;
    std::copy_n(d.h0.begin() + dir * B * H, B * H, h);
    const bool reverse = a.reverse || dir == 1;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = reverse ? S - 1 - s : s;
      std::copy_n(xw.begin() + t * B * H, B * H, g.begin());
      rnn::AddRecurrent(d, dir, 1, 0, H, h, g.data(), H);
      rnn::Clip(a, g.data(), B * H);
      rnn::Activate(a.acts[dir], g.data(), B * H);
      for (int64_t b = 0; b < B; ++b) {
        if (t >= d.lens[b]) continue;  // past this sequence's end: state unchanged, Y stays zero
        std::copy_n(g.begin() + b * H, H, h + b * H);
        std::copy_n(g.begin() + b * H, H, y.begin() + ((t * a.dirs + dir) * B + b) * H);
      }
    }
  }
  return rnn::WriteOutputs(ctx, a, d, y, {&yh});
}

Status RnnCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnAttrs a, rnn::ReadAttrs(ctx.node(), kRnnActs));
  return rnn::DispatchRnn(ctx.input(0).dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return RunRnn<C>(ctx, a);
  });
}

}  // namespace

void RegisterRNN(OpRegistry* r) {
  OpSchema s;
  s.name = "RNN";
  s.since_version = 7;
  s.min_inputs = 3;
  s.max_inputs = 6;
  s.min_outputs = 0;
  s.max_outputs = 2;
  s.infer = RnnInfer;
  s.reference = RnnCompute;
  s.no_grad_reason = "recurrent ops have no gradient yet (the training stratum unrolls them)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
