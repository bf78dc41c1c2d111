// A start-up probe of how fast this CPU runs bfloat16 compute against float32 (UseBf16 in dnnl_common.cc warns
// where bfloat16 is slower). avx512_bf16 does not make bfloat16 faster on every CPU: where its dot products issue at
// half the rate of float32 FMAs (measured on an Intel Xeon with no AMX exposed, 2 threads: 168 against 326 GFLOPS;
// an AMD EPYC ran 882 against 451), a model computing in bfloat16 runs slower than in float32.
#pragma once

#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::ops::onednn {

// GFLOPS of a oneDNN matmul M = N = K = 512 (the fastest of 5 runs after a warm-up, at the current thread count) with
// float32 sources and with bfloat16 sources (float32 output in both).
struct Bf16Probe {
  double f32_gflops = 0;
  double bf16_gflops = 0;
};
StatusOr<Bf16Probe> ProbeBf16Speed();

// The warning for a probe where bfloat16 ran slower than float32; "" where it ran at least as fast. `who` names what
// asked for bfloat16 (--precision bf16, mixed_bfloat16).
std::string Bf16SlowerWarning(const Bf16Probe& probe, std::string_view who);

}  // namespace strata::ops::onednn
