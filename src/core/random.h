// A small, fast, reproducible random generator (PCG-XSH-RR 64/32) whose whole state can be saved in a checkpoint.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x853c49e6748fea9bULL, uint64_t stream = 0xda3e39cb94b95bdbULL) { Seed(seed, stream); }
  void Seed(uint64_t seed, uint64_t stream = 0xda3e39cb94b95bdbULL);

  uint32_t NextU32();
  uint64_t NextU64() { return (static_cast<uint64_t>(NextU32()) << 32) | NextU32(); }
  // Uniform in [0, 1).
  float Uniform() { return static_cast<float>(NextU32() >> 8) * (1.0f / 16777216.0f); }
  double UniformDouble() { return static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n), unbiased.
  uint64_t Below(uint64_t n);
  // Standard normal (Box-Muller; no cached second value, so the state is just the two words below).
  float Normal();

  uint64_t state() const { return state_; }
  uint64_t inc() const { return inc_; }
  void Restore(uint64_t state, uint64_t inc) {
    state_ = state;
    inc_ = inc;
  }

 private:
  uint64_t state_ = 0;
  uint64_t inc_ = 0;
};

}  // namespace strata
