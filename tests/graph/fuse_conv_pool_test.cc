// FuseConvMaxPool: a channels-last first-layer convolution read only by a channels-last MaxPool becomes one
// strata.ConvMaxPool (computed by the hand-written kernel), and nothing else does.
#include "ops/op.h"
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

// Conv + activation fusion, the channels-last conversion, then this fusion, as the default pipeline runs them.
Status LayoutThenFuse(graph::Graph* g) {
  STRATA_RETURN_IF_ERROR(graph::FuseConvActivation(g));
  STRATA_RETURN_IF_ERROR(graph::ConvertToChannelsLast(g));
  return graph::FuseConvMaxPool(g);
}

// How many channels-last nodes wrap `op`.
int Wrapped(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const graph::Node& node : g.nodes) n += node.op_type == "ChannelsLast" && node.GetString("op", "") == op;
  return n;
}

bool CpuKernel() {
  for (const ops::KernelEntry& e : ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels)
    if (e.name == "cpu") return true;
  return false;
}

// conv(x) -> relu -> maxpool -> conv -> relu -> maxpool: the first pair fuses (9 taps), the second does not (8 * 9).
GraphBuilder TwoLayers(int64_t c_in) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), c_in, 16, 16})
      .Constant("w1", RandomF({8, c_in, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("b1", RandomF({8}, 2))
      .Constant("w2", RandomF({16, 8, 3, 3}, 3, -0.3f, 0.3f))
      .Node("Conv", {"x", "w1", "b1"}, {"c1"})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}})
      .Node("Conv", {"p1", "w2"}, {"c2"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c2"}, {"r2"})
      .Node("MaxPool", {"r2"}, {"p2"}, {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}})
      .Node("Flatten", {"p2"}, {"y"});
  return b;
}

TEST(FuseConvPoolTest, FirstLayerFuses) {
  GraphBuilder b = TwoLayers(1);
  b.Output("y");
  // The fused node is only written when the hand-written kernel exists; the graph must compute the same either way.
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({2, 1, 16, 16}, 5)}}, LayoutThenFuse);
  if (!CpuKernel()) GTEST_SKIP() << "no hand-written ChannelsLast kernel in this build: nothing to fuse";
  EXPECT_EQ(Wrapped(g, "ConvMaxPool"), 1);
  EXPECT_EQ(Wrapped(g, "MaxPool"), 1);  // the second layer's
  EXPECT_EQ(Wrapped(g, "FusedConv"), 1);
  for (const graph::Node& n : g.nodes)
    if (n.GetString("op", "") == "ConvMaxPool") {
      EXPECT_EQ(n.GetString("activation", ""), "Relu");
      EXPECT_EQ(n.GetInts("pool_kernel_shape", {}), (std::vector<int64_t>{2, 2}));
      EXPECT_EQ(n.outputs[0], "p1__nhwc");
    }
}

TEST(FuseConvPoolTest, LeavesOtherConvolutionsAlone) {
  // 4 input channels: 36 taps, more than the kernel takes.
  GraphBuilder wide = TwoLayers(4);
  wide.Output("y");
  graph::Graph g = CheckPass(wide.model(), {{"x", RandomF({2, 4, 16, 16}, 6)}}, LayoutThenFuse);
  EXPECT_EQ(Wrapped(g, "ConvMaxPool"), 0);

  // The (fused) convolution's output is also a graph output: it must stay.
  GraphBuilder shared = TwoLayers(1);
  shared.Output("y").Output("r1");
  g = CheckPass(shared.model(), {{"x", RandomF({2, 1, 16, 16}, 7)}}, LayoutThenFuse);
  EXPECT_EQ(Wrapped(g, "ConvMaxPool"), 0);

  // A padded pool.
  GraphBuilder padded;
  padded.Input("x", {2, 1, 8, 8})
      .Constant("w", RandomF({8, 1, 3, 3}, 8))
      .Node("Conv", {"x", "w"}, {"c"})
      .Node("MaxPool", {"c"}, {"y"}, {{"kernel_shape", AInts({3, 3})}, {"pads", AInts({1, 1, 1, 1})}})
      .Output("y");
  g = CheckPass(padded.model(), {{"x", RandomF({2, 1, 8, 8}, 9)}}, LayoutThenFuse);
  EXPECT_EQ(Wrapped(g, "ConvMaxPool"), 0);
}

}  // namespace
}  // namespace strata::testing
