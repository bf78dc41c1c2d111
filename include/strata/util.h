// Small core utilities that library users need beside the data and nn APIs: the reproducible random generator that
// data::RandomMapFn and nn::Initializer::Make take (so a user's augmentation draws from the pipeline's streams), and
// shell-style globbing (how data::Dataset::ListFiles and ComputeManifest expand patterns).
//
//   Rng rng(/*seed=*/42);
//   float u = rng.Uniform(), z = rng.Normal();
//   auto shards = *Glob("/data/train-*.tfrecord");  // sorted
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/status.h"

namespace strata {

// A small, fast, reproducible random generator (PCG-XSH-RR 64/32) whose whole state is two words (state(), inc()),
// so it can be saved in a checkpoint and restored. The same seed and stream give the same numbers on every machine.
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

// Shell-style glob (*, ?, [..]) over the file system; the matching paths, sorted. A pattern that matches nothing
// gives an empty list (not an error); a failure of glob(3) itself is UNAVAILABLE naming the pattern.
StatusOr<std::vector<std::string>> Glob(const std::string& pattern);

}  // namespace strata
