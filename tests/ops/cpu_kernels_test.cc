// The hand-written kernels of src/ops/cpu/ against the reference kernels (op harness): strata.ConvMaxPool, MaxPool,
// depthwise and 1x1 Conv run channels-last, Concat, and training-mode batch normalization (forward and gradient,
// also against float32 finite differences).
#include <cmath>
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::AttributeMap;

// A strata.ChannelsLast node wrapping `op` (of `domain`, "" for ONNX) for the "cpu" kernel, compared with the
// reference to 1e-4 relative, 1e-5 absolute.
OpCase ChannelsLastRow(std::string label, const char* op, const char* domain, std::vector<Tensor> inputs,
                       AttributeMap attrs) {
  OpCase c = ChannelsLastCase(std::move(label), op, domain, std::move(inputs), std::move(attrs), "cpu");
  c.rtol = 1e-4;
  c.atol = 1e-5;
  return c;
}

// strata.ChannelsLast wrapping strata.ConvMaxPool: X [N, H, W, C], W [M, C, KH, KW], B [M]; the pool's attributes
// prefixed `pool_`.
OpCase ConvPoolRow(std::string label, std::vector<Tensor> inputs, AttributeMap attrs) {
  return ChannelsLastRow(std::move(label), "ConvMaxPool", "strata", std::move(inputs), std::move(attrs));
}

AttributeMap Pool(std::vector<int64_t> k, std::vector<int64_t> s, AttributeMap more = {}) {
  more["pool_kernel_shape"] = AInts(std::move(k));
  more["pool_strides"] = AInts(std::move(s));
  return more;
}

TEST(CpuConvMaxPoolTest, MatchesConvThenPool) {
  // The Fashion-MNIST CNN's first layer: 1 channel, 3x3 valid, Relu, 2x2/2 pool; 32 output channels (two vectors).
  AttributeMap relu = Pool({2, 2}, {2, 2}, {{"activation", AString("Relu")}});
  RunOpCase(ConvPoolRow("gray 3x3 relu, pool 2x2/2",
                        {RandomF({3, 28, 28, 1}, 1), RandomF({32, 1, 3, 3}, 2, -0.5f, 0.5f), RandomF({32}, 3)}, relu));
  // squeezenet1_1's first layer: 3 channels, stride 2, 64 outputs (four vectors), pool 3x3/2 with ceil_mode (the
  // last window is clipped), no activation, no bias.
  RunOpCase(ConvPoolRow("rgb 3x3/2, pool 3x3/2 ceil",
                        {RandomF({2, 31, 29, 3}, 4), RandomF({64, 3, 3, 3}, 5, -0.3f, 0.3f)},
                        Pool({3, 3}, {2, 2}, {{"strides", AInts({2, 2})}, {"pool_ceil_mode", AInt(1)}})));
  // Padded convolution (windows over the border), output channels that are not whole vectors (20) and more than one
  // group of four vectors (80), a 5x5 kernel on one channel, non-square pools.
  RunOpCase(ConvPoolRow("pads, 20 channels",
                        {RandomF({2, 9, 11, 2}, 6), RandomF({20, 2, 3, 3}, 7, -0.5f, 0.5f), RandomF({20}, 8)},
                        Pool({2, 3}, {2, 3}, {{"pads", AInts({1, 1, 1, 1})}, {"activation", AString("Relu")}})));
  RunOpCase(ConvPoolRow("5x5, 80 channels, asymmetric pads",
                        {RandomF({1, 12, 10, 1}, 9), RandomF({80, 1, 5, 5}, 10, -0.3f, 0.3f), RandomF({80}, 11)},
                        Pool({3, 2}, {1, 2}, {{"pads", AInts({2, 0, 1, 2})}})));
  RunOpCase(ConvPoolRow("dilated, same_upper", {RandomF({2, 10, 10, 3}, 12), RandomF({16, 3, 3, 3}, 13, -0.3f, 0.3f)},
                        Pool({2, 2}, {2, 2}, {{"dilations", AInts({2, 2})}, {"auto_pad", AString("SAME_UPPER")}})));
  // Activations other than Relu go through ApplyActivation on the buffered rows.
  for (const char* act : {"Clip", "LeakyRelu", "Sigmoid"}) {
    AttributeMap a = Pool({2, 2}, {2, 2}, {{"activation", AString(act)}});
    if (std::string(act) == "Clip") a["activation_alpha"] = AFloat(-0.1f), a["activation_beta"] = AFloat(0.2f);
    RunOpCase(ConvPoolRow(std::string("activation ") + act,
                          {RandomF({2, 8, 8, 1}, 14), RandomF({16, 1, 3, 3}, 15), RandomF({16}, 16)}, a));
  }
}

// NaN in X: windows with some NaN outputs take the maximum of the others, windows of NaN only give NaN (the
// reference's rule). The convolution spreads one NaN of X to every output whose window covers it.
TEST(CpuConvMaxPoolTest, NaN) {
  Tensor x = RandomF({1, 10, 10, 1}, 20);
  float* p = x.mutable_values<float>().data();
  p[0] = std::nanf("");           // reaches convolution output (0, 0) only: the first pool window keeps 3 numbers
  p[5 * 10 + 5] = std::nanf("");  // covers outputs (3..5, 3..5): pool window (2, 2) becomes all NaN
  RunOpCase(ConvPoolRow("NaN, no activation", {x, RandomF({16, 1, 3, 3}, 21)}, Pool({2, 2}, {2, 2})));
  RunOpCase(ConvPoolRow("NaN through Relu", {x, RandomF({16, 1, 3, 3}, 21)},
                        Pool({2, 2}, {2, 2}, {{"activation", AString("Relu")}})));
}

TEST(CpuConvMaxPoolTest, DeclinesWhatItDoesNotCompute) {
  const AttributeMap pool = Pool({2, 2}, {2, 2});
  OpCase taps = ConvPoolRow("36 taps", {RandomF({1, 8, 8, 4}, 30), RandomF({8, 4, 3, 3}, 31)}, pool);
  taps.expect_decline = true;
  RunOpCase(taps);
  AttributeMap padded = pool;
  padded["pool_pads"] = AInts({1, 1, 1, 1});
  OpCase pp = ConvPoolRow("padded pool", {RandomF({1, 8, 8, 1}, 32), RandomF({8, 1, 3, 3}, 33)}, padded);
  pp.expect_decline = true;
  RunOpCase(pp);
  AttributeMap grouped = pool;
  grouped["group"] = AInt(2);
  OpCase gr = ConvPoolRow("grouped", {RandomF({1, 8, 8, 2}, 34), RandomF({8, 1, 3, 3}, 35)}, grouped);
  gr.expect_decline = true;
  RunOpCase(gr);
}

// strata.ChannelsLast wrapping MaxPool: X and Y [N, H, W, C].
OpCase PoolRow(std::string label, Tensor x, AttributeMap attrs) {
  return ChannelsLastRow(std::move(label), "MaxPool", "", {std::move(x)}, std::move(attrs));
}

