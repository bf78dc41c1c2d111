// The reference MaxPool's maximum over a window, channels-last: per channel, the first non-NaN value, then strictly
// greater ones; NaN when every value is NaN; -inf for a window without values (all padding). Computed as
// max(-inf, values...) with ties keeping the earlier value, plus a mask of channels that saw a number; vectorised
// across the channels, which are contiguous; float32 or bfloat16 values (the maximum is taken in float32). Shared
// by the hand-written channels-last kernels, in their variant (isa.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/cpu/vec16.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {

// y[0 .. lanes) = the window maximum of NV vectors of channels at taps[t] + offset, t < ntaps (NV * 16 readable
// values there); lanes may be less than NV * 16 (the rest is not written). In and Out: float (float32) or uint16_t
// (bfloat16); the maximum is taken in float32, so with bfloat16 X it is exact, and with float32 X and bfloat16 Y it
// is the float32 maximum rounded (rounding is monotonic: the same as the maximum of the rounded values).
template <int NV, typename In = float, typename Out = float>
inline void MaxOverTaps(const In* const* taps, int64_t ntaps, int64_t offset, Out* y, int64_t lanes) {
  typedef int32_t V16i __attribute__((vector_size(64)));
  V16 best[NV];
  V16i seen[NV];
  const V16 minus_inf = V16{} - std::numeric_limits<float>::infinity();
#pragma GCC unroll 16
  for (int b = 0; b < NV; ++b) best[b] = minus_inf, seen[b] = V16i{};
  for (int64_t t = 0; t < ntaps; ++t) {
    const In* at = taps[t] + offset;
#pragma GCC unroll 16
    for (int b = 0; b < NV; ++b) {
      const V16 val = LoadV16(at + b * kLanes);
      best[b] = val > best[b] ? val : best[b];
      seen[b] |= val == val;
    }
  }
  // No taps: -inf (the reference's starting value); taps but no number: NaN.
  const V16 none = ntaps == 0 ? minus_inf : V16{} + std::numeric_limits<float>::quiet_NaN();
#pragma GCC unroll 16
  for (int b = 0; b < NV; ++b) {
    const V16 out = seen[b] != 0 ? best[b] : none;
    const int64_t n = lanes - b * kLanes < kLanes ? lanes - b * kLanes : kLanes;
    if (n == kLanes) {
      StoreV16(y + b * kLanes, out);
    } else if (n > 0) {
      Out tmp[kLanes];
      StoreV16(tmp, out);
      std::memcpy(y + b * kLanes, tmp, sizeof(Out) * static_cast<size_t>(n));
    }
  }
}

// The same for channels [offset, offset + lanes), one at a time (the tail of a row that is not a whole vector).
template <typename In = float, typename Out = float>
inline void MaxOverTapsScalar(const In* const* taps, int64_t ntaps, int64_t offset, Out* y, int64_t lanes) {
  for (int64_t k = 0; k < lanes; ++k) {
    float best = -std::numeric_limits<float>::infinity();
    bool seen = false;
    for (int64_t t = 0; t < ntaps; ++t) {
      const float v = LoadScalar(taps[t] + offset + k);
      best = v > best ? v : best;
      seen |= v == v;
    }
    StoreScalar(y + k, seen         ? best
                       : ntaps == 0 ? -std::numeric_limits<float>::infinity()
                                    : std::numeric_limits<float>::quiet_NaN());
  }
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
