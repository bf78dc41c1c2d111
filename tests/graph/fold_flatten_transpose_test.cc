// FoldFlattenTranspose: the Transpose back to NCHW in front of a CNN's Flatten + dense layer is replaced by a
// permutation of the dense layer's constant weight rows.
#include "ops/op.h"
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

Status Pipeline(graph::Graph* g) {
  STRATA_RETURN_IF_ERROR(graph::ConvertToChannelsLast(g));
  return graph::FoldFlattenTranspose(g);
}

// Transposes back to NCHW (perm 0,3,1,2) left in the graph.
int ToNchw(const graph::Graph& g) {
  int n = 0;
  for (const graph::Node& node : g.nodes)
    n += node.op_type == "Transpose" && node.GetInts("perm", {}) == std::vector<int64_t>{0, 3, 1, 2};
  return n;
}

bool ChannelsLastRuns() { return !ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty(); }

// x [batch, 2, 12, 12] -> Conv 3x3 (5 channels) -> Relu -> MaxPool 2 -> Flatten (5*5*5 = 125) -> `head`.
GraphBuilder Cnn() {
  GraphBuilder b;
  b.Input("x", {Dim::Symbol("batch"), 2, 12, 12})
      .Constant("w", RandomF({5, 2, 3, 3}, 1, -0.5f, 0.5f))
      .Node("Conv", {"x", "w"}, {"c"})
      .Node("Relu", {"c"}, {"r"})
      .Node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}})
      .Node("Flatten", {"p"}, {"f"});
  return b;
}

TEST(FoldFlattenTransposeTest, GemmWithTransposedWeight) {
  GraphBuilder b = Cnn();
  b.Constant("wd", RandomF({7, 125}, 2)).Constant("bd", RandomF({7}, 3));
  b.Node("Gemm", {"f", "wd", "bd"}, {"y"}, {{"transB", AInt(1)}}).Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({3, 2, 12, 12}, 4)}}, Pipeline);
  EXPECT_EQ(ToNchw(g), 0);
}

TEST(FoldFlattenTransposeTest, MatMulAndGemmWithPlainWeight) {
  GraphBuilder mm = Cnn();
  mm.Constant("wd", RandomF({125, 6}, 5)).Node("MatMul", {"f", "wd"}, {"y"}).Output("y");
  graph::Graph g = CheckPass(mm.model(), {{"x", RandomF({2, 2, 12, 12}, 6)}}, Pipeline);
  EXPECT_EQ(ToNchw(g), 0);
  GraphBuilder gemm = Cnn();
  gemm.Constant("wd", RandomF({125, 6}, 7)).Node("Gemm", {"f", "wd"}, {"y"}).Output("y");
  g = CheckPass(gemm.model(), {{"x", RandomF({2, 2, 12, 12}, 8)}}, Pipeline);
  EXPECT_EQ(ToNchw(g), 0);
}

TEST(FoldFlattenTransposeTest, KeepsTheTransposeWhenOthersReadIt) {
  // The flattened value is also a graph output: its NCHW order must stay.
  GraphBuilder b = Cnn();
  b.Constant("wd", RandomF({125, 6}, 9)).Node("MatMul", {"f", "wd"}, {"y"}).Output("y").Output("f");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({2, 2, 12, 12}, 10)}}, Pipeline);
  EXPECT_EQ(ToNchw(g), ChannelsLastRuns() ? 1 : 0);
  // A weight that is a graph input (not a constant) cannot be permuted.
  GraphBuilder in = Cnn();
  in.Input("wd", {125, 6}).Node("MatMul", {"f", "wd"}, {"y"}).Output("y");
  g = CheckPass(in.model(), {{"x", RandomF({2, 2, 12, 12}, 11)}, {"wd", RandomF({125, 6}, 12)}}, Pipeline);
  EXPECT_EQ(ToNchw(g), ChannelsLastRuns() ? 1 : 0);
}

}  // namespace
}  // namespace strata::testing
