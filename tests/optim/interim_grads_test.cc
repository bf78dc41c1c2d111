// Gradients the trainer needs before the gradients work lands (Relu, Reshape, Transpose, Conv group 1, MaxPool),
// checked by float64 finite differences through graph autodiff.
#include <algorithm>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

TEST(GradHelpersTest, ReluAndReshapeGradients) {
  OpCase relu;
  relu.op_type = "Relu";
  relu.inputs = {D({-1.5, -0.5, 0.25, 2.0, 3.0, -2.0}, {2, 3})};
  relu.grad_inputs = {0};
  CheckGradient(relu);
  OpCase reshape;
  reshape.op_type = "Reshape";
  reshape.inputs = {Cast(RandomF({2, 3, 4}, 2), DType::kFloat64), I64({0, -1}, {2})};
  reshape.constant_inputs = {1};
  reshape.grad_inputs = {0};
  CheckGradient(reshape);
}

// Gradients the small CNN needs (composed of forward ops with fast kernels, or strata.MaxPoolGrad).
TEST(GradHelpersTest, TransposeConvAndMaxPoolGradients) {
  OpCase tr;
  tr.op_type = "Transpose";
  tr.attrs["perm"] = AInts({0, 3, 1, 2});
  tr.inputs = {Cast(RandomF({2, 3, 4, 5}, 21), DType::kFloat64)};
  tr.grad_inputs = {0};
  CheckGradient(tr);

  struct ConvRow {
    std::vector<int64_t> strides, dilations;
    std::string auto_pad;
    int64_t hw;
  };
  for (const ConvRow& r : {ConvRow{{1, 1}, {1, 1}, "VALID", 6}, ConvRow{{2, 2}, {1, 1}, "SAME_UPPER", 6},
                           ConvRow{{2, 1}, {1, 2}, "SAME_UPPER", 7}, ConvRow{{2, 2}, {1, 1}, "VALID", 7}}) {
    OpCase c;
    c.label = StrCat("Conv strides ", r.strides, " dilations ", r.dilations, " ", r.auto_pad, " in ", r.hw);
    c.op_type = "Conv";
    c.attrs["strides"] = AInts(r.strides);
    c.attrs["dilations"] = AInts(r.dilations);
    c.attrs["auto_pad"] = AString(r.auto_pad);
    c.inputs = {Cast(RandomF({2, 3, r.hw, r.hw}, 31), DType::kFloat64), Cast(RandomF({4, 3, 3, 3}, 32), DType::kFloat64),
                Cast(RandomF({4}, 33), DType::kFloat64)};
    c.grad_inputs = {0, 1, 2};
    SCOPED_TRACE(c.label);
    CheckGradient(c);
  }

  for (int64_t k : {2, 3})
  for (const char* pad : {"VALID", "SAME_UPPER"}) {
    OpCase m;
    m.op_type = "MaxPool";
    m.attrs["kernel_shape"] = AInts({k, k});
    m.attrs["strides"] = AInts({2, 2});  // k = 3: overlapping windows accumulate; k = 2: the unrolled path
    m.attrs["auto_pad"] = AString(pad);
    m.inputs = {Cast(RandomF({2, 2, 7, 6}, 41), DType::kFloat64)};
    m.grad_inputs = {0};
    SCOPED_TRACE(pad);
    CheckGradient(m);
  }
}

// MaxPoolGrad(relu_input=1) equals ReluGrad(MaxPoolGrad(dY, Y), Y), the pair the trainer fuses.
TEST(GradHelpersTest, MaxPoolGradWithReluInputMatchesThePair) {
  for (int64_t k : {2, 3}) {
    graph::Model m;
    m.opset_imports[""] = 17;
    m.opset_imports["strata"] = 1;
    Tensor y = RandomF({2, 3, 6, 6}, 51, -1.0f, 1.0f);
    for (float& v : y.mutable_values<float>()) v = std::max(v, 0.0f);  // a Relu output with zeros
    const int64_t o = k == 2 ? 3 : 2;
    Tensor dy = RandomF({2, 3, o, o}, 52);
    m.graph.inputs = {{"y", DType::kFloat32, PartialShape::Of(y.shape())}, {"dy", DType::kFloat32, PartialShape::Of(dy.shape())}};
    graph::AttributeMap a;
    a["kernel_shape"] = AInts({k, k});
    a["strides"] = AInts({2, 2});
    graph::AttributeMap fused = a;
    fused["relu_input"] = AInt(1);
    m.graph.nodes = {
        graph::Node{.name = "p", .op_type = "MaxPoolGrad", .domain = "strata", .inputs = {"dy", "y"}, .outputs = {"d"}, .attrs = a, .opset = 1},
        graph::Node{.name = "r", .op_type = "ReluGrad", .domain = "strata", .inputs = {"d", "y"}, .outputs = {"pair"}, .opset = 1},
        graph::Node{.name = "f", .op_type = "MaxPoolGrad", .domain = "strata", .inputs = {"dy", "y"}, .outputs = {"fused"}, .attrs = fused, .opset = 1}};
    m.graph.outputs = {{"pair"}, {"fused"}};
    auto s = graph::Session::Create(std::make_shared<graph::Model>(m));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->Run({{"y", y}, {"dy", dy}}, &out).ok());
    EXPECT_EQ(CompareTensors(out[1], out[0], 0, 0), "") << "k=" << k;
  }
}

}  // namespace
}  // namespace strata::testing
