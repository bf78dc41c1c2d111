// The epilogue of the hand-written channels-last convolutions (depthwise_conv_nhwc.cc, pointwise_conv_nhwc.cc): a
// fused activation applied to a vector of 16 outputs in registers, and the store. Relu and Clip follow the
// reference's ApplyActivation exactly, NaN included (Clip keeps NaN, where oneDNN's fused Clip maps it to the bound);
// other activations (kOther) are left to the kernel, which runs ApplyActivation on its finished rows. Variant code
// (isa.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/max_window.h"
#include "ops/defs/fused/activation.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {

struct VecEpilogue {
  enum class Act { kNone, kRelu, kClip, kOther };
  Act act = Act::kNone;
  V16 lo = {}, hi = {};  // Clip's bounds
  bool stream = false;   // whole-vector stores go straight to memory (set per run by the kernel)
};

inline VecEpilogue EpilogueFor(const Activation& a) {
  VecEpilogue e;
  if (a.op == "Relu") {
    e.act = VecEpilogue::Act::kRelu;
  } else if (a.op == "Clip") {
    e.act = VecEpilogue::Act::kClip, e.lo = V16{} + a.alpha, e.hi = V16{} + a.beta;
  } else if (!a.op.empty()) {
    e.act = VecEpilogue::Act::kOther;
  }
  return e;
}

inline V16 Activate(V16 v, const VecEpilogue& e) {
  if (e.act == VecEpilogue::Act::kRelu) {
    const V16 zero = {};
    return v > zero ? v : zero;
  }
  if (e.act == VecEpilogue::Act::kClip) {
    // The reference's std::min(hi, std::max(lo, v)) for numbers (same operand order, so the same signed zeros), and
    // NaN kept.
    V16 m = e.lo < v ? v : e.lo;
    m = m < e.hi ? m : e.hi;
    return v != v ? v : m;
  }
  return v;
}

// Outputs from this size on are written with streaming stores: too large to stay in the last-level cache, they would
// otherwise be read from memory before each line is written.
inline constexpr int64_t kStreamOutputBytes = int64_t{16} << 20;

// Whether a run streams its whole-vector outputs: outputs of kStreamOutputBytes or more at a 64-byte aligned `y`, and
// no activation left to ApplyActivation (which reads the rows back right away).
inline bool StreamsOutput(const VecEpilogue& e, int64_t output_bytes, const void* y) {
  return e.act != VecEpilogue::Act::kOther && output_bytes >= kStreamOutputBytes &&
         reinterpret_cast<uintptr_t>(y) % 64 == 0;
}

// Stores one output vector: with a streaming store (the line is not read first and not kept in cache) when `stream`
// (y 64-byte aligned; AVX-512 builds only), a plain store otherwise. A kernel that streams ends each thread's work
// with _mm_sfence().
inline void StoreVector(float* y, V16 v, bool stream) {
#if STRATA_CPU_HAS_AVX512
  if (stream) {
    _mm512_stream_ps(y, reinterpret_cast<__m512>(v));
    return;
  }
#endif
  (void)stream;
  *reinterpret_cast<V16*>(y) = v;
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
