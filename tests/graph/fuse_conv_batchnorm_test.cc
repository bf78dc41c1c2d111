// FuseConvBatchNorm: an inference BatchNormalization folds into the Conv before it.
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::FuseConvBatchNorm;

GraphBuilder ConvBn(bool conv_bias, graph::AttributeMap bn_attrs = {}) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 3, 6, 6})
      .Constant("w", RandomF({5, 3, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("scale", RandomF({5}, 2, 0.5f, 1.5f))
      .Constant("shift", RandomF({5}, 3))
      .Constant("mean", RandomF({5}, 4))
      .Constant("var", RandomF({5}, 5, 0.2f, 2.0f));
  std::vector<std::string> ins = {"x", "w"};
  if (conv_bias) {
    b.Constant("b", RandomF({5}, 6));
    ins.push_back("b");
  }
  b.Node("Conv", ins, {"c"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, std::move(bn_attrs), 15)
      .Output("y");
  return b;
}

const std::vector<std::pair<std::string, Tensor>> kFeeds = {{"x", RandomF({2, 3, 6, 6}, 7)}};

TEST(FuseConvBatchNormTest, Folds) {
  EXPECT_EQ(OpCounts(CheckPass(ConvBn(true, {{"epsilon", AFloat(1e-3f)}}).model(), kFeeds, FuseConvBatchNorm)),
            (std::map<std::string, int>{{"Conv", 1}}));
  EXPECT_EQ(OpCounts(CheckPass(ConvBn(false).model(), kFeeds, FuseConvBatchNorm)),
            (std::map<std::string, int>{{"Conv", 1}}));
}

TEST(FuseConvBatchNormTest, DoesNotFireWhenItWouldChangeSemantics) {
  {  // Training mode.
    GraphBuilder b = ConvBn(true, {{"training_mode", AInt(1)}});
    graph::Model m = b.model();
    m.graph.nodes[1].outputs = {"y", "rm", "rv"};
    graph::Model rewritten = m;
    ASSERT_TRUE(FuseConvBatchNorm(&rewritten.graph).ok());
    EXPECT_EQ(OpCounts(rewritten.graph), (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));
  }
  {  // The conv output is a graph output too.
    GraphBuilder b = ConvBn(true);
    b.Output("c");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseConvBatchNorm)),
              (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));
  }
  {  // Non-constant BN parameters.
    GraphBuilder b;
    b.Input("x", {1, 3, 4, 4})
        .Input("scale", {3})
        .Constant("w", RandomF({3, 3, 1, 1}, 1))
        .Constant("shift", RandomF({3}, 3))
        .Constant("mean", RandomF({3}, 4))
        .Constant("var", RandomF({3}, 5, 0.2f, 2.0f))
        .Node("Conv", {"x", "w"}, {"c"})
        .Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {}, 15)
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"x", RandomF({1, 3, 4, 4}, 8)}, {"scale", RandomF({3}, 9)}},
                                 FuseConvBatchNorm)),
              (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));
  }
  {  // Non-constant conv weights.
    GraphBuilder b;
    b.Input("x", {1, 3, 4, 4})
        .Input("w", {3, 3, 1, 1})
        .Constant("scale", RandomF({3}, 2))
        .Constant("shift", RandomF({3}, 3))
        .Constant("mean", RandomF({3}, 4))
        .Constant("var", RandomF({3}, 5, 0.2f, 2.0f))
        .Node("Conv", {"x", "w"}, {"c"})
        .Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {}, 15)
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"x", RandomF({1, 3, 4, 4}, 8)}, {"w", RandomF({3, 3, 1, 1}, 9)}},
                                 FuseConvBatchNorm)),
              (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));
  }
}

}  // namespace
}  // namespace strata::testing