TEST(CpuMaxPoolTest, MatchesTheReference) {
  const AttributeMap k2 = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}};
  const AttributeMap k3ceil = {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}};
  // Channel counts: whole groups of four vectors (64), a group and a vector (80), a vector and a scalar tail (20),
  // scalars only (3).
  for (int64_t c : {64, 80, 20, 3}) {
    RunOpCase(PoolRow("2x2/2, C " + std::to_string(c), RandomF({2, 9, 10, c}, 50 + c), k2));
    RunOpCase(PoolRow("3x3/2 ceil, C " + std::to_string(c), RandomF({2, 9, 10, c}, 60 + c), k3ceil));
  }
  RunOpCase(PoolRow("pads, dilation", RandomF({1, 11, 12, 16}, 70),
                    {{"kernel_shape", AInts({3, 2})},
                     {"pads", AInts({1, 0, 2, 1})},
                     {"dilations", AInts({2, 1})},
                     {"strides", AInts({1, 2})}}));
  RunOpCase(
      PoolRow("same_upper", RandomF({1, 7, 7, 24}, 71),
              {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"auto_pad", AString("SAME_UPPER")}}));
  // NaN: a window with some NaN takes the maximum of the rest; an all-NaN window gives NaN; ties keep the first.
  Tensor x = RandomF({1, 4, 4, 20}, 72);
  float* p = x.mutable_values<float>().data();
  for (int64_t i = 0; i < x.num_elements(); ++i) p[i] = std::round(p[i] * 2) / 2;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t w = 0; w < 2; ++w) p[(h * 4 + w) * 20 + 3] = p[(h * 4 + w) * 20 + 18] = std::nanf("");
  p[(2 * 4 + 2) * 20 + 5] = std::nanf("");
  RunOpCase(PoolRow("NaN", x, k2));
  OpCase indices = PoolRow("Indices declines", RandomF({1, 4, 4, 8}, 73), k2);
  indices.num_outputs = 2;
  indices.expect_decline = true;
  RunOpCase(indices);
}

// strata.ChannelsLast wrapping a depthwise Conv (group == C) or strata.FusedConv: X [N, H, W, C], W [C, 1, KH, KW].
// The kernel takes inputs of at least 8 MiB only (smaller ones stay with oneDNN), so every case here is that large.
OpCase DepthwiseRow(std::string label, std::vector<Tensor> inputs, AttributeMap attrs, bool fused = false) {
  attrs["group"] = AInt(inputs[0].shape()[3]);
  return ChannelsLastRow(std::move(label), fused ? "FusedConv" : "Conv", fused ? "strata" : "", std::move(inputs),
                         std::move(attrs));
}

AttributeMap Act(const char* op, float alpha = 0, float beta = 0) {
  AttributeMap a = {{"activation", AString(op)}};
  if (std::string(op) == "Clip") a["activation_alpha"] = AFloat(alpha), a["activation_beta"] = AFloat(beta);
  return a;
}

TEST(CpuDepthwiseConvTest, MatchesTheReference) {
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  // mobilenet_v2's shapes: 3x3, pad 1, stride 1 and 2, Relu6 (Clip 0..6) fused.
  AttributeMap relu6 = Act("Clip", 0.0f, 6.0f);
  relu6["pads"] = AInts({1, 1, 1, 1});
  RunOpCase(DepthwiseRow("3x3 s1 relu6, 96 channels",
                         {RandomF({3, 96, 100, 96}, 80, -4, 8), RandomF({96, 1, 3, 3}, 81), RandomF({96}, 82)}, relu6,
                         true));
  AttributeMap s2 = relu6;
  s2["strides"] = AInts({2, 2});
  RunOpCase(DepthwiseRow("3x3 s2 relu6, odd sizes",
                         {RandomF({3, 75, 67, 144}, 83, -4, 8), RandomF({144, 1, 3, 3}, 84), RandomF({144}, 85)}, s2,
                         true));
  // An output of 16 MiB: written with streaming stores.
  RunOpCase(DepthwiseRow("3x3 s1 relu6, streamed output",
                         {RandomF({2, 128, 128, 128}, 79, -4, 8), RandomF({128, 1, 3, 3}, 78), RandomF({128}, 77)},
                         relu6, true));
  // Plain Conv (no activation, no bias), and the other inline activation.
  RunOpCase(DepthwiseRow("3x3 s1, no bias", {RandomF({1, 120, 110, 160}, 86), RandomF({160, 1, 3, 3}, 87)}, pad1));
  AttributeMap relu = Act("Relu");
  relu["pads"] = AInts({0, 0, 0, 0});
  RunOpCase(DepthwiseRow("3x3 valid relu",
                         {RandomF({1, 128, 128, 128}, 88), RandomF({128, 1, 3, 3}, 89), RandomF({128}, 90)}, relu,
                         true));
  // The generic path: 5x5 with asymmetric pads, dilation, stride 1 x 2, and an activation applied by the reference's
  // ApplyActivation.
  AttributeMap odd = Act("LeakyRelu");
  odd["activation_alpha"] = AFloat(0.1f);
  odd["pads"] = AInts({2, 0, 1, 3});
  odd["strides"] = AInts({1, 2});
  RunOpCase(DepthwiseRow("5x5 asymmetric pads, stride 1x2",
                         {RandomF({1, 90, 130, 192}, 91), RandomF({192, 1, 5, 5}, 92), RandomF({192}, 93)}, odd, true));
  RunOpCase(DepthwiseRow("3x3 dilated, same_upper", {RandomF({1, 100, 100, 224}, 94), RandomF({224, 1, 3, 3}, 95)},
                         {{"dilations", AInts({2, 2})}, {"auto_pad", AString("SAME_UPPER")}}));
}

// NaN in X through a fused Clip stays NaN (the reference's rule; oneDNN's Clip maps it to the bound), and spreads to
// every output whose window covers it.
TEST(CpuDepthwiseConvTest, NaNThroughClip) {
  Tensor x = RandomF({1, 96, 96, 240}, 96);
  float* p = x.mutable_values<float>().data();
  p[(0 * 96 + 0) * 240 + 3] = std::nanf("");     // a corner (border outputs)
  p[(40 * 96 + 50) * 240 + 17] = std::nanf("");  // the interior
  p[(95 * 96 + 95) * 240 + 239] = std::numeric_limits<float>::infinity();
  AttributeMap relu6 = Act("Clip", 0.0f, 6.0f);
  relu6["pads"] = AInts({1, 1, 1, 1});
  RunOpCase(DepthwiseRow("NaN and inf, relu6", {x, RandomF({240, 1, 3, 3}, 97), RandomF({240}, 98)}, relu6, true));
}

