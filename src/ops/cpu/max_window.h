// The reference MaxPool's maximum over a window, channels-last: per channel, the first non-NaN value, then strictly
// greater ones; NaN when every value is NaN; -inf for a window without values (all padding). Computed as
// max(-inf, values...) with ties keeping the earlier value, plus a mask of channels that saw a number; vectorised
// across the channels, which are contiguous. Shared by the hand-written channels-last kernels, in their variant
// (isa.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {

// 16 floats; loads and stores through it need only float alignment.
typedef float V16 __attribute__((vector_size(64), aligned(4)));
inline constexpr int64_t kLanes = 16;

// y[0 .. lanes) = the window maximum of NV vectors of channels at taps[t] + offset, t < ntaps (NV * 16 readable
// floats there); lanes may be less than NV * 16 (the rest is not written).
template <int NV>
inline void MaxOverTaps(const float* const* taps, int64_t ntaps, int64_t offset, float* y, int64_t lanes) {
  typedef int32_t V16i __attribute__((vector_size(64)));
  V16 best[NV];
  V16i seen[NV];
  const V16 minus_inf = V16{} - std::numeric_limits<float>::infinity();
#pragma GCC unroll 16
  for (int b = 0; b < NV; ++b) best[b] = minus_inf, seen[b] = V16i{};
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* at = taps[t] + offset;
#pragma GCC unroll 16
    for (int b = 0; b < NV; ++b) {
      const V16 val = *reinterpret_cast<const V16*>(at + b * kLanes);
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
      *reinterpret_cast<V16*>(y + b * kLanes) = out;
    } else if (n > 0) {
      float tmp[kLanes];
      std::memcpy(tmp, &out, sizeof(tmp));
      std::memcpy(y + b * kLanes, tmp, sizeof(float) * static_cast<size_t>(n));
    }
  }
}

// The same for channels [offset, offset + lanes), one at a time (the tail of a row that is not a whole vector).
inline void MaxOverTapsScalar(const float* const* taps, int64_t ntaps, int64_t offset, float* y, int64_t lanes) {
  for (int64_t k = 0; k < lanes; ++k) {
    float best = -std::numeric_limits<float>::infinity();
    bool seen = false;
    for (int64_t t = 0; t < ntaps; ++t) {
      const float v = taps[t][offset + k];
      best = v > best ? v : best;
      seen |= v == v;
    }
    y[k] = seen ? best : ntaps == 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
