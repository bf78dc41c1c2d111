// ConvertToChannelsLast: convolution/pool regions run on [N, H, W, C] with Transposes only at the region's edges.
#include "ops/op.h"
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::ConvertToChannelsLast;

int Count(const graph::Graph& g, const std::string& op) {
  const auto counts = OpCounts(g);
  auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

TEST(ChannelsLastTest, ResidualBlockWithPoolsConcatAndHead) {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 3, 12, 12})
      .Constant("w1", RandomF({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("b1", RandomF({8}, 2))
      .Constant("w2", RandomF({8, 8, 3, 3}, 3, -0.3f, 0.3f))
      .Constant("w3", RandomF({4, 8, 1, 1}, 4, -0.5f, 0.5f))
      .Constant("half", F({0.5f}, {}))
      .Node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}})
      .Node("Conv", {"p1", "w2"}, {"c2"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Add", {"c2", "p1"}, {"s"})
      .Node("Mul", {"s", "half"}, {"m"})
      .Node("Conv", {"m", "w3"}, {"c3"})
      .Node("Concat", {"m", "c3"}, {"cat"}, {{"axis", AInt(1)}})
      .Node("GlobalAveragePool", {"cat"}, {"g"})
      .Node("Flatten", {"g"}, {"y"})
      .Output("y")
      .Output("c2");  // a region value that is also a graph output
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({2, 3, 12, 12}, 5)}}, ConvertToChannelsLast);
  // With a fast ChannelsLast kernel: 3 Conv + MaxPool + GAP wrapped; one Transpose in (x), two out (c2, g).
  const bool fast = !ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty();
  if (fast) {
    EXPECT_EQ(Count(g, "strata.ChannelsLast"), 5);
    EXPECT_EQ(Count(g, "Transpose"), 3);
    EXPECT_EQ(Count(g, "Conv"), 0);
  } else {
    EXPECT_EQ(Count(g, "strata.ChannelsLast"), 0);
  }
}

TEST(ChannelsLastTest, LeavesGraphsWithoutConvolutionsAlone) {
  GraphBuilder b;
  b.Input("x", {1, 3, 8, 8})
      .Node("MaxPool", {"x"}, {"p"}, {{"kernel_shape", AInts({2, 2})}})
      .Node("Relu", {"p"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({1, 3, 8, 8}, 1)}}, ConvertToChannelsLast);
  EXPECT_EQ(OpCounts(g), (std::map<std::string, int>{{"MaxPool", 1}, {"Relu", 1}}));
}

// A per-channel constant would broadcast along another axis once transposed: that Add stays outside the region.
TEST(ChannelsLastTest, NonScalarConstantsStayOutside) {
  GraphBuilder b;
  b.Input("x", {1, 4, 6, 6})
      .Constant("w", RandomF({4, 4, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("c", RandomF({4, 1, 1}, 2))
      .Node("Conv", {"x", "w"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Add", {"c1", "c"}, {"y"})
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({1, 4, 6, 6}, 3)}}, ConvertToChannelsLast);
  EXPECT_EQ(Count(g, "Add"), 1);
}

}  // namespace
}  // namespace strata::testing