TEST(CpuDepthwiseConvTest, DeclinesWhatItDoesNotTake) {
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  auto declines = [](OpCase c) {
    c.expect_decline = true;
    RunOpCase(c);
  };
  declines(DepthwiseRow("small X (in cache)", {RandomF({1, 16, 16, 32}, 100), RandomF({32, 1, 3, 3}, 101)}, pad1));
  declines(DepthwiseRow("channels not a multiple of 16",
                        {RandomF({1, 128, 128, 136}, 102), RandomF({136, 1, 3, 3}, 103)}, pad1));
  declines(DepthwiseRow("narrow rows", {RandomF({64, 12, 12, 240}, 104), RandomF({240, 1, 3, 3}, 105)}, pad1));
  OpCase grouped = DepthwiseRow("group 2", {RandomF({1, 128, 128, 128}, 106), RandomF({128, 64, 3, 3}, 107)}, pad1);
  grouped.attrs["group"] = AInt(2);
  grouped.atol = 1e-4;  // 576-term sums in the oneDNN kernel that takes this row
  declines(grouped);
}

// strata.ChannelsLast wrapping strata.MaxPoolGrad (src/ops/cpu/max_pool_grad_nhwc.cc) with channel counts that
// exercise its 16-channel register blocks and the remainder: ties, NaN (one all-NaN window per block), windows
// that tile X, that do not (odd sizes), and that overlap.
TEST(CpuMaxPoolGradTest, ChannelBlocksMatchTheReference) {
  AttributeMap pool2 = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}, {"nhwc_inputs", AInts({0, 1})}};
  AttributeMap relu = pool2;
  relu["relu_input"] = AInt(1);
  AttributeMap pool3 = {{"kernel_shape", AInts({3, 3})},
                        {"strides", AInts({2, 2})},
                        {"pads", AInts({1, 1, 1, 1})},
                        {"nhwc_inputs", AInts({0, 1})}};
  for (int64_t c : {16, 32, 40}) {
    SCOPED_TRACE(c);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{8, 10}, {9, 11}}) {
      Tensor x = RandomF({2, h, w, c}, 150);
      float* t = x.mutable_values<float>().data();
      for (int64_t i = 0; i < x.num_elements(); ++i) t[i] = std::round(t[i] * 1.5f) / 2;  // many equal values
      t[5] = std::nanf("");
      for (int64_t k : {int64_t{3}, c - 1})  // the first window of channels 3 and c - 1: all NaN
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 2; ++j) t[(i * w + j) * c + k] = std::nanf("");
      const Tensor dy2 = RandomF({2, h / 2, w / 2, c}, 151);
      RunOpCase(ChannelsLastRow(StrCat("2x2 s2, ", h, "x", w), "MaxPoolGrad", "strata", {dy2, x}, pool2));
      RunOpCase(ChannelsLastRow(StrCat("2x2 s2 through relu, ", h, "x", w), "MaxPoolGrad", "strata", {dy2, x}, relu));
      const Tensor dy3 = RandomF({2, (h + 1) / 2, (w + 1) / 2, c}, 152);
      RunOpCase(ChannelsLastRow(StrCat("3x3 s2 overlapping, ", h, "x", w), "MaxPoolGrad", "strata", {dy3, x}, pool3));
    }
  }
}

// strata.ConvBackwardFilter (dY, X, w_shape) -> dW, dB of a depthwise convolution on plain NCHW data, for the "cpu"
// kernel (or, with `kernel` "dnnl", oneDNN's).
OpCase DepthwiseBackwardFilterRow(std::string label, std::vector<int64_t> x, std::vector<int64_t> k,
                                  std::vector<int64_t> y, AttributeMap attrs, std::string kernel = "cpu") {
  const int64_t c = x[1];
  attrs["group"] = AInt(c);
  std::vector<int64_t> w = {c, 1};
  w.insert(w.end(), k.begin(), k.end());
  OpCase row{.label = std::move(label),
             .op_type = "ConvBackwardFilter",
             .domain = "strata",
             .opset = 1,
             .attrs = std::move(attrs),
             .inputs = {RandomF(y, 140), RandomF(x, 141), I64(w, {static_cast<int64_t>(w.size())})},
             .num_outputs = 2,
             .constant_inputs = {2},
             .kernel = std::move(kernel)};
  row.rtol = 1e-5;
  row.atol = 1e-5;
  return row;
}

TEST(CpuDepthwiseBackwardFilterTest, MatchesTheReference) {
  // By hand: 1x1 images under a 3x3 window with pad 1 see only the centre tap: dW[c] = x[c] * dy[c] there, 0
  // elsewhere; dB = dy.
  OpCase hand{.label = "1x1 image, 3x3 pad 1, by hand",
              .op_type = "ConvBackwardFilter",
              .domain = "strata",
              .opset = 1,
              .attrs = {{"group", AInt(2)}, {"pads", AInts({1, 1, 1, 1})}},
              .inputs = {F({5, 7}, {1, 2, 1, 1}), F({2, 3}, {1, 2, 1, 1}), I64({2, 1, 3, 3}, {4})},
              .num_outputs = 2,
              .expected = {F({0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 21, 0, 0, 0, 0}, {2, 1, 3, 3}), F({5, 7}, {2})},
              .constant_inputs = {2},
              .kernel = "cpu"};
  RunOpCase(hand);
  const AttributeMap pad2 = {{"pads", AInts({2, 2, 2, 2})}};
  const AttributeMap s2 = {{"strides", AInts({2, 2})}};
  // MobileNetV3Small's 5x5 layers at 32x32 (the ones oneDNN computes with gemm).
  RunOpCase(DepthwiseBackwardFilterRow("5x5 pad 2 on 1x1", {32, 96, 1, 1}, {5, 5}, {32, 96, 1, 1}, pad2));
  RunOpCase(DepthwiseBackwardFilterRow("5x5 pad 2 on 2x2", {32, 120, 2, 2}, {5, 5}, {32, 120, 2, 2}, pad2));
  RunOpCase(DepthwiseBackwardFilterRow("5x5 stride 2 on 5x5", {32, 48, 5, 5}, {5, 5}, {32, 48, 1, 1}, s2));
  RunOpCase(DepthwiseBackwardFilterRow("5x5 stride 2 on 7x7", {32, 16, 7, 7}, {5, 5}, {32, 16, 2, 2}, s2));
  // Larger images, asymmetric pads, stride 1x2, dilation; and 1-D and 3-D.
  RunOpCase(DepthwiseBackwardFilterRow(
      "3x3 dilated, asymmetric pads, stride 1x2", {2, 8, 13, 11}, {3, 3}, {2, 8, 11, 4},
      {{"pads", AInts({2, 0, 0, 1})}, {"strides", AInts({1, 2})}, {"dilations", AInts({2, 2})}}));
  RunOpCase(DepthwiseBackwardFilterRow("1-D, k 4, stride 3", {3, 5, 20}, {4}, {3, 5, 7},
                                       {{"pads", AInts({1, 2})}, {"strides", AInts({3})}}));
  RunOpCase(DepthwiseBackwardFilterRow("3-D 3x3x3 pad 1", {2, 4, 5, 6, 7}, {3, 3, 3}, {2, 4, 5, 6, 7},
                                       {{"pads", AInts({1, 1, 1, 1, 1, 1})}}));
  OpCase no_bias = DepthwiseBackwardFilterRow("no bias output", {4, 24, 2, 2}, {5, 5}, {4, 24, 2, 2}, pad2);
  no_bias.num_outputs = 1;
  RunOpCase(no_bias);
}

