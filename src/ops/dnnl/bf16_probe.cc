// ProbeBf16Speed: one float32 and one bfloat16 oneDNN matmul, timed; Bf16SlowerWarning: what UseBf16 says when the
// bfloat16 one was slower.
#include "ops/dnnl/bf16_probe.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "ops/dnnl/dnnl_common.h"

namespace strata::ops::onednn {
namespace {

// Seconds of the fastest of `runs` runs of a matmul M = N = K = n with sources of type `dt` and a float32 output.
StatusOr<double> FastestMatmulSeconds(dnnl::memory::data_type dt, dnnl::memory::dim n, int runs) {
  return Guard("bfloat16 speed probe", [&]() -> StatusOr<double> {
    const dnnl::engine& eng = CpuEngine();
    const Dims dims = {n, n};
    const Md a = PlainMd(dims, dt), b = PlainMd(dims, dt), c = PlainMd(dims);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
    dnnl::memory ma(a, eng), mb(b, eng), mc(c, eng);
    std::memset(ma.get_data_handle(), 0, a.get_size());
    std::memset(mb.get_data_handle(), 0, b.get_size());
    const dnnl::matmul prim(pd);
    dnnl::stream stream(eng);
    const std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    double best = 0;
    for (int r = -1; r < runs; ++r) {  // run -1: the warm-up
      const auto t0 = std::chrono::steady_clock::now();
      prim.execute(stream, args);
      stream.wait();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0 && (best == 0 || s < best)) best = s;
    }
    return best;
  });
}

}  // namespace

StatusOr<Bf16Probe> ProbeBf16Speed() {
  constexpr dnnl::memory::dim kN = 512;
  const double flops = 2.0 * kN * kN * kN;
  Bf16Probe p;
  STRATA_ASSIGN_OR_RETURN(double f32, FastestMatmulSeconds(dnnl::memory::data_type::f32, kN, 5));
  STRATA_ASSIGN_OR_RETURN(double bf16, FastestMatmulSeconds(dnnl::memory::data_type::bf16, kN, 5));
  p.f32_gflops = flops / f32 / 1e9;
  p.bf16_gflops = flops / bf16 / 1e9;
  return p;
}

std::string Bf16SlowerWarning(const Bf16Probe& probe, std::string_view who) {
  if (probe.bf16_gflops <= 0 || probe.f32_gflops <= 0 || probe.bf16_gflops >= probe.f32_gflops) return "";
  char rates[160];
  std::snprintf(rates, sizeof(rates), "%.0f GFLOPS against %.0f in float32 (%.2fx)", probe.bf16_gflops,
                probe.f32_gflops, probe.bf16_gflops / probe.f32_gflops);
  return StrCat(who, ": this CPU ran a bfloat16 matmul at ", rates,
                " in a 512x512x512 probe at start-up, so bfloat16 compute is likely to be slower than float32 here "
                "(its avx512_bf16 dot products are no faster than float32 FMAs on this core; oneDNN 2.6 has no AMX "
                "kernels). The results stay correct. STRATA_BF16_PROBE=0 skips the probe");
}

}  // namespace strata::ops::onednn
