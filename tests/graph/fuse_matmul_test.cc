// FuseMatMulActivation: MatMul + bias Add + activation -> strata.FusedMatMul, and where it must not fire.
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::FuseMatMulActivation;

GraphBuilder Linear(std::vector<int64_t> bias_shape = {6}) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 5, 8})
      .Constant("w", RandomF({8, 6}, 1))
      .Constant("bias", RandomF(bias_shape, 2))
      .Node("MatMul", {"x", "w"}, {"mm"})
      .Node("Add", {"mm", "bias"}, {"lin"});
  return b;
}

TEST(FuseMatMulTest, BiasAndActivation) {
  GraphBuilder b = Linear();
  b.Node("Relu", {"lin"}, {"y"}).Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({3, 5, 8}, 3)}}, FuseMatMulActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedMatMul", 1}}));
}

TEST(FuseMatMulTest, BiasOnTheLeftAndClip) {
  GraphBuilder b;
  b.Input("x", {4, 8})
      .Constant("w", RandomF({8, 6}, 1))
      .Constant("bias", RandomF({1, 6}, 2))
      .Constant("lo", F({0}, {}))
      .Constant("hi", F({0.5f}, {}))
      .Node("MatMul", {"x", "w"}, {"mm"})
      .Node("Add", {"bias", "mm"}, {"lin"})
      .Node("Clip", {"lin", "lo", "hi"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({4, 8}, 3)}}, FuseMatMulActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedMatMul", 1}}));
}

TEST(FuseMatMulTest, ActivationOnly) {
  GraphBuilder b;
  b.Input("a", {4, 8}).Input("c", {8, 6}).Node("MatMul", {"a", "c"}, {"mm"}).Node("Tanh", {"mm"}, {"y"}).Output("y");
  graph::Graph g = CheckPass(b.model(), {{"a", RandomF({4, 8}, 3)}, {"c", RandomF({8, 6}, 4)}}, FuseMatMulActivation);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"strata.FusedMatMul", 1}}));
}

TEST(FuseMatMulTest, DoesNotFireWhenItWouldChangeSemantics) {
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({3, 5, 8}, 3)}};
  {  // The product is a graph output too.
    GraphBuilder b = Linear();
    b.Output("lin").Output("mm");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), feeds, FuseMatMulActivation)),
              (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}}));
  }
  {  // The product is read by another node.
    GraphBuilder b = Linear();
    b.Node("Relu", {"mm"}, {"r"}).Output("lin").Output("r");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), feeds, FuseMatMulActivation)),
              (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}, {"Relu", 1}}));
  }
  {  // The addend would broadcast the product to a bigger shape.
    GraphBuilder b = Linear({2, 1, 1, 6});
    b.Output("lin");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), feeds, FuseMatMulActivation)),
              (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}}));
  }
  {  // The addend's leading dim may not match a symbolic batch.
    GraphBuilder b = Linear({4, 5, 6});
    b.Output("lin");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"x", RandomF({4, 5, 8}, 3)}}, FuseMatMulActivation)),
              (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}}));
  }
  {  // float64: no fast path to fuse for.
    GraphBuilder b;
    b.Input("a", {2, 3}, DType::kFloat64)
        .Constant("w", D({1, 2, 3, 4, 5, 6}, {3, 2}))
        .Node("MatMul", {"a", "w"}, {"mm"})
        .Node("Relu", {"mm"}, {"y"})
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"a", D({1, -2, 3, -4, 5, -6}, {2, 3})}}, FuseMatMulActivation)),
              (std::map<std::string, int>{{"MatMul", 1}, {"Relu", 1}}));
  }
  {  // Clip with a runtime bound.
    GraphBuilder b;
    b.Input("a", {4, 8})
        .Input("hi", {})
        .Constant("w", RandomF({8, 6}, 1))
        .Node("MatMul", {"a", "w"}, {"mm"})
        .Node("Clip", {"mm", "", "hi"}, {"y"})
        .Output("y");
    EXPECT_EQ(OpCounts(CheckPass(b.model(), {{"a", RandomF({4, 8}, 3)}, {"hi", F({0.1f}, {})}}, FuseMatMulActivation)),
              (std::map<std::string, int>{{"Clip", 1}, {"MatMul", 1}}));
  }
}

}  // namespace
}  // namespace strata::testing