TEST(CpuDepthwiseBackwardFilterTest, DeclinesWhatItDoesNotTake) {
  auto declines = [](OpCase c) {
    c.expect_decline = true;
    RunOpCase(c);
  };
  OpCase dense = DepthwiseBackwardFilterRow("group 1", {2, 1, 6, 6}, {3, 3}, {2, 1, 4, 4}, {});
  dense.attrs["group"] = AInt(1);
  declines(dense);
  // Two input channels per group: grouped, not depthwise.
  OpCase grouped = DepthwiseBackwardFilterRow("group 4 of 8 channels", {2, 8, 6, 6}, {3, 3}, {2, 8, 4, 4}, {});
  grouped.attrs["group"] = AInt(4);
  grouped.inputs[2] = I64({8, 2, 3, 3}, {4});
  declines(grouped);
}

// oneDNN's backward weights declines the depthwise layers it would run with its gemm implementation, so that the cpu
// kernel above takes them; it keeps those it has a jit kernel for (3x3 on larger images).
TEST(CpuDepthwiseBackwardFilterTest, OneDnnLeavesItsGemmCasesToTheCpuKernel) {
  const AttributeMap pad2 = {{"pads", AInts({2, 2, 2, 2})}};
  OpCase gemm = DepthwiseBackwardFilterRow("5x5 pad 2 on 1x1", {32, 96, 1, 1}, {5, 5}, {32, 96, 1, 1}, pad2, "dnnl");
  gemm.expect_decline = true;
  RunOpCase(gemm);
  RunOpCase(DepthwiseBackwardFilterRow("3x3 pad 1 on 16x16", {8, 32, 16, 16}, {3, 3}, {8, 32, 16, 16},
                                       {{"pads", AInts({1, 1, 1, 1})}}, "dnnl"));
}

// strata.ChannelsLast wrapping strata.ConvBackwardFilter of a depthwise convolution: dY [N, OH, OW, C] and X
// [N, H, W, C] channels-last, dW [C, 1, KH, KW] and dB [C] plain; the reference transposes dY and X back to NCHW
// and runs the reference filter gradient (a float gemm).
OpCase NhwcBackwardFilterRow(std::string label, std::vector<int64_t> x, std::vector<int64_t> k, std::vector<int64_t> y,
                             AttributeMap attrs, uint64_t seed = 150) {
  const int64_t c = x[3];
  attrs["group"] = AInt(c);
  attrs["nhwc_inputs"] = AInts({0, 1});
  attrs["nhwc_output"] = AInt(0);
  OpCase row =
      ChannelsLastCase(std::move(label), "ConvBackwardFilter", "strata",
                       {RandomF(y, seed), RandomF(x, seed + 1), I64({c, 1, k[0], k[1]}, {4})}, std::move(attrs), "cpu");
  row.num_outputs = 2;
  row.constant_inputs = {2};
  row.rtol = 1e-4;
  row.atol = 1e-4;
  return row;
}

TEST(CpuDepthwiseBackwardFilterNhwcTest, MatchesTheReference) {
  // By hand: one 2x2 image of 2 channels under a 3x3 window with pad 1, dY = 1 everywhere: tap (i, j) sums X over
  // the positions it reads; the centre tap reads all four (x sums 1+2+3+4 = 10 and 10+20+30+40 = 100), a corner one
  // one pixel, an edge one two. dB = 4 per channel.
  OpCase hand = ChannelsLastCase(
      "2x2 image, 3x3 pad 1, by hand", "ConvBackwardFilter", "strata",
      {F(std::vector<float>(8, 1.0f), {1, 2, 2, 2}), F({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2}),
       I64({2, 1, 3, 3}, {4})},
      {{"group", AInt(2)}, {"pads", AInts({1, 1, 1, 1})}, {"nhwc_inputs", AInts({0, 1})}, {"nhwc_output", AInt(0)}},
      "cpu");
  hand.num_outputs = 2;
  hand.constant_inputs = {2};
  // Channel 0 X = [[1, 2], [3, 4]]: tap (0,0) reads x[0][0] for output (1,1) only: 1; tap (0,1) outputs (1,0),(1,1)
  // read x[0][0], x[0][1]: 3; tap (0,2): x[0][1] = 2; (1,0): x[0][0]+x[1][0] = 4; (1,1): 10; (1,2): 6; (2,0): 3;
  // (2,1): 7; (2,2): 4. Channel 1 is ten times that.
  hand.expected = {F({1, 3, 2, 4, 10, 6, 3, 7, 4, 10, 30, 20, 40, 100, 60, 30, 70, 40}, {2, 1, 3, 3}), F({4, 4}, {2})};
  RunOpCase(hand);
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  const AttributeMap pad2 = {{"pads", AInts({2, 2, 2, 2})}};
  // Channel counts: whole 16-lane vectors, a vector of 8 after them (72, MobileNetV3's), single channels (3, 21).
  RunOpCase(NhwcBackwardFilterRow("3x3 pad 1, 32 channels", {3, 9, 10, 32}, {3, 3}, {3, 9, 10, 32}, pad1));
  RunOpCase(NhwcBackwardFilterRow("3x3 pad 1, 72 channels", {2, 7, 7, 72}, {3, 3}, {2, 7, 7, 72}, pad1));
  RunOpCase(NhwcBackwardFilterRow("3x3 pad 1, 21 channels", {2, 5, 6, 21}, {3, 3}, {2, 5, 6, 21}, pad1));
  RunOpCase(NhwcBackwardFilterRow("3x3 pad 1, 3 channels", {2, 5, 6, 3}, {3, 3}, {2, 5, 6, 3}, pad1));
  // Strides, ZeroPadding2D's asymmetric pads (top/left 0), 5x5, dilation; MobileNetV3Small's 5x5 layers on 1x1 and
  // 2x2 images (the windows mostly padding).
  RunOpCase(NhwcBackwardFilterRow("3x3 stride 2 pads 0,0,1,1", {2, 12, 12, 40}, {3, 3}, {2, 6, 6, 40},
                                  {{"pads", AInts({0, 0, 1, 1})}, {"strides", AInts({2, 2})}}));
  RunOpCase(NhwcBackwardFilterRow("5x5 stride 2 pad 2", {2, 11, 9, 24}, {5, 5}, {2, 6, 5, 24},
                                  {{"pads", AInts({2, 2, 2, 2})}, {"strides", AInts({2, 2})}}));
  RunOpCase(
      NhwcBackwardFilterRow("3x3 dilated, asymmetric pads, stride 1x2", {2, 13, 11, 16}, {3, 3}, {2, 11, 4, 16},
                            {{"pads", AInts({2, 0, 0, 1})}, {"strides", AInts({1, 2})}, {"dilations", AInts({2, 2})}}));
  RunOpCase(NhwcBackwardFilterRow("5x5 pad 2 on 1x1", {32, 1, 1, 96}, {5, 5}, {32, 1, 1, 96}, pad2));
  RunOpCase(NhwcBackwardFilterRow("5x5 pad 2 on 2x2", {32, 2, 2, 120}, {5, 5}, {32, 2, 2, 120}, pad2));
  // More rows than the kernel's 8 tasks, with long rows (the four partial sums and their remainder).
  RunOpCase(NhwcBackwardFilterRow("3x3 pad 1 on 33x35", {3, 33, 35, 48}, {3, 3}, {3, 33, 35, 48}, pad1));
  OpCase no_bias = NhwcBackwardFilterRow("no bias output", {2, 6, 6, 24}, {3, 3}, {2, 6, 6, 24}, pad1);
  no_bias.num_outputs = 1;
  RunOpCase(no_bias);
}

