// FuseConvActivation: Conv [+ bias Add] [+ residual Add] [+ activation] -> strata.FusedConv, and where it must not
// fire.
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::FuseConvActivation;

// x [batch, 4, 6, 6] -> Conv 3x3 pad 1 (8 channels) as "c".
GraphBuilder ConvBase(bool bias = true) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 4, 6, 6}).Constant("w", RandomF({8, 4, 3, 3}, 1, -0.5f, 0.5f));
  std::vector<std::string> ins = {"x", "w"};
  if (bias) {
    b.Constant("b", RandomF({8}, 2));
    ins.push_back("b");
  }
  b.Node("Conv", ins, {"c"}, {{"pads", AInts({1, 1, 1, 1})}});
  return b;
}

const std::vector<std::pair<std::string, Tensor>> kFeeds = {{"x", RandomF({2, 4, 6, 6}, 3)}};

TEST(FuseConvTest, ConvRelu) {
  GraphBuilder b = ConvBase();
  b.Node("Relu", {"c"}, {"y"}).Output("y");
  graph::Graph g = CheckPass(b.model(), kFeeds, FuseConvActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedConv", 1}}));
}

TEST(FuseConvTest, ResidualAddAndRelu) {
  GraphBuilder b = ConvBase();
  b.Constant("w2", RandomF({8, 8, 1, 1}, 4, -0.5f, 0.5f))
      .Node("Relu", {"c"}, {"r"})
      .Node("Conv", {"r", "w2"}, {"c2"})
      .Node("Add", {"c2", "r"}, {"s"})  // residual: the other operand is the block's input
      .Node("Relu", {"s"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), kFeeds, FuseConvActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedConv", 2}}));
}

// A ResNet downsample block: both convolutions could take the Add; the first one processed does, and the other
// must not absorb the (already rewritten) Add again.
TEST(FuseConvTest, TwoConvsIntoOneAdd) {
  GraphBuilder b = ConvBase();
  b.Constant("w2", RandomF({8, 8, 3, 3}, 4, -0.5f, 0.5f))
      .Constant("wd", RandomF({8, 4, 1, 1}, 5, -0.5f, 0.5f))
      .Node("Relu", {"c"}, {"r"})
      .Node("Conv", {"r", "w2"}, {"c2"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Conv", {"x", "wd"}, {"down"})
      .Node("Add", {"c2", "down"}, {"s"})
      .Node("Relu", {"s"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), kFeeds, FuseConvActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"Conv", 1}, {"strata.FusedConv", 2}}));
}

TEST(FuseConvTest, BiasAddAndClip) {
  GraphBuilder b = ConvBase(/*bias=*/false);
  b.Constant("cb", RandomF({1, 8, 1, 1}, 5))
      .Constant("lo", F({0}, {}))
      .Constant("hi", F({6}, {}))
      .Node("Add", {"c", "cb"}, {"a"})
      .Node("Clip", {"a", "lo", "hi"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), kFeeds, FuseConvActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedConv", 1}}));
}

TEST(FuseConvTest, ConvTransposeRelu) {
  GraphBuilder b;
  b.Input("x", {1, 4, 5, 5})
      .Constant("w", RandomF({4, 3, 3, 3}, 6, -0.5f, 0.5f))
      .Node("ConvTranspose", {"x", "w"}, {"c"}, {{"strides", AInts({2, 2})}})
      .Node("LeakyRelu", {"c"}, {"y"}, {{"alpha", AFloat(0.2f)}})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({1, 4, 5, 5}, 7)}}, FuseConvActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedConv", 1}}));
}

TEST(FuseConvTest, DoesNotFireWhenItWouldChangeSemantics) {
  {  // The conv output is also a graph output.
    GraphBuilder b = ConvBase();
    b.Node("Relu", {"c"}, {"y"}).Output("y").Output("c");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseConvActivation)),
              (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
  }
  {  // The conv output has two readers.
    GraphBuilder b = ConvBase();
    b.Node("Relu", {"c"}, {"y"}).Node("Sigmoid", {"c"}, {"z"}).Output("y").Output("z");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseConvActivation)),
              (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}, {"Sigmoid", 1}}));
  }
  {  // A residual that broadcasts (per-channel, but the conv already has a bias) is not a sum post-op.
    GraphBuilder b = ConvBase();
    b.Input("z", {1, 8, 1, 1}).Node("Add", {"c", "z"}, {"y"}).Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {kFeeds[0], {"z", RandomF({1, 8, 1, 1}, 8)}}, FuseConvActivation)),
              (std::map<std::string, int>{{"Add", 1}, {"Conv", 1}}));
  }
  {  // An activation the fused op cannot carry.
    GraphBuilder b = ConvBase();
    b.Node("Softsign", {"c"}, {"y"}).Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseConvActivation)),
              (std::map<std::string, int>{{"Conv", 1}, {"Softsign", 1}}));
  }
}

}  // namespace
}  // namespace strata::testing
