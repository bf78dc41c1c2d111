// LSTM (opset 7, 14): gates i, o, f, c (W/R/B rows in that order), activations f (gates), g (cell candidate) and
// h (output), Sigmoid/Tanh/Tanh by default:
//   i = f(Xi + H Ri + Wbi + Rbi + Pi (.) C)      f = f(Xf + H Rf + Wbf + Rbf + Pf (.) C)   (f = 1 - i with input_forget)
//   c = g(Xc + H Rc + Wbc + Rbc)                 C' = f (.) C + i (.) c
//   o = f(Xo + H Ro + Wbo + Rbo + Po (.) C')     H' = o (.) h(C')
// clip applies to each gate's pre-activation. Peepholes P [dirs, 3*hidden] hold Pi, Po, Pf. Directions, sequence_lens,
// initial_h/initial_c and layout as in RNN (see rnn_util.h). float16/bfloat16 compute in float32.
#include "ops/defs/rnn/rnn_util.h"

namespace strata::ops {
namespace {

const std::vector<std::string> kLstmActs = {"Sigmoid", "Tanh", "Tanh"};

Status LstmInfer(InferContext& ctx) { return rnn::InferRnn(ctx, 4, kLstmActs); }

// One step for batch row b: `g` holds the 4*H pre-activations (i, o, f, c), `h`/`c` the state, updated in place.
template <typename C>
void LstmCell(const rnn::RnnAttrs& a, int dir, int64_t H, const C* p, C* g, C* h, C* c, C* tmp) {
  const rnn::Activation& fa = a.acts[dir * 3];
  const rnn::Activation& ga = a.acts[dir * 3 + 1];
  const rnn::Activation& ha = a.acts[dir * 3 + 2];
  C* gi = g;
  C* go = g + H;
  C* gf = g + 2 * H;
  C* gc = g + 3 * H;
  for (int64_t j = 0; j < H; ++j) gi[j] += p[j] * c[j];
  rnn::Clip(a, gi, H);
  rnn::Activate(fa, gi, H);
  if (a.input_forget) {
    for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
  } else {
    for (int64_t j = 0; j < H; ++j) gf[j] += p[2 * H + j] * c[j];
    rnn::Clip(a, gf, H);
    rnn::Activate(fa, gf, H);
  }
  rnn::Clip(a, gc, H);
  rnn::Activate(ga, gc, H);
  for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
  for (int64_t j = 0; j < H; ++j) go[j] += p[H + j] * c[j];
  rnn::Clip(a, go, H);
  rnn::Activate(fa, go, H);
  std::copy_n(c, H, tmp);
  rnn::Activate(ha, tmp, H);
  for (int64_t j = 0; j < H; ++j) h[j] = go[j] * tmp[j];
}

template <typename C>
Status RunLstm(KernelContext& ctx, const rnn::RnnAttrs& a) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnData<C> d, rnn::ReadInputs<C>(ctx, a, 4));
  const int64_t H = d.hidden, B = d.batch, S = d.seq, G = 4 * H;
  std::vector<C> y(static_cast<size_t>(S * a.dirs * B * H), C(0));
  std::vector<C> yh(static_cast<size_t>(a.dirs * B * H)), yc(yh.size());
  std::vector<C> xw, bias(G), g(B * G), tmp(H);
  for (int dir = 0; dir < a.dirs; ++dir) {
    for (int64_t j = 0; j < G; ++j) bias[j] = d.b[dir * 2 * G + j] + d.b[dir * 2 * G + G + j];
    rnn::InputProjection(d, dir, 4, bias, &xw);
    C* h = yh.data() + dir * B * H;
    C* c = yc.data() + dir * B * H;
    std::copy_n(d.h0.begin() + dir * B * H, B * H, h);
    std::copy_n(d.c0.begin() + dir * B * H, B * H, c);
    const C* p = d.p.data() + dir * 3 * H;
    const bool reverse = a.reverse || dir == 1;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = reverse ? S - 1 - s : s;
      std::copy_n(xw.begin() + t * B * G, B * G, g.begin());
      rnn::AddRecurrent(d, dir, 4, 0, G, h, g.data(), G);
      for (int64_t b = 0; b < B; ++b) {
        if (t >= d.lens[b]) continue;  // past this sequence's end: state unchanged, Y stays zero
        LstmCell(a, dir, H, p, g.data() + b * G, h + b * H, c + b * H, tmp.data());
        std::copy_n(h + b * H, H, y.begin() + ((t * a.dirs + dir) * B + b) * H);
      }
    }
  }
  return rnn::WriteOutputs(ctx, a, d, y, {&yh, &yc});
}

Status LstmCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(rnn::RnnAttrs a, rnn::ReadAttrs(ctx.node(), kLstmActs));
  return rnn::DispatchRnn(ctx.input(0).dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return RunLstm<C>(ctx, a);
  });
}

}  // namespace

void RegisterLSTM(OpRegistry* r) {
  OpSchema s;
  s.name = "LSTM";
  s.since_version = 7;
  s.min_inputs = 3;
  s.max_inputs = 8;
  s.min_outputs = 0;
  s.max_outputs = 3;
  s.infer = LstmInfer;
  s.reference = LstmCompute;
  s.no_grad_reason = "recurrent ops have no gradient yet (the training stratum unrolls them)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