TEST(CpuDepthwiseBackwardFilterNhwcTest, DeclinesWhatItDoesNotTake) {
  auto declines = [](OpCase c) {
    c.expect_decline = true;
    RunOpCase(c);
  };
  OpCase grouped = NhwcBackwardFilterRow("group 4 of 8 channels", {2, 6, 6, 8}, {3, 3}, {2, 4, 4, 8}, {});
  grouped.attrs["group"] = AInt(4);
  grouped.inputs[2] = I64({8, 2, 3, 3}, {4});
  declines(grouped);
  OpCase only_dy = NhwcBackwardFilterRow("X channels-first", {2, 6, 6, 8}, {3, 3}, {2, 4, 4, 8}, {});
  only_dy.attrs["nhwc_inputs"] = AInts({0});
  only_dy.inputs[1] = RandomF({2, 8, 6, 6}, 3);
  declines(only_dy);
}

// strata.ChannelsLast wrapping strata.ConvBackwardFilter of a convolution of one input channel (a first layer on grey
// images): dY [N, OH, OW, M] and X [N, H, W, 1] channels-last, dW [M, 1, 3, 3] and dB [M] plain, against the
// reference (dY and X transposed back to NCHW, a float gemm).
OpCase FirstLayerFilterRow(std::string label, std::vector<int64_t> x, int64_t m, std::vector<int64_t> y,
                           AttributeMap attrs, uint64_t seed = 170) {
  attrs["nhwc_inputs"] = AInts({0, 1});
  attrs["nhwc_output"] = AInt(0);
  OpCase row = ChannelsLastCase(std::move(label), "ConvBackwardFilter", "strata",
                                {RandomF(y, seed), RandomF(x, seed + 1), I64({m, 1, 3, 3}, {4})}, std::move(attrs),
                                "cpu");
  row.num_outputs = 2;
  row.constant_inputs = {2};
  row.rtol = 1e-4;
  row.atol = 1e-4;
  return row;
}

TEST(CpuFirstLayerBackwardFilterTest, MatchesTheReference) {
  // By hand: one 2x2 image under a 3x3 window with pad 1, 16 output channels, dY = 1 everywhere for channel 0 and 2
  // for the others: tap (i, j) sums X over the positions it reads (X = [[1, 2], [3, 4]]: the centre tap reads all
  // four, 10; a corner tap one pixel; an edge tap two), times dY. dB = 4 and 8.
  std::vector<float> dy(4 * 16, 2.0f);
  for (int p = 0; p < 4; ++p) dy[p * 16] = 1.0f;
  OpCase hand = ChannelsLastCase(
      "2x2 image, 3x3 pad 1, by hand", "ConvBackwardFilter", "strata",
      {F(dy, {1, 2, 2, 16}), F({1, 2, 3, 4}, {1, 2, 2, 1}), I64({16, 1, 3, 3}, {4})},
      {{"pads", AInts({1, 1, 1, 1})}, {"nhwc_inputs", AInts({0, 1})}, {"nhwc_output", AInt(0)}}, "cpu");
  hand.num_outputs = 2;
  hand.constant_inputs = {2};
  // Tap (0,0) reads x[0][0] = 1 for output (1,1) only; (0,1): x[0][0] + x[0][1] = 3; (0,2): x[0][1] = 2; (1,0): 4;
  // (1,1): 10; (1,2): 6; (2,0): 3; (2,1): 7; (2,2): 4.
  const std::vector<float> taps = {1, 3, 2, 4, 10, 6, 3, 7, 4};
  std::vector<float> dw, db;
  for (int o = 0; o < 16; ++o) {
    for (float t : taps) dw.push_back(o == 0 ? t : 2 * t);
    db.push_back(o == 0 ? 4 : 8);
  }
  hand.expected = {F(dw, {16, 1, 3, 3}), F(db, {16})};
  RunOpCase(hand);
  // The Fashion CNN's first layer ('valid', 32 channels: the two-vector path), 'same' padding, a single 16-channel
  // vector, 48 channels (two vectors, then one), strides and dilations with asymmetric pads.
  RunOpCase(FirstLayerFilterRow("valid, 32 channels (the Fashion CNN)", {3, 28, 28, 1}, 32, {3, 26, 26, 32}, {}));
  RunOpCase(FirstLayerFilterRow("pad 1, 32 channels", {2, 9, 10, 1}, 32, {2, 9, 10, 32},
                                {{"pads", AInts({1, 1, 1, 1})}}));
  RunOpCase(
      FirstLayerFilterRow("pad 1, 16 channels", {2, 7, 6, 1}, 16, {2, 7, 6, 16}, {{"pads", AInts({1, 1, 1, 1})}}));
  RunOpCase(FirstLayerFilterRow("48 channels", {2, 8, 9, 1}, 48, {2, 6, 7, 48}, {}));
  RunOpCase(FirstLayerFilterRow("stride 2, pads 0,0,1,1", {2, 12, 11, 1}, 32, {2, 6, 5, 32},
                                {{"pads", AInts({0, 0, 1, 1})}, {"strides", AInts({2, 2})}}));
  RunOpCase(FirstLayerFilterRow(
      "dilation 2, stride 1x2, asymmetric pads", {2, 13, 11, 1}, 16, {2, 11, 4, 16},
      {{"pads", AInts({2, 0, 0, 1})}, {"strides", AInts({1, 2})}, {"dilations", AInts({2, 2})}}));
  OpCase no_bias = FirstLayerFilterRow("no bias output", {2, 6, 6, 1}, 32, {2, 4, 4, 32}, {});
  no_bias.num_outputs = 1;
  RunOpCase(no_bias);
}

