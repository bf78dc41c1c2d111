#include "ops/dnnl/winograd.h"

#include "core/logging.h"

namespace strata::ops::onednn {

// Least input and output channels for Winograd to pay, measured on 3x3 stride-1 layers with the channels-last
// reorders counted (docs/engine.md, "Winograd"): 64 -> 64 and up gained 12-60%; 32 -> 32 and 16 -> 16 lost 10-35%
// in the forward pass with 2 threads, 3 -> 64 (a first layer) was 4x slower.
constexpr int64_t kWinogradMinChannels = 64;
// Below 64 input channels (down to 32), 64 output channels pay once there are enough 4x4 output tiles
// (bench/conv_winograd_bench: forward, backward data and backward weights together took 0.52-0.67 of the direct
// kernels' time at 1 thread for 32 -> 64 with 576 to 6272 tiles, e.g. the Fashion CNN's second layer at 13x13, batch
// 64), but not at batch 1: that layer's inference at batch 1 (9 tiles) took 1.0 ms with Winograd against 0.37 direct
// for the whole model, while batch 32 (288 tiles) took 2.10 against 2.29 ms.
constexpr int64_t kWinogradMinInputChannelsWithTiles = 32;
constexpr int64_t kWinogradMinTiles = 256;

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
  if (w[0] < kWinogradMinChannels || x[1] < kWinogradMinInputChannelsWithTiles)
    return StrCat("C ", x[1], " and M ", w[0], ": Winograd pays from ", kWinogradMinChannels,
                  " channels on both sides (", kWinogradMinInputChannelsWithTiles,
                  " input channels with enough tiles)");
  if (x[1] < kWinogradMinChannels) {
    // Output tiles of 4x4 over the batch (the output's size from X, the pads and the 3x3 kernel at stride 1).
    int64_t tiles = x[0];
    for (int i = 0; i < 2; ++i) {
      const int64_t out = x[2 + i] + win.pad_l[i] + win.pad_r[i] - 2;
      tiles *= out > 0 ? (out + 3) / 4 : 0;
    }
    if (tiles < kWinogradMinTiles)
      return StrCat("C ", x[1], " (under ", kWinogradMinChannels, ") with ", tiles,
                    " output tiles of 4x4: Winograd pays there from ", kWinogradMinTiles, " tiles");
  }
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
