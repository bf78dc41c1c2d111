// FuseElementwise: binary op + binary ops + activations -> strata.FusedElementwise, and where it must not fire.
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::FuseElementwise;

const std::vector<std::pair<std::string, Tensor>> kFeeds = {{"x", RandomF({2, 5, 8}, 1)},
                                                            {"s", RandomF({2, 5, 1}, 2, 0.5f, 2.0f)}};

// The tail of a decomposed LayerNorm: (x / s) * gamma + beta, then an activation.
TEST(FuseElementwiseTest, LayerNormTail) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 5, 8})
      .Input("s", {Dim::Symbol("batch"), 5, 1})
      .Constant("gamma", RandomF({8}, 3))
      .Constant("beta", RandomF({8}, 4))
      .Node("Div", {"x", "s"}, {"d"})
      .Node("Mul", {"gamma", "d"}, {"m"})  // the running value on the right of a Mul
      .Node("Add", {"m", "beta"}, {"a"})
      .Node("Relu", {"a"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), kFeeds, FuseElementwise);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedElementwise", 1}}));
}

TEST(FuseElementwiseTest, AddThenSqrtAndLeakyRelu) {
  GraphBuilder b;
  b.Input("x", {2, 5, 8})
      .Constant("eps", F({1e-5f}, {}))
      .Node("Abs", {"x"}, {"ax"})
      .Node("Add", {"ax", "eps"}, {"a"})
      .Node("Sqrt", {"a"}, {"r"})
      .Node("LeakyRelu", {"r"}, {"y"}, {{"alpha", AFloat(0.2f)}})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {kFeeds[0]}, FuseElementwise);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"Abs", 1}, {"strata.FusedElementwise", 1}}));
}

// Shapes that grow along the chain, and unknown shapes: the fused op broadcasts every step as the ONNX ops do.
TEST(FuseElementwiseTest, GrowingAndUnknownShapes) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("n"), 1})
      .Input("s", {1, 4})
      .Input("c", {Dim::Symbol("m"), 1, 1})
      .Node("Add", {"x", "s"}, {"d"})  // both operands broadcast
      .Node("Mul", {"d", "c"}, {"e"})  // the running value grows
      .Node("Sigmoid", {"e"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(
      b.model(), {{"x", RandomF({3, 1}, 1)}, {"s", RandomF({1, 4}, 2)}, {"c", RandomF({2, 1, 1}, 3)}}, FuseElementwise);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedElementwise", 1}}));
}

TEST(FuseElementwiseTest, DoesNotFireWhenItWouldChangeSemantics) {
  {  // The running value on the right of a Sub.
    GraphBuilder b;
    b.Input("x", {2, 5, 8})
        .Input("s", {2, 5, 1})
        .Constant("c", RandomF({8}, 5))
        .Node("Div", {"x", "s"}, {"d"})
        .Node("Sub", {"c", "d"}, {"y"})
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseElementwise)),
              (std::map<std::string, int>{{"Div", 1}, {"Sub", 1}}));
  }
  {  // The intermediate is a graph output.
    GraphBuilder b;
    b.Input("x", {2, 5, 8})
        .Input("s", {2, 5, 1})
        .Node("Div", {"x", "s"}, {"d"})
        .Node("Relu", {"d"}, {"y"})
        .Output("y")
        .Output("d");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), kFeeds, FuseElementwise)),
              (std::map<std::string, int>{{"Div", 1}, {"Relu", 1}}));
  }
  {  // float64.
    GraphBuilder b;
    b.Input("x", {3}, DType::kFloat64)
        .Input("s", {3}, DType::kFloat64)
        .Node("Add", {"x", "s"}, {"d"})
        .Node("Relu", {"d"}, {"y"})
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"x", D({1, -2, 3}, {3})}, {"s", D({-4, 1, 0}, {3})}}, FuseElementwise)),
              (std::map<std::string, int>{{"Add", 1}, {"Relu", 1}}));
  }
}

}  // namespace
}  // namespace strata::testing