TEST(CpuFirstLayerBackwardFilterTest, DeclinesWhatItDoesNotTake) {
  auto declines = [](OpCase c) {
    c.expect_decline = true;
    RunOpCase(c);
  };
  OpCase two = FirstLayerFilterRow("2 input channels", {2, 6, 6, 2}, 16, {2, 4, 4, 16}, {});
  two.inputs[2] = I64({16, 2, 3, 3}, {4});
  declines(two);
  declines(FirstLayerFilterRow("8 output channels", {2, 6, 6, 1}, 8, {2, 4, 4, 8}, {}));
  OpCase five = FirstLayerFilterRow("5x5", {2, 6, 6, 1}, 16, {2, 2, 2, 16}, {});
  five.inputs[2] = I64({16, 1, 5, 5}, {4});
  declines(five);
  OpCase only_dy = FirstLayerFilterRow("X channels-first", {2, 6, 6, 1}, 16, {2, 4, 4, 16}, {});
  only_dy.attrs["nhwc_inputs"] = AInts({0});
  only_dy.inputs[1] = RandomF({2, 1, 6, 6}, 3);
  declines(only_dy);
}

// Sum of same-shape float32 inputs, bit for bit the reference's ((x0 + x1) + x2) + ... (rtol and atol 0): two to four
// inputs, sizes below, at and across the kernel's 16384-element blocks; by hand once.
TEST(CpuSumTest, MatchesTheReferenceExactly) {
  OpCase hand{.label = "by hand",
              .op_type = "Sum",
              .inputs = {F({1, 2, 3}, {3}), F({10, 20, 30}, {3}), F({100, 200, 300}, {3})},
              .expected = {F({111, 222, 333}, {3})},
              .kernel = "cpu"};
  RunOpCase(hand);
  for (int inputs = 2; inputs <= 4; ++inputs)
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{7}, {16384}, {3, 5, 33, 41}}) {
      OpCase c{.label = StrCat(inputs, " inputs of ", Shape(shape).ToString()), .op_type = "Sum", .kernel = "cpu"};
      for (int i = 0; i < inputs; ++i) c.inputs.push_back(RandomF(shape, 20 + i, -100.f, 100.f));
      c.rtol = 0;
      c.atol = 0;
      RunOpCase(c);
    }
  OpCase broadcast{.label = "broadcasting declines",
                   .op_type = "Sum",
                   .inputs = {RandomF({4, 3}, 1), RandomF({3}, 2)},
                   .kernel = "cpu",
                   .expect_decline = true};
  RunOpCase(broadcast);
  OpCase one{.label = "one input declines", .op_type = "Sum", .inputs = {RandomF({4, 3}, 1)}, .kernel = "cpu"};
  one.expect_decline = true;
  RunOpCase(one);
}

// strata.ChannelsLast wrapping a 1x1 Conv or strata.FusedConv (with an optional channels-last residual Z, input 3).
// The kernel takes X or Y of at least 8 MiB with at most 32 output channels (or at most 32 input channels and Y of
// 64 MiB), so the cases here are that large.
OpCase PointwiseRow(std::string label, std::vector<Tensor> inputs, AttributeMap attrs, bool fused = false) {
  if (inputs.size() == 4) attrs["nhwc_inputs"] = AInts({0, 3});
  return ChannelsLastRow(std::move(label), fused ? "FusedConv" : "Conv", fused ? "strata" : "", std::move(inputs),
                         std::move(attrs));
}

TEST(CpuPointwiseConvTest, MatchesTheReference) {
  // mobilenet_v2's first projection: 32 -> 16 channels, no activation.
  RunOpCase(PointwiseRow("32 -> 16",
                         {RandomF({6, 112, 112, 32}, 110), RandomF({16, 32, 1, 1}, 111), RandomF({16}, 112)}, {}));
  // Fused Relu6 and no bias; a partial output vector (10 channels) with a residual and an activation that the
  // reference's ApplyActivation applies; 3 input channels.
  RunOpCase(PointwiseRow("relu6, no bias", {RandomF({4, 120, 120, 48}, 113, -4, 4), RandomF({16, 48, 1, 1}, 114)},
                         Act("Clip", 0.0f, 6.0f), true));
  AttributeMap leaky = Act("LeakyRelu");
  leaky["activation_alpha"] = AFloat(0.2f);
  RunOpCase(PointwiseRow("10 channels, residual, LeakyRelu",
                         {RandomF({3, 150, 161, 64}, 115), RandomF({10, 64, 1, 1}, 116), RandomF({10}, 117),
                          RandomF({3, 150, 161, 10}, 118)},
                         leaky, true));
  RunOpCase(PointwiseRow("3 channels in, relu, residual",
                         {RandomF({2, 300, 301, 3}, 119), RandomF({16, 3, 1, 1}, 120), RandomF({16}, 121),
                          RandomF({2, 300, 301, 16}, 122)},
                         Act("Relu"), true));
  // mobilenet_v2's projection with the residual: 144 -> 24 (a vector pair and a partial vector), and its expansion
  // 16 -> 96 (three vector pairs).
  RunOpCase(PointwiseRow("144 -> 24, residual, no activation",
                         {RandomF({5, 56, 57, 144}, 140), RandomF({24, 144, 1, 1}, 141, -0.2f, 0.2f),
                          RandomF({24}, 142), RandomF({5, 56, 57, 24}, 143)},
                         {}, true));
  RunOpCase(PointwiseRow("16 -> 96, relu6",
                         {RandomF({14, 112, 113, 16}, 144), RandomF({96, 16, 1, 1}, 145), RandomF({96}, 146)},
                         Act("Clip", 0.0f, 6.0f), true));
  // Y of 16 MiB: written with streaming stores; pixel count not a multiple of the 6-pixel block.
  RunOpCase(PointwiseRow("streamed output",
                         {RandomF({5, 255, 207, 8}, 123), RandomF({16, 8, 1, 1}, 124), RandomF({16}, 125)},
                         Act("Clip", -0.5f, 0.5f), true));
}

TEST(CpuPointwiseConvTest, NaNThroughClip) {
  Tensor x = RandomF({6, 112, 112, 32}, 126);
  float* p = x.mutable_values<float>().data();
  p[5] = std::nanf("");
  p[x.num_elements() - 1] = std::numeric_limits<float>::infinity();
  RunOpCase(PointwiseRow("NaN and inf, relu6", {x, RandomF({16, 32, 1, 1}, 127), RandomF({16}, 128)},
                         Act("Clip", 0.0f, 6.0f), true));
}

