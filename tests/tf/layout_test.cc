// tf::SinkLayoutTransposes: the NHWC<->NCHW Transposes the SavedModel importer puts around convolutions go away, the
// batch-norm arithmetic folds into the convolution, and the graph computes what it computed before (reference
// kernels on both).
#include <gtest/gtest.h>

#include <cmath>

#include "tf/layout.h"

namespace strata::tf {
namespace {

graph::Node MakeNode(std::string op, std::vector<std::string> in, std::string out, graph::AttributeMap attrs = {}) {
  graph::Node n;
  n.name = out + "_node";
  n.op_type = std::move(op);
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  n.attrs = std::move(attrs);
  return n;
}

Tensor Ramp(Shape s, float scale, float offset) {
  Tensor t = Tensor::Empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::sin(0.37f * i) * scale + offset;
  return t;
}

int Count(const graph::Graph& g, std::string_view op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

// x NHWC -> [to NCHW, Conv, to NHWC] -> Sub/Mul/Add per-channel (batch norm) -> Relu -> Add residual of a second conv
// branch -> [to NCHW, MaxPool, to NHWC] -> Clip (Relu6) -> ReduceMean over H, W -> y [N, C]; plus the NHWC value
// after the Relu as a second output (it must keep its layout).
graph::Model Imported() {
  using A = graph::Attribute;
  graph::Model m;
  m.opset_imports[""] = 17;
  graph::Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat32, PartialShape(), ""});
  g.initializers["w1"] = Ramp(Shape({4, 3, 3, 3}), 0.5f, 0.f);
  g.initializers["w2"] = Ramp(Shape({4, 3, 1, 1}), 0.7f, 0.1f);
  g.initializers["mean"] = Ramp(Shape({4}), 0.3f, 0.2f);
  g.initializers["scale"] = Ramp(Shape({4}), 0.4f, 1.f);
  g.initializers["beta"] = Ramp(Shape({1, 1, 4}), 0.2f, -0.1f);
  g.initializers["lo"] = Tensor::Scalar<float>(0.f);
  g.initializers["hi"] = Tensor::Scalar<float>(0.6f);
  const A to_nchw = A::Ints({0, 3, 1, 2}), to_nhwc = A::Ints({0, 2, 3, 1});
  g.nodes.push_back(MakeNode("Transpose", {"x"}, "xn", {{"perm", to_nchw}}));
  g.nodes.push_back(MakeNode("Conv", {"xn", "w1"}, "c1", {{"pads", A::Ints({1, 1, 1, 1})}}));
  g.nodes.push_back(MakeNode("Transpose", {"c1"}, "c1h", {{"perm", to_nhwc}}));
  g.nodes.push_back(MakeNode("Sub", {"c1h", "mean"}, "bn0"));
  g.nodes.push_back(MakeNode("Mul", {"bn0", "scale"}, "bn1"));
  g.nodes.push_back(MakeNode("Add", {"bn1", "beta"}, "bn2"));
  g.nodes.push_back(MakeNode("Relu", {"bn2"}, "r"));
  g.nodes.push_back(MakeNode("Transpose", {"x"}, "xn2", {{"perm", to_nchw}}));
  g.nodes.push_back(MakeNode("Conv", {"xn2", "w2"}, "c2"));
  g.nodes.push_back(MakeNode("Transpose", {"c2"}, "c2h", {{"perm", to_nhwc}}));
  g.nodes.push_back(MakeNode("Add", {"r", "c2h"}, "sum"));
  g.nodes.push_back(MakeNode("Transpose", {"sum"}, "sumn", {{"perm", to_nchw}}));
  g.nodes.push_back(MakeNode("MaxPool", {"sumn"}, "p", {{"kernel_shape", A::Ints({2, 2})}, {"strides", A::Ints({2, 2})}}));
  g.nodes.push_back(MakeNode("Transpose", {"p"}, "ph", {{"perm", to_nhwc}}));
  g.nodes.push_back(MakeNode("Clip", {"ph", "lo", "hi"}, "q"));
  g.nodes.push_back(MakeNode("ReduceMean", {"q"}, "y", {{"axes", A::Ints({1, 2})}, {"keepdims", A::Int(0)}}));
  g.outputs.push_back({"y", DType::kFloat32, PartialShape(), ""});
  g.outputs.push_back({"r", DType::kFloat32, PartialShape(), ""});
  return m;
}

TEST(LayoutTest, TransposesSinkAndCancelBatchNormFoldsValuesUnchanged) {
  graph::Model before = Imported();
  graph::Model after = Imported();
  ASSERT_TRUE(SinkLayoutTransposes(&after.graph).ok());
  // The input's two Transposes and the one that recreates the NHWC output 'r' remain; no per-channel arithmetic.
  EXPECT_EQ(Count(after.graph, "Transpose"), 3);
  EXPECT_EQ(Count(after.graph, "Mul"), 0);
  EXPECT_EQ(Count(after.graph, "Sub"), 0);
  EXPECT_EQ(Count(after.graph, "Conv"), 2);
  const Tensor x = Ramp(Shape({2, 6, 6, 3}), 1.f, 0.05f);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(graph::RunReference(before, {{"x", x}}, &want).ok());
  Status s = graph::RunReference(after, {{"x", x}}, &got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(got.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << k;
    const auto a = got[k].ToVector<float>(), b = want[k].ToVector<float>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1.f + std::fabs(b[i]))) << k << " " << i;
  }
}

TEST(LayoutTest, LeavesOtherGraphsAlone) {
  graph::Model m;
  m.opset_imports[""] = 17;
  m.graph.inputs.push_back({"x", DType::kFloat32, PartialShape(), ""});
  m.graph.nodes.push_back(MakeNode("Relu", {"x"}, "y"));
  m.graph.outputs.push_back({"y", DType::kFloat32, PartialShape(), ""});
  ASSERT_TRUE(SinkLayoutTransposes(&m.graph).ok());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].inputs[0], "x");
}

}  // namespace
}  // namespace strata::tf
