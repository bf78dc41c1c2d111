// Vectors of 16 float32 lanes for the hand-written channels-last kernels, loaded from and stored to float32 or
// bfloat16 memory (bfloat16 as uint16_t bit patterns: the upper half of a float32). GCC vector extensions, so that
// both variants (isa.h) compile them: one AVX-512 register in the avx512 variant, four SSE registers in the generic
// one.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {

// 16 floats; loads and stores through it need only float alignment.
typedef float V16 __attribute__((vector_size(64), aligned(4)));
inline constexpr int64_t kLanes = 16;

// bfloat16 values (uint16_t bit patterns, the upper half of a float32): 16 of them, and their widening.
typedef uint16_t V16h __attribute__((vector_size(32), aligned(2)));
typedef uint32_t V16u __attribute__((vector_size(64)));

// 16 values at p as float32 (bfloat16 widens exactly).
inline V16 LoadV16(const float* p) { return *reinterpret_cast<const V16*>(p); }
inline V16 LoadV16(const uint16_t* p) {
  return reinterpret_cast<V16>(__builtin_convertvector(*reinterpret_cast<const V16h*>(p), V16u) << 16);
}
// Stores 16 float32 values at p, as float32 or as bfloat16 rounded to nearest even (a NaN stays a NaN; exact for a
// value that is a bfloat16 already, such as the maximum of bfloat16 inputs).
inline void StoreV16(float* p, V16 v) { *reinterpret_cast<V16*>(p) = v; }
inline V16h RoundV16ToBf16(V16 v) {
  const V16u u = reinterpret_cast<V16u>(v);
  const V16u rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const V16u out = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded;
  return __builtin_convertvector(out, V16h);
}
inline void StoreV16(uint16_t* p, V16 v) { *reinterpret_cast<V16h*>(p) = RoundV16ToBf16(v); }
// Scalar versions.
inline float LoadScalar(const float* p) { return *p; }
inline float LoadScalar(const uint16_t* p) {
  const uint32_t u = static_cast<uint32_t>(*p) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
inline void StoreScalar(float* p, float v) { *p = v; }
inline void StoreScalar(uint16_t* p, float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  *p = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