TEST(CpuPointwiseConvTest, DeclinesWhatItDoesNotTake) {
  auto declines = [](OpCase c) {
    c.expect_decline = true;
    RunOpCase(c);
  };
  declines(PointwiseRow("small X and Y (in cache)", {RandomF({1, 16, 16, 32}, 130), RandomF({16, 32, 1, 1}, 131)}, {}));
  declines(PointwiseRow("48 channels in and out", {RandomF({6, 112, 112, 48}, 132), RandomF({48, 48, 1, 1}, 133)}, {}));
  declines(PointwiseRow("16 -> 64 into 12 MiB", {RandomF({2, 112, 112, 16}, 138), RandomF({64, 16, 1, 1}, 139)}, {}));
  declines(PointwiseRow("stride 2", {RandomF({6, 112, 112, 32}, 134), RandomF({16, 32, 1, 1}, 135)},
                        {{"strides", AInts({2, 2})}}));
  declines(PointwiseRow("3x3 kernel", {RandomF({6, 112, 112, 32}, 136), RandomF({16, 32, 3, 3}, 137)},
                        {{"pads", AInts({1, 1, 1, 1})}}));
}

TEST(CpuConcatTest, Axes) {
  for (int64_t axis : {0, 1, 2, 3, -1}) {
    RunOpCase(
        {.label = "axis " + std::to_string(axis),
         .op_type = "Concat",
         .attrs = {{"axis", AInt(axis)}},
         .inputs = {RandomF({2, 3, 4, 5}, 40),
                    RandomF({axis == 0 ? 1 : 2, axis == 1 ? 2 : 3, axis == 2 ? 1 : 4, axis % 4 == 3 ? 7 : 5}, 41)},
         .kernel = "cpu"});
  }
  RunOpCase({.label = "int64, three inputs",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(1)}},
             .inputs = {I64({1, 2, 3, 4}, {2, 2}), I64({5, 6}, {2, 1}), I64({7, 8, 9, 10, 11, 12}, {2, 3})},
             .expected = {I64({1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}, {2, 6})},
             .kernel = "cpu"});
  // 8 MiB: written with streaming stores where a row chunk is whole cache lines (64 floats), with memcpy where it is
  // not (44 and 20 floats, and everything after them in the row).
  RunOpCase({.label = "streamed, nhwc channels",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(3)}},
             .inputs = {RandomF({4, 64, 64, 64}, 42), RandomF({4, 64, 64, 44}, 43), RandomF({4, 64, 64, 20}, 44)},
             .kernel = "cpu"});
  OpCase strings{.label = "strings decline",
                 .op_type = "Concat",
                 .attrs = {{"axis", AInt(0)}},
                 .inputs = {T_<std::string>({"a"}, {1}), T_<std::string>({"b"}, {1})},
                 .kernel = "cpu",
                 .expect_decline = true};
  RunOpCase(strings);
}

// BatchNormalization in training mode: Y and the running statistics.
OpCase BnTrainRow(std::string label, Tensor x, uint64_t seed, int opset = 15) {
  const int64_t c = x.dim(1);
  OpCase row{.label = std::move(label),
             .op_type = "BatchNormalization",
             .opset = opset,
             .attrs = {{"epsilon", AFloat(1e-3f)}, {"momentum", AFloat(0.99f)}},
             .inputs = {std::move(x), RandomF({c}, seed, 0.5f, 1.5f), RandomF({c}, seed + 1), RandomF({c}, seed + 2),
                        RandomF({c}, seed + 3, 0.5f, 1.5f)},
             .num_outputs = 3,
             .rtol = 1e-4,
             .atol = 1e-5,
             .kernel = "cpu"};
  if (opset >= 14) row.attrs["training_mode"] = AInt(1);
  return row;
}

// strata.BatchNormalizationGrad, training mode: dX, dScale, dB.
OpCase BnGradRow(std::string label, Tensor dy, Tensor x, uint64_t seed) {
  const int64_t c = x.dim(1);
  return {.label = std::move(label),
          .op_type = "BatchNormalizationGrad",
          .domain = "strata",
          .attrs = {{"epsilon", AFloat(1e-3f)}, {"training_mode", AInt(1)}},
          .inputs = {std::move(dy), std::move(x), RandomF({c}, seed, 0.5f, 1.5f), RandomF({c}, seed + 1),
                     RandomF({c}, seed + 2, 0.5f, 1.5f)},
          .num_outputs = 3,
          .rtol = 1e-4,
          .atol = 1e-4,
          .kernel = "cpu"};
}

TEST(CpuBatchNormTest, TrainingMatchesTheReference) {
  // By hand: one channel x = 1, 2, 3, 4: mean 2.5, population variance 1.25, + eps 2.75 = 4, so with scale 2 and
  // B 1, y = (x - 2.5) / 2 * 2 + 1; running = input * 0.5 + batch * 0.5.
  RunOpCase({.label = "by hand",
             .op_type = "BatchNormalization",
             .opset = 15,
             .attrs = {{"epsilon", AFloat(2.75f)}, {"momentum", AFloat(0.5f)}, {"training_mode", AInt(1)}},
             .inputs = {F({1, 2, 3, 4}, {2, 1, 2}), F({2}, {1}), F({1}, {1}), F({0}, {1}), F({1}, {1})},
             .num_outputs = 3,
             .expected = {F({-0.5f, 0.5f, 1.5f, 2.5f}, {2, 1, 2}), F({1.25f}, {1}), F({1.125f}, {1})},
             .kernel = "cpu"});
  // Rows of 36 values (two 16-lane blocks and a tail), of 5 (tail only), rank 2 (rows of one value), 17x19 rows.
  RunOpCase(BnTrainRow("8x16x6x6", RandomF({8, 16, 6, 6}, 1), 2));
  RunOpCase(BnTrainRow("rank 3", RandomF({2, 3, 5}, 3), 4));
  RunOpCase(BnTrainRow("rank 2", RandomF({7, 5}, 5), 6));
  RunOpCase(BnTrainRow("opset 9, running outputs requested", RandomF({3, 4, 17, 19}, 7), 8, 9));
  OpCase inference = BnTrainRow("inference mode declines", RandomF({2, 3, 4, 4}, 11), 12);
  inference.attrs["training_mode"] = AInt(0);
  inference.num_outputs = 1;
  inference.expect_decline = true;
  RunOpCase(inference);
  OpCase f64 = BnTrainRow("float64 declines", Cast(RandomF({2, 3, 4, 4}, 13), DType::kFloat64), 14);
  for (size_t i = 1; i < f64.inputs.size(); ++i) f64.inputs[i] = Cast(f64.inputs[i], DType::kFloat64);
  f64.expect_decline = true;
  RunOpCase(f64);
}

TEST(CpuBatchNormTest, GradientMatchesTheReference) {
  RunOpCase(BnGradRow("8x16x6x6", RandomF({8, 16, 6, 6}, 20), RandomF({8, 16, 6, 6}, 21), 22));
  RunOpCase(BnGradRow("rank 3", RandomF({2, 3, 5}, 23), RandomF({2, 3, 5}, 24), 25));
  RunOpCase(BnGradRow("rank 2", RandomF({7, 5}, 26), RandomF({7, 5}, 27), 28));
  OpCase inference = BnGradRow("inference mode declines", RandomF({2, 3, 4}, 32), RandomF({2, 3, 4}, 33), 34);
  inference.attrs["training_mode"] = AInt(0);
  inference.expect_decline = true;
  RunOpCase(inference);
}

