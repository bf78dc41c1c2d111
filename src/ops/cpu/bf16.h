// bfloat16 activations in the hand-written kernels (Plan::StoreBf16): reading one widens it exactly to float32,
// writing one rounds to nearest even as oneDNN's f32 -> bf16 conversion does (a NaN stays a NaN). Inline and
// branch-free, so that the compiler vectorises the loops that use them. bfloat16 data is handled as uint16_t.
#pragma once

#include <cstdint>
#include <cstring>

#include "strata/tensor.h"

namespace strata::ops::cpu {

inline float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

// Element i of float32 or bfloat16 data, as float32; and the store back.
inline float LoadF(const float* p, int64_t i) { return p[i]; }
inline float LoadF(const uint16_t* p, int64_t i) { return Bf16ToFloat(p[i]); }
inline void StoreF(float* p, int64_t i, float v) { p[i] = v; }
inline void StoreF(uint16_t* p, int64_t i, float v) { p[i] = FloatToBf16(v); }

// Whether a value may be such data: float32 or bfloat16.
inline bool IsFloat32OrBf16(DType t) { return t == DType::kFloat32 || t == DType::kBFloat16; }

// `f` called with `p` as float32 or bfloat16 (uint16_t) data, by `t` (any type but bfloat16 is taken as float32).
template <typename F>
void WithFloatOrBf16(DType t, const void* p, F&& f) {
  if (t == DType::kBFloat16) {
    f(static_cast<const uint16_t*>(p));
  } else {
    f(static_cast<const float*>(p));
  }
}
template <typename F>
void WithFloatOrBf16(DType t, void* p, F&& f) {
  if (t == DType::kBFloat16) {
    f(static_cast<uint16_t*>(p));
  } else {
    f(static_cast<float*>(p));
  }
}

}  // namespace strata::ops::cpu
