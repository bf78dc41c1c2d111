// The run-time choice between the generic and avx512 variants of the hand-written kernels (src/ops/cpu/isa.h,
// dispatch.cc): the CPU query against /proc/cpuinfo, STRATA_CPU_ISA, and the fallback variant against the fast one on
// the same rows. (The ctest entry ops_cpu_generic also runs every cpu kernel row against the reference kernels with
// STRATA_CPU_ISA=generic.)
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ops/cpu/cpu_kernels.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::AttributeMap;
using ops::cpu::CpuIsa;

// The flags of the first processor in /proc/cpuinfo (what the kernel reports, independently of libgcc's CPUID query).
std::set<std::string> ProcCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// Restores the environment and the override after each test.
class CpuIsaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("STRATA_CPU_ISA");
    if (env != nullptr) saved_ = env;
  }
  void TearDown() override {
    ops::cpu::SetCpuIsaOverrideForTesting(std::nullopt);
    if (saved_)
      setenv("STRATA_CPU_ISA", saved_->c_str(), 1);
    else
      unsetenv("STRATA_CPU_ISA");
  }
  std::optional<std::string> saved_;
};

TEST_F(CpuIsaTest, CpuQueryAgreesWithProcCpuinfo) {
  const std::set<std::string> flags = ProcCpuFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  bool all = true;
  for (const char* f : {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma", "bmi1", "bmi2", "popcnt"})
    all = all && flags.count(f) > 0;
  EXPECT_EQ(ops::cpu::CpuSupportsAvx512(), all);
}

TEST_F(CpuIsaTest, EnvironmentSelectsTheVariant) {
  const bool avx512 = ops::cpu::CpuSupportsAvx512();
  unsetenv("STRATA_CPU_ISA");
  ASSERT_TRUE(ops::cpu::CpuIsaForPlans().ok());
  EXPECT_EQ(*ops::cpu::CpuIsaForPlans(), avx512 ? CpuIsa::kAvx512 : CpuIsa::kGeneric);
  setenv("STRATA_CPU_ISA", "auto", 1);
  EXPECT_EQ(*ops::cpu::CpuIsaForPlans(), avx512 ? CpuIsa::kAvx512 : CpuIsa::kGeneric);
  setenv("STRATA_CPU_ISA", "generic", 1);
  EXPECT_EQ(*ops::cpu::CpuIsaForPlans(), CpuIsa::kGeneric);
  setenv("STRATA_CPU_ISA", "avx512", 1);
  auto forced = ops::cpu::CpuIsaForPlans();
  if (avx512) {
    EXPECT_EQ(*forced, CpuIsa::kAvx512);
  } else {
    EXPECT_EQ(forced.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(forced.status().message().find("does not support AVX-512"), std::string::npos);
  }
  setenv("STRATA_CPU_ISA", "avx9000", 1);
  auto bad = ops::cpu::CpuIsaForPlans();
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'avx9000'; expected auto, generic or avx512"), std::string::npos)
      << bad.status().ToString();
  // A bad value fails kernel creation with that message rather than picking a variant silently.
  OpCase concat{.label = "concat",
                .op_type = "Concat",
                .attrs = {{"axis", AInt(0)}},
                .inputs = {RandomF({2, 3}, 1), RandomF({1, 3}, 2)},
                .kernel = "cpu"};
  auto run = RunNamedKernel(concat);
  if (run.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "a build without the cpu kernels";
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument) << run.status().ToString();
  // The test override wins over the environment.
  ops::cpu::SetCpuIsaOverrideForTesting(CpuIsa::kGeneric);
  EXPECT_EQ(*ops::cpu::CpuIsaForPlans(), CpuIsa::kGeneric);
  EXPECT_TRUE(RunNamedKernel(concat).ok());
}

// One row through both variants: the same outputs, bit for bit (`exact`) or to rounding where the avx512 variant's
// fused multiply-adds round once where the generic one rounds twice.
void CompareVariants(const OpCase& c, bool exact) {
  SCOPED_TRACE(c.label);
  ops::cpu::SetCpuIsaOverrideForTesting(CpuIsa::kGeneric);
  auto generic = RunNamedKernel(c);
  ops::cpu::SetCpuIsaOverrideForTesting(CpuIsa::kAvx512);
  auto fast = RunNamedKernel(c);
  ops::cpu::SetCpuIsaOverrideForTesting(std::nullopt);
  ASSERT_TRUE(generic.ok()) << generic.status().ToString();
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  ASSERT_EQ(generic->size(), fast->size());
  for (size_t i = 0; i < fast->size(); ++i) {
    EXPECT_EQ(CompareTensors((*generic)[i], (*fast)[i], exact ? 0 : 1e-5, exact ? 0 : 1e-5), "") << "output " << i;
  }
}

OpCase Wrapped(std::string label, const char* op, const char* domain, std::vector<Tensor> inputs, AttributeMap attrs) {
  return ChannelsLastCase(std::move(label), op, domain, std::move(inputs), std::move(attrs), "cpu");
}

TEST_F(CpuIsaTest, GenericVariantMatchesAvx512) {
  if (!ops::cpu::CpuSupportsAvx512()) GTEST_SKIP() << "this CPU runs the generic variant only";
  OpCase probe{.op_type = "Concat", .attrs = {{"axis", AInt(0)}}, .inputs = {RandomF({1}, 1)}, .kernel = "cpu"};
  if (RunNamedKernel(probe).status().code() == StatusCode::kNotFound) GTEST_SKIP() << "no cpu kernels in this build";

  // Concat: plain copies, and 8 MiB of channels-last rows (streaming stores where a chunk is whole cache lines).
  CompareVariants({.label = "concat, axis 3, streamed",
                   .op_type = "Concat",
                   .attrs = {{"axis", AInt(3)}},
                   .inputs = {RandomF({4, 64, 64, 64}, 42), RandomF({4, 64, 64, 44}, 43), RandomF({4, 64, 64, 20}, 44)},
                   .kernel = "cpu"},
                  true);
  // MaxPool: four-vector groups, single vectors and a scalar tail (80 = 64 + 16; 20 = 16 + 4), NaN windows.
  Tensor x = RandomF({2, 9, 10, 80}, 50);
  x.mutable_values<float>().data()[7] = std::nanf("");
  const AttributeMap k3 = {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}};
  CompareVariants(Wrapped("maxpool 3x3/2 ceil, 80 channels", "MaxPool", "", {x}, k3), true);
  CompareVariants(Wrapped("maxpool, 20 channels", "MaxPool", "", {RandomF({2, 9, 10, 20}, 51)}, k3), true);
  // ConvMaxPool: the Fashion-MNIST CNN's first layer with Relu.
  CompareVariants(Wrapped("conv 3x3 relu, pool 2x2/2", "ConvMaxPool", "strata",
                          {RandomF({3, 28, 28, 1}, 1), RandomF({32, 1, 3, 3}, 2, -0.5f, 0.5f), RandomF({32}, 3)},
                          {{"activation", AString("Relu")},
                           {"pool_kernel_shape", AInts({2, 2})},
                           {"pool_strides", AInts({2, 2})}}),
                  false);
  // Depthwise: Relu6 (Clip) in registers; a 16 MiB output (streaming stores).
  AttributeMap relu6 = {{"activation", AString("Clip")},
                        {"activation_alpha", AFloat(0.0f)},
                        {"activation_beta", AFloat(6.0f)},
                        {"pads", AInts({1, 1, 1, 1})},
                        {"group", AInt(128)}};
  CompareVariants(Wrapped("depthwise 3x3 relu6, streamed", "FusedConv", "strata",
                          {RandomF({2, 128, 128, 128}, 79, -4, 8), RandomF({128, 1, 3, 3}, 78), RandomF({128}, 77)},
                          relu6),
                  false);
  // Pointwise: 32 -> 16 channels; 64 -> 10 (a partial vector: masked loads and stores) with a residual; a 16 MiB
  // output of whole vectors (streaming stores).
  CompareVariants(Wrapped("pointwise 32 -> 16", "Conv", "",
                          {RandomF({6, 112, 112, 32}, 110), RandomF({16, 32, 1, 1}, 111), RandomF({16}, 112)}, {}),
                  false);
  CompareVariants(Wrapped("pointwise 64 -> 10, residual", "FusedConv", "strata",
                          {RandomF({3, 150, 161, 64}, 115), RandomF({10, 64, 1, 1}, 116), RandomF({10}, 117),
                           RandomF({3, 150, 161, 10}, 118)},
                          {{"activation", AString("Relu")}, {"nhwc_inputs", AInts({0, 3})}}),
                  false);
  CompareVariants(Wrapped("pointwise 32 -> 32, streamed", "Conv", "",
                          {RandomF({8, 128, 128, 32}, 123), RandomF({32, 32, 1, 1}, 124), RandomF({32}, 125)}, {}),
                  false);
  // QuantizeLinear: a length that leaves a scalar tail after the 16-lane loop, out-of-range values (saturation), NaN,
  // halves (round to even), both output types.
  Tensor q = RandomF({100003}, 60, -40.0f, 40.0f);
  float* pq = q.mutable_values<float>().data();
  pq[3] = std::nanf(""), pq[5] = 1e9f, pq[9] = -1e9f, pq[17] = 0.25f, pq[18] = 0.75f;
  for (DType zp_type : {DType::kUInt8, DType::kInt8}) {
    Tensor zp = Cast(F({zp_type == DType::kUInt8 ? 100.0f : -3.0f}, {}), zp_type);
    CompareVariants({.label = std::string("quantize to ") + (zp_type == DType::kUInt8 ? "uint8" : "int8"),
                     .op_type = "QuantizeLinear",
                     .inputs = {q, F({0.1f}, {}), zp},
                     .constant_inputs = {1, 2},
                     .kernel = "cpu"},
                    true);
  }
}

}  // namespace
}  // namespace strata::testing
