// GRU (opset 7, 14): gates z (update), r (reset), h (hidden candidate), W/R/B rows in that order, activations f
// (gates) and g (candidate), Sigmoid/Tanh by default:
//   z = f(Xz + H Rz + Wbz + Rbz)     r = f(Xr + H Rr + Wbr + Rbr)
//   h = g(Xh + (r (.) H) Rh + Rbh + Wbh)          (linear_before_reset = 0)
//   h = g(Xh + r (.) (H Rh + Rbh) + Wbh)          (linear_before_reset = 1)
//   H' = (1 - z) (.) h + z (.) H
// clip applies to each gate's pre-activation. Directions, sequence_lens, initial_h and layout as in RNN
// (see rnn_util.h). float16/bfloat16 compute in float32.
#include "ops/defs/rnn/rnn_util.h"

namespace strata::ops {
namespace {

const std::vector<std::string> kGruActs = {"Sigmoid", "Tanh"};

Status GruInfer(InferContext& ctx) { return rnn::InferRnn(ctx, 3, kGruActs); }

template <typename C>
Status RunGru(KernelContext& ctx, const rnn::RnnAttrs& a) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnData<C> d, rnn::ReadInputs<C>(ctx, a, 3));
  const int64_t H = d.hidden, B = d.batch, S = d.seq, G = 3 * H;
  std::vector<C> y(static_cast<size_t>(S * a.dirs * B * H), C(0)), yh(static_cast<size_t>(a.dirs * B * H));
  std::vector<C> xw, bias(G), g(B * G), hr(B * H), rh(B * H);
  for (int dir = 0; dir < a.dirs; ++dir) {
    const C* wb = d.b.data() + dir * 2 * G;
    const C* rb = wb + G;
    // z and r take both biases up front; h takes Wbh only (Rbh sits inside the reset product when linear_before_reset).
    for (int64_t j = 0; j < 2 * H; ++j) bias[j] = wb[j] + rb[j];
    for (int64_t j = 2 * H; j < G; ++j) bias[j] = wb[j];
    rnn::InputProjection(d, dir, 3, bias, &xw);
    const rnn::Activation& fa = a.acts[dir * 2];
    const rnn::Activation& ga = a.acts[dir * 2 + 1];
    C* h = yh.data() + dir * B * H;
    std::copy_n(d.h0.begin() + dir * B * H, B * H, h);
    const bool reverse = a.reverse || dir == 1;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = reverse ? S - 1 - s : s;
      std::copy_n(xw.begin() + t * B * G, B * G, g.begin());
      rnn::AddRecurrent(d, dir, 3, 0, 2 * H, h, g.data(), G);
      for (int64_t b = 0; b < B; ++b) {
        C* zr = g.data() + b * G;
        rnn::Clip(a, zr, 2 * H);
        rnn::Activate(fa, zr, 2 * H);
      }
      // hr = (linear_before_reset ? H : r (.) H) Rh^T + Rbh
      for (int64_t b = 0; b < B; ++b) {
        std::copy_n(rb + 2 * H, H, hr.begin() + b * H);
        const C* r = g.data() + b * G + H;
        for (int64_t j = 0; j < H; ++j) rh[b * H + j] = a.linear_before_reset ? h[b * H + j] : r[j] * h[b * H + j];
      }
      rnn::AddRecurrent(d, dir, 3, 2 * H, H, rh.data(), hr.data(), H);
      for (int64_t b = 0; b < B; ++b) {
        C* gz = g.data() + b * G;
        C* gr = gz + H;
        C* gh = gz + 2 * H;
        for (int64_t j = 0; j < H; ++j) gh[j] += a.linear_before_reset ? gr[j] * hr[b * H + j] : hr[b * H + j];
        rnn::Clip(a, gh, H);
        rnn::Activate(ga, gh, H);
        if (t >= d.lens[b]) continue;  // past this sequence's end: state unchanged, Y stays zero
        C* hb = h + b * H;
        for (int64_t j = 0; j < H; ++j) hb[j] = (C(1) - gz[j]) * gh[j] + gz[j] * hb[j];
        std::copy_n(hb, H, y.begin() + ((t * a.dirs + dir) * B + b) * H);
      }
    }
  }
  return rnn::WriteOutputs(ctx, a, d, y, {&yh});
}

Status GruCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnAttrs a, rnn::ReadAttrs(ctx.node(), kGruActs));
  return rnn::DispatchRnn(ctx.input(0).dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return RunGru<C>(ctx, a);
  });
}

}  // namespace

void RegisterGRU(OpRegistry* r) {
  OpSchema s;
  s.name = "GRU";
  s.since_version = 7;
  s.min_inputs = 3;
  s.max_inputs = 6;
  s.min_outputs = 0;
  s.max_outputs = 2;
  s.infer = GruInfer;
  s.reference = GruCompute;
  s.no_grad_reason = "recurrent ops have no gradient yet (the training stratum unrolls them)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
