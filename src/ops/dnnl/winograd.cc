#include "ops/dnnl/winograd.h"

#include "core/logging.h"

namespace strata::ops::onednn {

// Least input and output channels for Winograd to pay, measured on 3x3 stride-1 layers with the channels-last
// reorders counted (docs/engine.md, "Winograd"): 64 -> 64 and up gained 12-60%; 32 -> 32 and 16 -> 16 lost 10-35%
// in the forward pass with 2 threads, 3 -> 64 (a first layer) was 4x slower. From 32 input channels, 64 output
// channels pay in training (bench/conv_winograd_bench: forward, backward data and backward weights together took
// 0.52-0.67 of the direct kernels' time at 1 thread, e.g. the Fashion CNN's 32 -> 64 at 13x13, batch 64).
constexpr int64_t kWinogradMinInputChannels = 32;
constexpr int64_t kWinogradMinOutputChannels = 64;

std::string WinogradRejection(const KernelInit& init, const Shape& x, const Shape& w, const Window& win, int64_t group,
                              bool backward) {
  if (init.conv_algorithm == graph::ConvAlgorithm::kDirect) return "--conv_algorithm direct";
  if (x.rank() != 4) return StrCat("Winograd is 2-D only, X has rank ", x.rank());
  if (w[2] != 3 || w[3] != 3) return StrCat("Winograd is for 3x3 kernels, found ", w[2], "x", w[3]);
  for (int i = 0; i < 2; ++i) {
    if (win.strides[i] != 1) return "Winograd is for stride 1";
    if (win.dilations[i] != 0) return "Winograd is for undilated kernels";
  }
  if (backward && win.pad_l != win.pad_r) return "Winograd backward needs equal begin and end pads";
  if (group != 1) return StrCat("Winograd has no groups, found group ", group);
  if (x[1] < kWinogradMinInputChannels || w[0] < kWinogradMinOutputChannels)
    return StrCat("C ", x[1], " and M ", w[0], ": Winograd pays from ", kWinogradMinInputChannels, " input and ",
                  kWinogradMinOutputChannels, " output channels");
  return "";
}

std::string_view PreferredWinogradImpl(const Shape& x, const Shape& w, const Shape& y) {
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) return {};
  const int64_t transformed_weights = 36 * w[0] * w[1];  // F(4x4, 3x3): 6x6 transformed taps per channel pair
  if (transformed_weights > x.NumElements() + y.NumElements()) return {};
  return "jit_wino_4x3";
}

dnnl::prop_kind WinogradProp(bool constant_weights) {
  return constant_weights ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
}

void LogStaysDirect(const KernelInit& init, std::string_view why) {
  if (VerboseEnabled("dispatch")) LogInfo("dispatch: ", init.node.Describe(), ": stays direct: ", why);
}

}  // namespace strata::ops::onednn
