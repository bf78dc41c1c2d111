#include "core/random.h"

#include <cmath>

namespace strata {

void Rng::Seed(uint64_t seed, uint64_t stream) {
  state_ = 0;
  inc_ = (stream << 1u) | 1u;
  NextU32();
  state_ += seed;
  NextU32();
}

uint32_t Rng::NextU32() {
  const uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  const uint32_t xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
  const uint32_t rot = static_cast<uint32_t>(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

uint64_t Rng::Below(uint64_t n) {
  if (n <= 1) return 0;
  if (n <= 0xffffffffULL) {
    const uint32_t bound = static_cast<uint32_t>(n);
    const uint32_t threshold = (-bound) % bound;
    for (;;) {
      const uint32_t r = NextU32();
      if (r >= threshold) return r % bound;
    }
  }
  const uint64_t threshold = (-n) % n;
  for (;;) {
    const uint64_t r = NextU64();
    if (r >= threshold) return r % n;
  }
}

float Rng::Normal() {
  double u1 = UniformDouble();
  const double u2 = UniformDouble();
  if (u1 < 1e-300) u1 = 1e-300;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace strata
