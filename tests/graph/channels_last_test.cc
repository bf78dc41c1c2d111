// ConvertToChannelsLast: convolution/pool regions run on [N, H, W, C] with Transposes only at the region's edges.
#include <algorithm>

#include "graph/autodiff.h"
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

// Keras's ZeroPadding2D before a stride-2 depthwise layer (asymmetric pads on H and W) and a reflect Pad join the
// region with their pads permuted to [N, H, W, C], as do a ReduceSumTo and an Expand to 4-D shapes, constant or
// computed (squeeze-and-excite's and global pooling's gradients; a computed shape goes through a Gather); a Pad with
// an axes input stays out. Numbers unchanged
// (CheckPass).
TEST(ChannelsLastTest, PadsJoinTheRegionWithPermutedPads) {
  GraphBuilder b;
  b.Input("x", {2, 3, 9, 8})
      .Constant("w1", RandomF({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("wd", RandomF({8, 1, 3, 3}, 2, -0.5f, 0.5f))
      .Constant("w3", RandomF({8, 8, 1, 1}, 3, -0.5f, 0.5f))
      .Constant("zero_pad", I64({0, 0, 0, 0, 0, 0, 1, 1}, {8}))
      .Constant("reflect_pad", I64({0, 0, 1, 2, 0, 0, 2, 1}, {8}))
      .Constant("value", F({0.5f}, {}))
      .Node("Conv", {"x", "w1"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("Pad", {"r1", "zero_pad", "value"}, {"p1"})
      .Node("Conv", {"p1", "wd"}, {"c2"}, {{"strides", AInts({2, 2})}, {"group", AInt(8)}})
      .Node("Pad", {"c2", "reflect_pad"}, {"p2"}, {{"mode", AString("reflect")}})
      .Node("Conv", {"p2", "w3"}, {"c3"})
      .Constant("per_channel", I64({2, 8, 1, 1}, {4}))
      .Node("Shape", {"c3"}, {"full"})  // computed: permuted by a Gather
      .Node("ReduceSumTo", {"c3", "per_channel"}, {"sums"}, {}, 1)
      .Node("Expand", {"sums", "full"}, {"e"})
      .Node("Mul", {"c3", "e"}, {"y"})
      .Output("y");
  graph::Model model = b.model();
  model.graph.nodes[model.graph.nodes.size() - 3].domain = "strata";
  model.opset_imports["strata"] = 1;
  graph::Graph g = CheckPass(model, {{"x", RandomF({2, 3, 9, 8}, 5)}}, ConvertToChannelsLast);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  EXPECT_EQ(Count(g, "Pad"), 2);
  EXPECT_EQ(Count(g, "Transpose"), 2);  // x in, y out
  for (const graph::Node& n : g.nodes) {
    if (n.op_type == "ReduceSumTo") {
      const Tensor& shape = g.initializers.at(n.inputs[1]);
      const std::vector<int64_t> got(shape.data<int64_t>(), shape.data<int64_t>() + 4);
      EXPECT_EQ(got, (std::vector<int64_t>{2, 1, 1, 8}));
    }
    if (n.op_type != "Pad") continue;
    const Tensor& pads = g.initializers.at(n.inputs[1]);
    const std::vector<int64_t> got(pads.data<int64_t>(), pads.data<int64_t>() + 8);
    if (n.outputs[0].rfind("p1", 0) == 0) {
      EXPECT_EQ(got, (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 0}));
    } else {
      EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 0, 0, 2, 1, 0}));
    }
  }
  // With an axes input the Pad stays channels-first: Transposes around it.
  graph::Model with_axes = model;
  with_axes.graph.initializers["axes"] = I64({0, 1, 2, 3}, {4});
  for (graph::Node& n : with_axes.graph.nodes)
    if (n.op_type == "Pad" && n.outputs[0] == "p1") n.inputs = {"r1", "zero_pad", "value", "axes"};
  with_axes.opset_imports[""] = 18;
  for (graph::Node& n : with_axes.graph.nodes) n.opset = 18;
  graph::Graph h = CheckPass(with_axes, {{"x", RandomF({2, 3, 9, 8}, 5)}}, ConvertToChannelsLast);
  EXPECT_EQ(Count(h, "Transpose"), 4);
}

// The training graph of a MobileNetV3 / EfficientNetV2 style block: 1x1 expansion, hard swish, ZeroPadding2D, a
// stride-2 depthwise layer, squeeze-and-excite (global pool, two 1x1 layers, hard sigmoid, broadcast Mul), swish
// (x * sigmoid(x)), 1x1 projection. With its gradients (HardSwishGrad, HardSigmoidGrad, ReduceSumTo and Expand to
// computed shapes, the Pad of the gradient, depthwise ConvBackwardFilter), the whole backward pass stays in the
// region: Transposes only for the input, the loss's operand and the weight gradients' plain consumers. Numbers
// against the reference interpreter, before and after the pass and through the Session with every fast kernel
// (CheckPass).
TEST(ChannelsLastTest, SqueezeExciteBlockTrainsInOneRegion) {
  GraphBuilder b;
  b.Input("x", {2, 8, 10, 10})
      .Constant("w_exp", RandomF({16, 8, 1, 1}, 1, -0.5f, 0.5f))
      .Constant("w_dw", RandomF({16, 1, 3, 3}, 2, -0.5f, 0.5f))
      .Constant("w_se1", RandomF({4, 16, 1, 1}, 3, -0.5f, 0.5f))
      .Constant("w_se2", RandomF({16, 4, 1, 1}, 4, -0.5f, 0.5f))
      .Constant("w_proj", RandomF({8, 16, 1, 1}, 5, -0.5f, 0.5f))
      .Constant("zero_pad", I64({0, 0, 0, 0, 0, 0, 1, 1}, {8}))
      .Constant("r", RandomF({2, 8, 5, 5}, 6))
      .Node("Conv", {"x", "w_exp"}, {"e"})
      .Node("HardSwish", {"e"}, {"hs"})
      .Node("Pad", {"hs", "zero_pad"}, {"p"})
      .Node("Conv", {"p", "w_dw"}, {"d"}, {{"strides", AInts({2, 2})}, {"group", AInt(16)}})
      .Node("GlobalAveragePool", {"d"}, {"g"})
      .Node("Conv", {"g", "w_se1"}, {"s1"})
      .Node("Relu", {"s1"}, {"s1r"})
      .Node("Conv", {"s1r", "w_se2"}, {"s2"})
      .Node("HardSigmoid", {"s2"}, {"s"}, {{"alpha", AFloat(1.0f / 6)}, {"beta", AFloat(0.5f)}})
      .Node("Mul", {"d", "s"}, {"se"})
      .Node("Sigmoid", {"se"}, {"sig"})
      .Node("Mul", {"se", "sig"}, {"sw"})
      .Node("Conv", {"sw", "w_proj"}, {"y"})
      .Node("Mul", {"y", "r"}, {"m"})
      .Node("ReduceSum", {"m"}, {"loss"}, {{"keepdims", AInt(0)}});
  graph::Model model = b.model();
  model.opset_imports["strata"] = 1;
  std::map<std::string, std::string> grads;
  const std::vector<std::string> params = {"w_exp", "w_dw", "w_se1", "w_se2", "w_proj"};
  ASSERT_TRUE(graph::BuildGradients(&model.graph, "loss", params, {}, &grads).ok());
  for (const std::string& w : params) model.graph.outputs.push_back({grads.at(w), DType::kUndefined, {}});
  const std::map<std::string, int> before = OpCounts(model.graph);
  EXPECT_EQ(before.count("strata.HardSwishGrad"), 1u);
  EXPECT_EQ(before.count("strata.HardSigmoidGrad"), 1u);
  EXPECT_EQ(before.count("Where"), 0u);
  // Constants folded first, as in the default passes (the gradient Pad's negated pads).
  auto passes = [](graph::Graph* h) -> Status {
    STRATA_RETURN_IF_ERROR(graph::FoldConstants(h));
    return ConvertToChannelsLast(h);
  };
  graph::Graph g = CheckPass(model, {{"x", RandomF({2, 8, 10, 10}, 10)}}, passes, 1e-3, 1e-4);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  // Into the region: x and the loss's gradient; out of it: y (the loss's Mul is outside: r is not a scalar).
  EXPECT_EQ(Count(g, "Transpose"), 3);
  int dw_filter_grads = 0;
  for (const graph::Node& n : g.nodes)
    dw_filter_grads +=
        n.op_type == "ChannelsLast" && n.GetString("op", "") == "ConvBackwardFilter" && n.GetInt("group", 1) == 16;
  EXPECT_EQ(dw_filter_grads, 1);
}

// The training graph of an EfficientNetV2 style block with an unknown batch: strata.Swish, squeeze-and-excite whose
// pooled value goes through Flatten and a Reshape, stochastic depth's per-sample scale (ConstantOfShape of the batch
// size and [1, 1, 1], then strata.SeededDropout, as nn::Dropout writes it: typed only as 4-D) times the block, and a
// residual Add. The Swish and its SwishGrad, the per-sample Muls and the Add, global pooling's gradient (an Expand,
// to the computed Shape of a region value, of the Reshape of dY divided by the pooled area, a ratio of Sizes, Size
// reading the channels-last value) all stay in the region: the only full-size Transposes are x in, y out and the
// loss gradient in.
TEST(ChannelsLastTest, SwishStochasticDepthAndPoolingGradientStayInTheRegion) {
  GraphBuilder b;
  graph::AttributeMap one;
  one["value"] = graph::Attribute::TensorValue(Tensor::FromVector<float>({1.0f}, Shape{1}));
  b.Input("x", {Dim::Symbol("batch"), 8, 6, 6})
      .Input("seed", {}, DType::kInt64)
      .Constant("w1", RandomF({8, 8, 3, 3}, 1, -0.3f, 0.3f))
      .Constant("w_se", RandomF({8, 8, 1, 1}, 2, -0.5f, 0.5f))
      .Constant("w2", RandomF({8, 8, 3, 3}, 3, -0.3f, 0.3f))
      .Constant("zero", I64({0}, {1}))
      .Constant("first", I64({1}, {1}))
      .Constant("ones3", I64({1, 1, 1}, {3}))
      .Node("Conv", {"x", "w1"}, {"c"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Swish", {"c"}, {"sw"})
      .Node("GlobalAveragePool", {"sw"}, {"gp"})
      .Node("Flatten", {"gp"}, {"flat"})
      .Node("Shape", {"gp"}, {"gp_shape"})
      .Node("Reshape", {"flat", "gp_shape"}, {"u"})
      .Node("Conv", {"u", "w_se"}, {"se"})
      .Node("Sigmoid", {"se"}, {"gate"})
      .Node("Mul", {"sw", "gate"}, {"e"})
      .Node("Shape", {"e"}, {"e_shape"})
      .Node("Slice", {"e_shape", "zero", "first"}, {"batch"})
      .Node("Concat", {"batch", "ones3"}, {"mask_shape"}, {{"axis", AInt(0)}})
      .Node("ConstantOfShape", {"mask_shape"}, {"ones"}, one)
      .Node("SeededDropout", {"ones", "seed"}, {"scale", "mask"}, {{"rate", AFloat(0.5f)}}, 1)
      .Node("Mul", {"e", "scale"}, {"d"})
      .Node("Add", {"d", "c"}, {"r"})
      .Node("Conv", {"r", "w2"}, {"y"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("ReduceSum", {"y"}, {"loss"}, {{"keepdims", AInt(0)}});
  graph::Model model = b.model();
  model.opset_imports["strata"] = 1;
  for (graph::Node& n : model.graph.nodes)
    if (n.op_type == "Swish" || n.op_type == "SeededDropout") n.domain = "strata";
  std::map<std::string, std::string> grads;
  const std::vector<std::string> params = {"w1", "w_se", "w2"};
  ASSERT_TRUE(graph::BuildGradients(&model.graph, "loss", params, {}, &grads).ok());
  for (const std::string& w : params) model.graph.outputs.push_back({grads.at(w), DType::kUndefined, {}});
  const std::map<std::string, int> before = OpCounts(model.graph);
  EXPECT_EQ(before.count("strata.SwishGrad"), 1u);
  EXPECT_EQ(before.count("Size"), 1u);  // the pooled area, from Size(sw) / Size(gp): the batch is unknown
  auto passes = [](graph::Graph* h) -> Status {
    STRATA_RETURN_IF_ERROR(graph::FoldConstants(h));
    return ConvertToChannelsLast(h);
  };
  graph::Graph g = CheckPass(model, {{"x", RandomF({3, 8, 6, 6}, 10)}, {"seed", I64({7}, {})}}, passes, 1e-3, 1e-4);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  std::vector<std::string> transposes;
  for (const graph::Node& n : g.nodes)
    if (n.op_type == "Transpose") transposes.push_back(n.inputs[0] + " -> " + n.outputs[0]);
  // Full size: x in, y out, the loss gradient's Expand in. [N, C, 1, 1] views: gp out (to Flatten), u in (the SE
  // convolution), the SE gradient out (to the Reshapes) and back in (to the pooling gradient's Expand).
  EXPECT_EQ(transposes.size(), 7u) << ::testing::PrintToString(transposes);
  for (const std::string& t : transposes) {
    EXPECT_EQ(t.find("Swish"), std::string::npos) << t;
    EXPECT_EQ(t.find("sw ->"), std::string::npos) << t;
    EXPECT_EQ(t.find("ReduceSumTo"), std::string::npos) << t;
    EXPECT_NE(t.rfind("r ", 0), 0u) << t;
  }
}

// An elementwise op whose other operand is a computed one-element value (the mean gradient's divisor when the batch
// is not known at autodiff time) joins the region; a computed per-channel value does not.
TEST(ChannelsLastTest, ComputedScalarOperandsJoin) {
  GraphBuilder b;
  b.Input("x", {2, 4, 6, 6})
      .Input("k", {1})
      .Input("v", {4, 1, 1})
      .Constant("w", RandomF({4, 4, 3, 3}, 1, -0.5f, 0.5f))
      .Node("Conv", {"x", "w"}, {"c"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Div", {"c", "k"}, {"d"})
      .Node("Conv", {"d", "w"}, {"e"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Mul", {"e", "v"}, {"f"})
      .Node("Conv", {"f", "w"}, {"y"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Output("y");
  graph::Graph g =
      CheckPass(b.model(), {{"x", RandomF({2, 4, 6, 6}, 2)}, {"k", F({4}, {1})}, {"v", RandomF({4, 1, 1}, 3)}},
                ConvertToChannelsLast);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  // x in; e out to the Mul and its product back in; y out.
  EXPECT_EQ(Count(g, "Transpose"), 4);
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

// A training graph (two conv-relu-pool stages, their gradients from autodiff): the backward pass's pool gradients,
// convolution backward data/weights and ReluGrads join the forward region, so the activations they read need no
// Transpose back to NCHW; the weight gradients come out plain.
TEST(ChannelsLastTest, BackwardOpsJoinTheForwardRegion) {
  GraphBuilder b;
  const graph::AttributeMap pool = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}};
  b.Input("x", {2, 1, 14, 14})
      .Constant("w1", RandomF({4, 1, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("b1", RandomF({4}, 2))
      .Constant("w2", RandomF({6, 4, 3, 3}, 3, -0.3f, 0.3f))
      .Constant("b2", RandomF({6}, 4))
      .Constant("r", RandomF({2, 6, 2, 2}, 5))
      .Node("Conv", {"x", "w1", "b1"}, {"c1"})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("MaxPool", {"r1"}, {"p1"}, pool)
      .Node("Conv", {"p1", "w2", "b2"}, {"c2"})
      .Node("Relu", {"c2"}, {"r2"})
      .Node("MaxPool", {"r2"}, {"p2"}, pool)
      .Node("Mul", {"p2", "r"}, {"m"})
      .Node("ReduceSum", {"m"}, {"loss"}, {{"keepdims", AInt(0)}});
  graph::Model model = b.model();
  model.opset_imports["strata"] = 1;
  std::map<std::string, std::string> grads;
  ASSERT_TRUE(graph::BuildGradients(&model.graph, "loss", {"w1", "b1", "w2", "b2"}, {}, &grads).ok());
  for (const char* w : {"w1", "b1", "w2", "b2"}) model.graph.outputs.push_back({grads.at(w), DType::kUndefined, {}});
  const graph::Graph before = model.graph;
  ASSERT_EQ(OpCounts(before).at("strata.MaxPoolGrad"), 2);
  graph::Graph g = CheckPass(model, {{"x", RandomF({2, 1, 14, 14}, 6)}}, ConvertToChannelsLast);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  // Forward: 2 Conv + 2 MaxPool; backward: 2 MaxPoolGrad, 1 ConvBackwardData (p1's gradient), 2 ConvBackwardFilter.
  EXPECT_EQ(Count(g, "strata.ChannelsLast"), 9);
  EXPECT_EQ(Count(g, "strata.MaxPoolGrad"), 0);
  EXPECT_EQ(Count(g, "strata.ConvBackwardData"), 0);
  EXPECT_EQ(Count(g, "strata.ConvBackwardFilter"), 0);
  EXPECT_EQ(Count(g, "strata.ReluGrad"), 2);
  int filters_plain = 0;
  for (const graph::Node& n : g.nodes)
    if (n.op_type == "ChannelsLast" && n.GetString("op", "") == "ConvBackwardFilter") {
      EXPECT_EQ(n.GetInt("nhwc_output", 1), 0);
      EXPECT_EQ(n.GetInts("nhwc_inputs", {}), (std::vector<int64_t>{0, 1}));
      ++filters_plain;
    }
  EXPECT_EQ(filters_plain, 2);
  // Transposes only where values cross the region's edge: x in, p2 out (to the Mul), the gradient of p2 in. The
  // shape operand of p1's gradient, Shape(p1), reads the channels-last p1 and permutes the shape (a Gather).
  EXPECT_EQ(Count(g, "Transpose"), 3);
  EXPECT_EQ(Count(g, "Gather"), 1);
}

// A training graph of two conv + training-mode batch norm + relu stages with a residual Add (so the gradient of the
// first relu's output is a Sum of two): the batch norms, their gradients, the Sum and the Add join the region, so the
// only Transposes left are where values cross its edge, and the running statistics keep their names.
TEST(ChannelsLastTest, TrainingBatchNormJoinsTheRegion) {
  GraphBuilder b;
  const graph::AttributeMap bn = {{"training_mode", AInt(1)}, {"epsilon", AFloat(1e-3f)}, {"momentum", AFloat(0.9f)}};
  b.Input("x", {2, 3, 8, 8})
      .Constant("w1", RandomF({4, 3, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("w2", RandomF({4, 4, 3, 3}, 2, -0.3f, 0.3f))
      .Constant("g1", RandomF({4}, 3, 0.5f, 1.5f))
      .Constant("b1", RandomF({4}, 4))
      .Constant("g2", RandomF({4}, 5, 0.5f, 1.5f))
      .Constant("b2", RandomF({4}, 6))
      .Constant("mean", RandomF({4}, 7))
      .Constant("var", RandomF({4}, 8, 0.5f, 1.5f))
      .Constant("r", RandomF({2, 4, 8, 8}, 9))
      .Node("Conv", {"x", "w1"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("BatchNormalization", {"c1", "g1", "b1", "mean", "var"}, {"n1", "rm1", "rv1"}, bn, 15)
      .Node("Relu", {"n1"}, {"r1"})
      .Node("Conv", {"r1", "w2"}, {"c2"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("BatchNormalization", {"c2", "g2", "b2", "mean", "var"}, {"n2", "rm2", "rv2"}, bn, 15)
      .Node("Add", {"n2", "r1"}, {"s"})
      .Node("Relu", {"s"}, {"r2"})
      .Node("Mul", {"r2", "r"}, {"m"})
      .Node("ReduceSum", {"m"}, {"loss"}, {{"keepdims", AInt(0)}});
  graph::Model model = b.model();
  model.opset_imports["strata"] = 1;
  std::map<std::string, std::string> grads;
  const std::vector<std::string> params = {"w1", "w2", "g1", "b1", "g2", "b2"};
  ASSERT_TRUE(graph::BuildGradients(&model.graph, "loss", params, {}, &grads).ok());
  for (const std::string& w : params) model.graph.outputs.push_back({grads.at(w), DType::kUndefined, {}});
  for (const char* v : {"rm1", "rv1", "rm2"}) model.graph.outputs.push_back({v, DType::kUndefined, {}});
  ASSERT_EQ(OpCounts(model.graph).at("strata.BatchNormalizationGrad"), 2);
  ASSERT_EQ(OpCounts(model.graph).at("Sum"), 1);
  graph::Graph g = CheckPass(model, {{"x", RandomF({2, 3, 8, 8}, 10)}}, ConvertToChannelsLast, 1e-3, 1e-4);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  EXPECT_EQ(Count(g, "BatchNormalization"), 0);
  EXPECT_EQ(Count(g, "strata.BatchNormalizationGrad"), 0);
  int bn_wrapped = 0;
  for (const graph::Node& n : g.nodes)
    if (n.op_type == "ChannelsLast" && n.GetString("op", "") == "BatchNormalization") {
      ++bn_wrapped;
      EXPECT_EQ(n.outputs.size(), 3u);
      EXPECT_TRUE(n.outputs[1] == "rm1" || n.outputs[1] == "rm2") << n.outputs[1];
    } else if (n.op_type == "ChannelsLast" && n.GetString("op", "") == "BatchNormalizationGrad") {
      ++bn_wrapped;
      EXPECT_EQ(n.GetInts("nhwc_inputs", {}), (std::vector<int64_t>{0, 1}));
    }
  EXPECT_EQ(bn_wrapped, 4);
  // x in; r2 out to the Mul by a non-scalar constant; the gradient of r2 in (its ReluGrad reads r2 in the region).
  // Nothing between the convolutions, forward or backward.
  EXPECT_EQ(Count(g, "Transpose"), 3);
}

// A depthwise convolution's filter gradient joins the region (the hand-written channels-last kernel takes it), as
// the dense convolution's does; a grouped one with two channels per group stays channels-first. Numbers unchanged
// either way (CheckPass).
TEST(ChannelsLastTest, DepthwiseFilterGradientJoinsOtherGroupedStayChannelsFirst) {
  GraphBuilder b;
  b.Input("x", {2, 4, 6, 6})
      .Constant("w1", RandomF({4, 4, 3, 3}, 1, -0.5f, 0.5f))
      .Constant("wd", RandomF({4, 1, 5, 5}, 2, -0.3f, 0.3f))
      .Constant("wg", RandomF({4, 2, 3, 3}, 4, -0.3f, 0.3f))
      .Constant("r", RandomF({2, 4, 6, 6}, 3))
      .Node("Conv", {"x", "w1"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("Conv", {"r1", "wd"}, {"c2"}, {{"pads", AInts({2, 2, 2, 2})}, {"group", AInt(4)}})
      .Node("Relu", {"c2"}, {"r2"})
      .Node("Conv", {"r2", "wg"}, {"c3"}, {{"pads", AInts({1, 1, 1, 1})}, {"group", AInt(2)}})
      .Node("Mul", {"c3", "r"}, {"m"})
      .Node("ReduceSum", {"m"}, {"loss"}, {{"keepdims", AInt(0)}});
  graph::Model model = b.model();
  model.opset_imports["strata"] = 1;
  std::map<std::string, std::string> grads;
  const std::vector<std::string> params = {"w1", "wd", "wg"};
  ASSERT_TRUE(graph::BuildGradients(&model.graph, "loss", params, {}, &grads).ok());
  for (const std::string& w : params) model.graph.outputs.push_back({grads.at(w), DType::kUndefined, {}});
  ASSERT_EQ(OpCounts(model.graph).at("strata.ConvBackwardFilter"), 3);
  graph::Graph g = CheckPass(model, {{"x", RandomF({2, 4, 6, 6}, 10)}}, ConvertToChannelsLast, 1e-3, 1e-4);
  if (ops::OpRegistry::Global().Find("strata", "ChannelsLast")->kernels.empty()) return;  // the pass did nothing
  std::vector<int64_t> wrapped, plain;                                                    // their groups
  for (const graph::Node& n : g.nodes) {
    if (n.op_type == "ChannelsLast" && n.GetString("op", "") == "ConvBackwardFilter") {
      wrapped.push_back(n.GetInt("group", 1));
    } else if (n.op_type == "ConvBackwardFilter") {
      plain.push_back(n.GetInt("group", 1));
    }
  }
  std::sort(wrapped.begin(), wrapped.end());
  EXPECT_EQ(wrapped, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(plain, (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace strata::testing
