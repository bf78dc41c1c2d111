// oneDNN eltwise and binary kernels against the reference kernels.
#include <cmath>
#include <limits>

#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

TEST(DnnlBinaryTest, BroadcastingBothWays) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    RunOpCase({.label = "same shape",
               .op_type = op,
               .inputs = {RandomF({2, 3, 17}, 1), RandomF({2, 3, 17}, 2, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase({.label = "row broadcast",
               .op_type = op,
               .inputs = {RandomF({4, 33}, 3), RandomF({33}, 4, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase(
        {.label = "scalar right", .op_type = op, .inputs = {RandomF({5, 7}, 5), F({1.5f}, {})}, .kernel = "dnnl"});
    RunOpCase({.label = "constant channel bias",
               .op_type = op,
               .inputs = {RandomF({2, 3, 4, 5}, 6), RandomF({3, 1, 1}, 7, 0.5f, 2)},
               .constant_inputs = {1},
               .kernel = "dnnl"});
    RunOpCase({.label = "rank 5 broadcast",
               .op_type = op,
               .inputs = {RandomF({2, 4, 3, 1, 5}, 8), RandomF({1, 4, 1, 6, 1}, 9, 0.5f, 2)}});
  }
  // Commutative ops swap a broadcast first operand in; Sub/Div decline it.
  RunOpCase({.label = "broadcast first, Add",
             .op_type = "Add",
             .inputs = {RandomF({7}, 10), RandomF({3, 7}, 11)},
             .kernel = "dnnl"});
  RunOpCase({.label = "broadcast first, Mul",
             .op_type = "Mul",
             .inputs = {F({2}, {}), RandomF({3, 7}, 11)},
             .kernel = "dnnl"});
  RunOpCase({.label = "broadcast first, Sub",
             .op_type = "Sub",
             .inputs = {RandomF({7}, 10), RandomF({3, 7}, 11)},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "int64 declines",
             .op_type = "Add",
             .inputs = {I64({1, 2}, {2}), I64({3, 4}, {2})},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "zero-size declines",
             .op_type = "Add",
             .inputs = {F({}, {0, 3}), F({1, 2, 3}, {3})},
             .kernel = "dnnl",
             .expect_decline = true});
}

// A second operand that varies along one run of dims other than the channel's (stochastic depth's per-sample
// scale [N, 1, 1, 1], a [1, 1, H, W] mask) runs as oneDNN's per-channel jit case over a 3-D view, not its reference
// implementation; the numbers are those of the reference kernel.
TEST(DnnlBinaryTest, PerSampleAndSpatialBroadcasts) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    RunOpCase({.label = "per sample",
               .op_type = op,
               .inputs = {RandomF({6, 5, 7, 9}, 20), RandomF({6, 1, 1, 1}, 21, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase({.label = "spatial",
               .op_type = op,
               .inputs = {RandomF({3, 4, 7, 9}, 22), RandomF({1, 1, 7, 9}, 23, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase({.label = "per sample, broadcast first for commutative ops",
               .op_type = op,
               .inputs = {RandomF({2, 1, 1}, 24, 0.5f, 2), RandomF({2, 17, 3}, 25, 0.5f, 2)},
               .kernel = "dnnl",
               .expect_decline = std::string_view(op) == "Sub" || std::string_view(op) == "Div"});
  }
}

TEST(DnnlBinaryTest, PerSampleScaleAvoidsOneDnnsReferenceImplementation) {
  graph::Node node;
  node.op_type = "Mul";
  node.inputs = {"x", "s"};
  node.outputs = {"y"};
  node.opset = 17;
  const std::vector<ops::ValueType> in = {{DType::kFloat32, PartialShape::Of(Shape({8, 16, 12, 12}))},
                                          {DType::kFloat32, PartialShape::Of(Shape({8, 1, 1, 1}))}};
  const std::vector<ops::ValueType> out = {{DType::kFloat32, PartialShape::Of(Shape({8, 16, 12, 12}))}};
  auto k = ops::onednn::CreateBinary(ops::KernelInit{.node = node, .inputs = in, .outputs = out});
  ASSERT_TRUE(k.ok()) << k.status().message();
  const auto* pk = dynamic_cast<const ops::onednn::PrimitiveKernel*>(k->get());
  ASSERT_NE(pk, nullptr);
  EXPECT_NE(pk->impl_info().rfind("ref", 0), 0u) << pk->impl_info();
}

TEST(DnnlEltwiseTest, Relu) {
  RunOpCase({.label = "relu", .op_type = "Relu", .inputs = {RandomF({3, 67}, 1)}, .kernel = "dnnl"});
  RunOpCase(
      {.label = "relu scalar", .op_type = "Relu", .inputs = {F({-2}, {})}, .expected = {F({0}, {})}, .kernel = "dnnl"});
  RunOpCase({.label = "relu float64 declines",
             .op_type = "Relu",
             .inputs = {D({-1, 1}, {2})},
             .kernel = "dnnl",
             .expect_decline = true});
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

TEST(DnnlEltwiseTest, Activations) {
  const Tensor x = RandomF({4, 37}, 30, -4, 4);
  const Tensor pos = RandomF({4, 37}, 31, 0.1f, 4);
  RunOpCase(
      {.label = "leaky", .op_type = "LeakyRelu", .attrs = {{"alpha", AFloat(0.3f)}}, .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "elu", .op_type = "Elu", .attrs = {{"alpha", AFloat(0.5f)}}, .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "selu", .op_type = "Selu", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "sigmoid", .op_type = "Sigmoid", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "tanh", .op_type = "Tanh", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "hard sigmoid",
             .op_type = "HardSigmoid",
             .attrs = {{"alpha", AFloat(0.3f)}, {"beta", AFloat(0.4f)}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "hard swish", .op_type = "HardSwish", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "softplus", .op_type = "Softplus", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "exp", .op_type = "Exp", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "log", .op_type = "Log", .inputs = {pos}, .kernel = "dnnl"});
  RunOpCase({.label = "sqrt", .op_type = "Sqrt", .inputs = {pos}, .kernel = "dnnl"});
  RunOpCase({.label = "abs", .op_type = "Abs", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "neg", .op_type = "Neg", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "clip constant bounds",
             .op_type = "Clip",
             .inputs = {x, F({-1}, {}), F({2}, {})},
             .constant_inputs = {1, 2},
             .kernel = "dnnl"});
  RunOpCase({.label = "clip max only",
             .op_type = "Clip",
             .inputs = {x, Tensor(), F({0.5f}, {})},
             .constant_inputs = {2},
             .kernel = "dnnl"});
  RunOpCase({.label = "clip no bounds", .op_type = "Clip", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "clip opset 6 attributes",
             .op_type = "Clip",
             .opset = 6,
             .attrs = {{"min", AFloat(-0.5f)}, {"max", AFloat(0.5f)}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "clip runtime bounds decline",
             .op_type = "Clip",
             .inputs = {x, F({-1}, {}), F({2}, {})},
             .kernel = "dnnl",
             .expect_decline = true});
}

TEST(DnnlBinaryTest, MinMax) {
  for (const char* op : {"Min", "Max"}) {
    RunOpCase({.label = StrCat(op, " broadcast"),
               .op_type = op,
               .inputs = {RandomF({3, 5}, 40), RandomF({5}, 41)},
               .kernel = "dnnl"});
    RunOpCase({.label = StrCat(op, " NaN falls back"),
               .op_type = op,
               .inputs = {F({1, std::numeric_limits<float>::quiet_NaN(), 3}, {3}), F({2, 2, 2}, {3})},
               .kernel = "dnnl"});
    RunOpCase({.label = StrCat(op, " three inputs decline"),
               .op_type = op,
               .inputs = {RandomF({3}, 40), RandomF({3}, 41), RandomF({3}, 42)},
               .kernel = "dnnl",
               .expect_decline = true});
  }
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

OpCase FusedElementwiseRow(std::string label, std::vector<Tensor> inputs, std::vector<std::string> ops,
                           std::vector<float> alphas = {}, std::vector<float> betas = {}) {
  OpCase row{.label = std::move(label),
             .op_type = "FusedElementwise",
             .domain = "strata",
             .opset = 1,
             .attrs = {{"ops", graph::Attribute::Strings(std::move(ops))}},
             .inputs = std::move(inputs),
             .kernel = "dnnl"};
  if (!alphas.empty()) row.attrs["alphas"] = AFloats(alphas);
  if (!betas.empty()) row.attrs["betas"] = AFloats(betas);
  return row;
}

TEST(DnnlFusedElementwiseTest, PostOpChains) {
  RunOpCase(FusedElementwiseRow(
      "div mul add", {RandomF({4, 5, 8}, 1), RandomF({4, 5, 1}, 2, 0.5f, 2), RandomF({8}, 3), RandomF({8}, 4)},
      {"Div", "Mul", "Add"}));
  RunOpCase(FusedElementwiseRow("add sqrt", {RandomF({4, 9}, 5, 0, 1), F({1e-5f}, {})}, {"Add", "Sqrt"}));
  RunOpCase(FusedElementwiseRow("broadcast first, relu, sub", {RandomF({9}, 6), RandomF({3, 9}, 7), RandomF({3, 1}, 8)},
                                {"Mul", "Relu", "Sub"}));
  RunOpCase(FusedElementwiseRow("leaky, hard sigmoid", {RandomF({2, 3, 4, 5}, 9), RandomF({1, 3, 1, 1}, 10)},
                                {"Add", "LeakyRelu", "HardSigmoid"}, {0, 0.1f, 0.25f}, {0, 0, 0.4f}));
  RunOpCase(FusedElementwiseRow("full-shape post-op operand",
                                {RandomF({6, 7}, 11), RandomF({6, 7}, 12), RandomF({6, 7}, 13, 0.5f, 2)},
                                {"Sub", "Div", "Tanh"}));
  OpCase nan = FusedElementwiseRow("clip with NaN falls back",
                                   {F({1, std::numeric_limits<float>::quiet_NaN(), -3}, {3}), F({1}, {})},
                                   {"Add", "Clip"}, {0, -1}, {0, 1});
  RunOpCase(nan);
  // Large enough for the NaN scan to split across threads: the NaN (or infinity) in the last chunk must be found.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Tensor big = RandomF({300000}, 14);
    big.mutable_values<float>()[299990] = bad;
    RunOpCase(FusedElementwiseRow(std::isnan(bad) ? "clip, NaN at the end of 300000" : "clip, inf at the end of 300000",
                                  {big, F({1}, {})}, {"Add", "Clip"}, {0, -1}, {0, 1}));
  }
  OpCase sub = FusedElementwiseRow("sub with a broadcast first operand declines", {RandomF({9}, 6), RandomF({3, 9}, 7)},
                                   {"Sub", "Relu"});
  sub.expect_decline = true;
  RunOpCase(sub);
  OpCase grow = FusedElementwiseRow("a later operand enlarges the shape: declines",
                                    {RandomF({3, 1}, 6), RandomF({3, 1}, 7), RandomF({2, 1, 4}, 8)}, {"Add", "Mul"});
  grow.expect_decline = true;
  RunOpCase(grow);
}

}  // namespace
}  // namespace strata::testing
