// FuseLayerNorm: the decomposed layer norm torch.onnx exports before opset 17 -> LayerNormalization, and where it
// must not fire.
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::AttributeMap;
using graph::FuseLayerNorm;

// x [batch, 6, 16] -> the decomposed layer norm over the last axis (opset 13 ReduceMean with axes attributes).
GraphBuilder Decomposed(std::vector<int64_t> axes = {-1}, float exponent = 2.0f) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 6, 16})
      .Constant("two", F({exponent}, {}))
      .Constant("eps", F({1e-5f}, {}))
      .Node("ReduceMean", {"x"}, {"mean"}, {{"axes", AInts({-1})}}, 13)
      .Node("Sub", {"x", "mean"}, {"d"}, {}, 13)
      .Node("Pow", {"d", "two"}, {"d2"}, {}, 13)
      .Node("ReduceMean", {"d2"}, {"var"}, {{"axes", AInts(axes)}}, 13)
      .Node("Add", {"var", "eps"}, {"ve"}, {}, 13)
      .Node("Sqrt", {"ve"}, {"sd"}, {}, 13)
      .Node("Div", {"d", "sd"}, {"n"}, {}, 13);
  return b;
}

const std::vector<std::pair<std::string, Tensor>>& Feeds() {
  static const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({3, 6, 16}, 7, -2.0f, 4.0f)}};
  return feeds;
}

TEST(FuseLayerNormTest, ScaleAndBias) {
  GraphBuilder b = Decomposed();
  b.Constant("gamma", RandomF({16}, 1))
      .Constant("beta", RandomF({16}, 2))
      .Node("Mul", {"n", "gamma"}, {"scaled"}, {}, 13)
      .Node("Add", {"scaled", "beta"}, {"y"}, {}, 13)
      .Node("Relu", {"y"}, {"out"})
      .Output("out");
  graph::Graph g = CheckPass(b.model(), Feeds(), FuseLayerNorm);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"LayerNormalization", 1}, {"Relu", 1}}));
}

TEST(FuseLayerNormTest, NoScaleNoBiasAndBroadcastGamma) {
  {
    GraphBuilder b = Decomposed();
    b.Output("n");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)),
              (std::map<std::string, int>{{"LayerNormalization", 1}}));
  }
  {  // gamma as [1, 1, 16] on the left of the Mul, axes given as the positive last axis
    GraphBuilder b = Decomposed({2});
    b.Constant("gamma", RandomF({1, 1, 16}, 1)).Node("Mul", {"gamma", "n"}, {"y"}, {}, 13).Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)),
              (std::map<std::string, int>{{"LayerNormalization", 1}}));
  }
}

TEST(FuseLayerNormTest, DoesNotFireWhenItWouldChangeSemantics) {
  const std::map<std::string, int> unfused = {{"Add", 1},        {"Div", 1},  {"Pow", 1},
                                              {"ReduceMean", 2}, {"Sqrt", 1}, {"Sub", 1}};
  {  // the centred value is a graph output too
    GraphBuilder b = Decomposed();
    b.Output("n").Output("d");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)), unfused);
  }
  {  // the variance is taken over another axis
    GraphBuilder b = Decomposed({1});
    b.Output("n");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)), unfused);
  }
  {  // not a square
    GraphBuilder b = Decomposed({-1}, 3.0f);
    b.Output("n");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)), unfused);
  }
  {  // gamma varies along another axis: the Mul stays outside
    GraphBuilder b = Decomposed();
    b.Constant("gamma", RandomF({6, 1}, 1)).Node("Mul", {"n", "gamma"}, {"y"}, {}, 13).Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), Feeds(), FuseLayerNorm)),
              (std::map<std::string, int>{{"LayerNormalization", 1}, {"Mul", 1}}));
  }
}

}  // namespace
}  // namespace strata::testing
