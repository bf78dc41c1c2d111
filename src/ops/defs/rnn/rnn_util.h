// What RNN, LSTM and GRU share: attributes (direction, hidden_size, activations with their alpha/beta, clip, layout),
// shape inference, reading the inputs into the compute type in layout 0, and writing the outputs back.
//
// Internally everything is in layout 0 and the compute type C (float for float16/float32, double for float64):
//   X [seq, batch, input]; W [dirs, gates*hidden, input]; R [dirs, gates*hidden, hidden]; B [dirs, 2*gates*hidden];
//   initial_h / initial_c / Y_h / Y_c [dirs, batch, hidden]; Y [seq, dirs, batch, hidden].
// Layout 1 (opset 14) puts batch first: X [batch, seq, input], states [batch, dirs, hidden], Y [batch, seq, dirs, hidden].
#pragma once

#include <string>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops::rnn {

enum class ActKind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
                     kSoftsign, kSoftplus };

struct Activation {
  ActKind kind = ActKind::kTanh;
  float alpha = 0, beta = 0;
};

// Applies `a` to n values in place.
template <typename C>
void Activate(const Activation& a, C* x, int64_t n);

struct RnnAttrs {
  int64_t hidden = 0;
  int dirs = 1;           // 2 when bidirectional
  bool reverse = false;   // direction "reverse" (with dirs == 1)
  bool has_clip = false;
  float clip = 0;
  int layout = 0;
  std::vector<Activation> acts;  // per_dir activations for direction 0, then for direction 1
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
};

// Reads the attributes; `default_acts` are the per-direction defaults ("Sigmoid", "Tanh", ...).
StatusOr<RnnAttrs> ReadAttrs(const Node& node, const std::vector<std::string>& default_acts);

// Shape inference shared by the three ops (`gates` 1, 3 or 4): Y and the final states.
Status InferRnn(InferContext& ctx, int gates, const std::vector<std::string>& default_acts);

template <typename C>
struct RnnData {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  std::vector<C> x, w, r, b, h0, c0, p;  // see the header comment; b/h0/c0/p are zeros when omitted
  std::vector<int64_t> lens;             // per batch element, seq when sequence_lens is omitted
};

// Validates the inputs against each other and reads them. `gates`: 1 (RNN), 3 (GRU), 4 (LSTM); LSTM also reads
// initial_c (input 6) and P (input 7).
template <typename C>
StatusOr<RnnData<C>> ReadInputs(KernelContext& ctx, const RnnAttrs& a, int gates);

// Writes Y (from y [seq, dirs, batch, hidden]) and the final states (each [dirs, batch, hidden]) to outputs 0, 1, 2...
// in the input's dtype and the node's layout.
template <typename C>
Status WriteOutputs(KernelContext& ctx, const RnnAttrs& a, const RnnData<C>& d, const std::vector<C>& y,
                    const std::vector<const std::vector<C>*>& states);

// Clips n values to [-clip, clip] when the node has a clip attribute.
template <typename C>
inline void Clip(const RnnAttrs& a, C* x, int64_t n) {
  if (!a.has_clip) return;
  const C c = static_cast<C>(a.clip);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] < -c ? -c : (x[i] > c ? c : x[i]);
}

// xw[t, b, :] = X[t, b, :] W_dir^T + bias (gates*hidden values per row), for every step at once.
template <typename C>
void InputProjection(const RnnData<C>& d, int dir, int gates, const std::vector<C>& bias, std::vector<C>* xw);

// g[b, :] += h[b, :] R_rows^T, where R_rows are `rows` rows of R_dir starting at row `row0`; g has ldg columns.
template <typename C>
void AddRecurrent(const RnnData<C>& d, int dir, int gates, int64_t row0, int64_t rows, const C* h, C* g, int64_t ldg);

// Runs the dtype dispatch for an RNN op: fn(tag) with tag's type the compute type (float or double).
template <typename F>
Status DispatchRnn(DType t, F&& fn) {
  if (t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16) return fn(TypeTag<float>{});
  if (t == DType::kFloat64) return fn(TypeTag<double>{});
  return UnimplementedError("element type ", DTypeName(t), " is not supported (expected float16, float32 or float64)");
}

}  // namespace strata::ops::rnn
