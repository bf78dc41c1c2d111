// The run-time choice between the two variants of the hand-written kernels (isa.h): each factory of cpu_kernels.h
// asks CpuIsaForPlans() and calls that variant's factory, so one binary built for baseline x86-64 still runs the
// AVX-512 code on CPUs that have it, and never on CPUs that do not.
#include <atomic>
#include <cstdlib>
#include <string>

#include "ops/cpu/cpu_kernels.h"

namespace strata::ops::cpu {
namespace {

// -1: no override; else a CpuIsa.
std::atomic<int> isa_override{-1};

}  // namespace

std::string_view CpuIsaName(CpuIsa isa) { return isa == CpuIsa::kAvx512 ? "avx512" : "generic"; }

bool CpuSupportsAvx512() {
  // libgcc's checks include the OS's (XCR0): the AVX-512 register state must be enabled, not only the CPUID bits.
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
  }();
  return supported;
}

StatusOr<CpuIsa> CpuIsaForPlans() {
  const int forced = isa_override.load(std::memory_order_relaxed);
  if (forced >= 0) {
    const CpuIsa isa = static_cast<CpuIsa>(forced);
    if (isa == CpuIsa::kAvx512 && !CpuSupportsAvx512())
      return InvalidArgumentError("the avx512 kernel variant was forced, but this CPU does not support AVX-512");
    return isa;
  }
  const char* env = std::getenv("STRATA_CPU_ISA");
  const std::string want = env == nullptr ? "" : env;
  if (want.empty() || want == "auto") return CpuSupportsAvx512() ? CpuIsa::kAvx512 : CpuIsa::kGeneric;
  if (want == "generic") return CpuIsa::kGeneric;
  if (want == "avx512") {
    if (!CpuSupportsAvx512())
      return InvalidArgumentError("STRATA_CPU_ISA=avx512, but this CPU does not support AVX-512 (F, BW, DQ, VL); ",
                                  "unset it or use STRATA_CPU_ISA=generic");
    return CpuIsa::kAvx512;
  }
  return InvalidArgumentError("STRATA_CPU_ISA is '", want, "'; expected auto, generic or avx512");
}

void SetCpuIsaOverrideForTesting(std::optional<CpuIsa> isa) {
  isa_override.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTraining(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateBatchNormTraining(init) : generic::CreateBatchNormTraining(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTrainingGrad(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateBatchNormTrainingGrad(init)
                                : generic::CreateBatchNormTrainingGrad(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTraining(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastBatchNormTraining(init)
                                : generic::CreateChannelsLastBatchNormTraining(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTrainingGrad(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastBatchNormTrainingGrad(init)
                                : generic::CreateChannelsLastBatchNormTrainingGrad(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateConcat(init) : generic::CreateConcat(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastMaxPool(init) : generic::CreateChannelsLastMaxPool(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastGlobalAveragePool(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastGlobalAveragePool(init)
                                : generic::CreateChannelsLastGlobalAveragePool(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConvMaxPool(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastConvMaxPool(init)
                                : generic::CreateChannelsLastConvMaxPool(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConv(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastDepthwiseConv(init)
                                : generic::CreateChannelsLastDepthwiseConv(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConvBackwardFilter(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastDepthwiseConvBackwardFilter(init)
                                : generic::CreateChannelsLastDepthwiseConvBackwardFilter(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastFirstLayerConvBackwardFilter(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastFirstLayerConvBackwardFilter(init)
                                : generic::CreateChannelsLastFirstLayerConvBackwardFilter(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastPointwiseConv(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateChannelsLastPointwiseConv(init)
                                : generic::CreateChannelsLastPointwiseConv(init);
}

StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinear(const KernelInit& init) {
  STRATA_ASSIGN_OR_RETURN(CpuIsa isa, CpuIsaForPlans());
  return isa == CpuIsa::kAvx512 ? avx512::CreateQuantizeLinear(init) : generic::CreateQuantizeLinear(init);
}

}  // namespace strata::ops::cpu