// The channels-last kernels (strata.ChannelsLast with X, dY, dX [N, H, W, C]) against the reference, which transposes
// around the wrapped op's reference kernel: rows of 20 channels (a 16-lane block and a tail), 3 channels, 64.
TEST(CpuBatchNormTest, ChannelsLastMatchesTheReference) {
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{4, 6, 5, 20}, {2, 3, 3, 3}, {8, 7, 7, 64}}) {
    const int64_t c = x[3];
    const std::string dims = Shape(x).ToString();
    OpCase f = ChannelsLastCase(
        "forward " + dims, "BatchNormalization", "",
        {RandomF(x, 1), RandomF({c}, 2, 0.5f, 1.5f), RandomF({c}, 3), RandomF({c}, 4), RandomF({c}, 5, 0.5f, 1.5f)},
        {{"epsilon", AFloat(1e-3f)}, {"momentum", AFloat(0.9f)}, {"training_mode", AInt(1)}}, "cpu");
    f.num_outputs = 3;
    f.rtol = 1e-4;
    f.atol = 1e-5;
    RunOpCase(f);
    OpCase g = ChannelsLastCase(
        "gradient " + dims, "BatchNormalizationGrad", "strata",
        {RandomF(x, 6), RandomF(x, 7), RandomF({c}, 8, 0.5f, 1.5f), RandomF({c}, 9), RandomF({c}, 10, 0.5f, 1.5f)},
        {{"epsilon", AFloat(1e-3f)}, {"training_mode", AInt(1)}, {"nhwc_inputs", AInts({0, 1})}}, "cpu");
    g.num_outputs = 3;
    g.rtol = 1e-4;
    g.atol = 1e-4;
    RunOpCase(g);
  }
  OpCase only_x = ChannelsLastCase("gradient with dY alone channels-last declines", "BatchNormalizationGrad", "strata",
                                   {RandomF({2, 3, 3, 4}, 11), RandomF({2, 4, 3, 3}, 12), RandomF({4}, 13)},
                                   {{"training_mode", AInt(1)}, {"nhwc_inputs", AInts({0})}}, "cpu");
  only_x.num_outputs = 3;
  only_x.expect_decline = true;
  RunOpCase(only_x);
}

// A mean far from zero against a small spread (x in [1000, 1001)): the shifted sums must not cancel. The float32
// reference kernel accumulates plain sums in float and is itself off by about 1e-3 here, so the oracle is the
// textbook formulas in double, computed here.
TEST(CpuBatchNormTest, LargeMeanAgainstDoubleFormulas) {
  const int64_t n = 4, c = 8, inner = 400;
  OpCase fwd = BnTrainRow("forward", RandomF({n, c, 20, 20}, 9, 1000.0f, 1001.0f), 10);
  OpCase grad = BnGradRow("gradient", RandomF({n, c, 20, 20}, 29), fwd.inputs[0], 0);
  grad.inputs[2] = fwd.inputs[1];
  auto y = RunNamedKernel(fwd);
  auto g = RunNamedKernel(grad);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto x = fwd.inputs[0].values<float>(), dy = grad.inputs[0].values<float>();
  const auto scale = fwd.inputs[1].values<float>(), bias = fwd.inputs[2].values<float>();
  const double eps = 1e-3, m = static_cast<double>(n * inner);
  for (int64_t ch = 0; ch < c; ++ch) {
    const auto at = [&](int64_t b, int64_t i) { return (b * c + ch) * inner + i; };
    double mean = 0, var = 0, db = 0, dsc = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) mean += x[at(b, i)] / m;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) var += (x[at(b, i)] - mean) * (x[at(b, i)] - mean) / m;
    const double istd = 1 / std::sqrt(var + eps);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        db += dy[at(b, i)];
        dsc += dy[at(b, i)] * (x[at(b, i)] - mean) * istd;
      }
    EXPECT_NEAR((*g)[1].values<float>()[ch], dsc, 1e-3 * std::abs(dsc) + 1e-3) << "dScale, channel " << ch;
    EXPECT_NEAR((*g)[2].values<float>()[ch], db, 1e-4 * std::abs(db) + 1e-4) << "dB, channel " << ch;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; i += 37) {
        const double xhat = (x[at(b, i)] - mean) * istd;
        const double want_y = scale[ch] * xhat + bias[ch];
        const double want_dx = scale[ch] * istd * (dy[at(b, i)] - (db + xhat * dsc) / m);
        // x is known to float precision only (about 6e-5 absolute at 1000, i.e. 2e-4 of a standard deviation).
        EXPECT_NEAR((*y)[0].values<float>()[at(b, i)], want_y, 1e-3) << "Y, channel " << ch;
        EXPECT_NEAR((*g)[0].values<float>()[at(b, i)], want_dx, 1e-3) << "dX, channel " << ch;
      }
  }
}

// The cpu gradient kernel against central finite differences of the cpu forward kernel, in float32: with
// L = sum(Y * R) for fixed random R, dX, dScale and dB of BatchNormalizationGrad(R, X, scale) must match
// (L(v + h) - L(v - h)) / 2h for every element v of X, scale and B.
TEST(CpuBatchNormTest, GradientMatchesFiniteDifferences) {
  const std::vector<int64_t> shape = {3, 4, 5, 7};
  OpCase fwd = BnTrainRow("forward", RandomF(shape, 40, -2.0f, 2.0f), 41);
  fwd.num_outputs = 1;
  const Tensor r = RandomF(shape, 45);
  const auto loss = [&](const OpCase& c) {
    auto out = RunNamedKernel(c);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return 0.0;
    double l = 0;
    const auto y = (*out)[0].values<float>(), w = r.values<float>();
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * w[i];
    return l;
  };
  OpCase grad = BnGradRow("gradient", r, fwd.inputs[0], 0);
  grad.inputs[2] = fwd.inputs[1];
  auto g = RunNamedKernel(grad);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const double h = 1e-2;
  for (int input : {0, 1, 2}) {  // X, scale, B; their gradients are outputs 0, 1, 2
    const auto want = (*g)[input].values<float>();
    double largest = 0;
    for (float v : want) largest = std::max(largest, std::abs(static_cast<double>(v)));
    for (size_t i = 0; i < want.size(); ++i) {
      OpCase c = fwd;  // its tensors share fwd's buffers: restored below
      float* p = c.inputs[input].mutable_values<float>().data();
      const float v = p[i];
      p[i] = static_cast<float>(v + h);
      const double up = loss(c);
      p[i] = static_cast<float>(v - h);
      const double down = loss(c);
      p[i] = v;
      const double fd = (up - down) / (2 * h);
      ASSERT_NEAR(want[i], fd, 2e-3 * largest + 1e-3) << "input " << input << " element " << i;
    }
  }
}

}  // namespace
}  // namespace strata::testing
