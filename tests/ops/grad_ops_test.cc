// Rows for the strata-domain gradient ops themselves: values worked by hand, error rows, float32 rows on which
// every fast (oneDNN) backward kernel is compared with the reference kernel, and the gradients of the grad ops that
// have one (second derivatives), checked by finite differences.
#include <cmath>

#include "ops/op.h"
#include "tests/ops/grad_test_util.h"

namespace strata::testing {
namespace {

OpCase S(const char* label, const char* op) {
  return OpCase{.label = label, .op_type = op, .domain = "strata", .opset = 1};
}

TEST(GradOpsTest, ActivationGrads) {
  OpCase c = S("relu", "ReluGrad");
  c.inputs = {F({1, 2, 3, 4}, {4}), F({0, 0.5f, 0, 2}, {4})};
  c.expected = {F({0, 2, 0, 4}, {4})};
  RunOpCase(c);
  c = S("sigmoid", "SigmoidGrad");
  c.inputs = {F({1, 2}, {2}), F({0.5f, 0.25f}, {2})};
  c.expected = {F({0.25f, 0.375f}, {2})};
  RunOpCase(c);
  c = S("tanh", "TanhGrad");
  c.inputs = {F({1, 2}, {2}), F({0.5f, -0.5f}, {2})};
  c.expected = {F({0.75f, 1.5f}, {2})};
  RunOpCase(c);
  for (const char* approx : {"none", "tanh"}) {
    c = S("gelu at 0", "GeluGrad");
    c.attrs = {{"approximate", AString(approx)}};
    c.inputs = {F({2}, {1}), F({0}, {1})};
    c.expected = {F({1}, {1})};
    RunOpCase(c);
  }
  // HardSwish from X: 0 up to -3, dY from 3 on (TensorFlow's and oneDNN's values at the corners), dY (x / 3 + 1/2)
  // between.
  c = S("hard swish", "HardSwishGrad");
  c.inputs = {F({2, 2, 2, 2, 2, 2, 2}, {7}), F({-4, -3, -1.5f, 0, 1.5f, 3, 4}, {7})};
  c.expected = {F({0, 0, 0, 1, 2, 2, 2}, {7})};
  RunOpCase(c);
  // HardSigmoid from Y: alpha dY where 0 < Y < 1, else 0 (a clamped output, or NaN).
  c = S("hard sigmoid", "HardSigmoidGrad");
  c.attrs = {{"alpha", AFloat(0.25f)}};
  c.inputs = {F({4, 4, 4, 4, 4}, {5}), F({0, 0.5f, 1, 0.001f, std::nanf("")}, {5})};
  c.expected = {F({0, 1, 0, 1, 0}, {5})};
  RunOpCase(c);
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad", "GeluGrad", "HardSwishGrad"}) {
    c = S("float32 kernels", op);
    c.kernel = "dnnl";
    const bool hard_swish = op == std::string("HardSwishGrad");
    c.inputs = {RandomF({4, 8, 5, 5}, 1),
                hard_swish ? RandomF({4, 8, 5, 5}, 2, -5.f, 5.f)
                           : RandomF({4, 8, 5, 5}, 2, op == std::string("ReluGrad") ? -1.f : 0.05f, 0.95f)};
    RunOpCase(c);
  }
  c = S("hard swish second derivatives", "HardSwishGrad");
  c.inputs = {RD({6}, 3), D({-4, -2.5, -1, 0.5, 2, 5}, {6})};
  c.grad_inputs = {0, 1};
  RunOpCase(c);
  c = S("hard sigmoid second derivative", "HardSigmoidGrad");
  c.attrs = {{"alpha", AFloat(0.2f)}};
  c.inputs = {RD({5}, 4), D({0, 0.2, 0.5, 0.9, 1}, {5})};
  c.grad_inputs = {0};
  RunOpCase(c);
  c = S("relu second derivative", "ReluGrad");
  c.inputs = {RD({6}, 3), D({0, 1, 0.5, 0, 2, 3}, {6})};
  c.grad_inputs = {0};
  RunOpCase(c);
  c = S("mismatched shapes", "ReluGrad");
  c.inputs = {F({1, 2}, {2}), F({1, 2, 3}, {3})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "must have one shape";
  RunOpCase(c);
}

// strata.Swish(X) = X sigmoid(X) and strata.SwishGrad(dY, X) = dY (s + X s (1 - s)), s = sigmoid(X): values worked by
// hand (sigmoid(1) = 0.7310586, sigmoid(2) = 0.8807971), the oneDNN kernels against the reference on a 4-D tensor
// over [-8, 8], and finite-difference checks of Swish's gradient (which is SwishGrad) and of SwishGrad's own.
TEST(GradOpsTest, Swish) {
  OpCase c = S("swish values", "Swish");
  c.inputs = {F({0, 1, -1, 2, -20, 20}, {6})};
  c.expected = {F({0, 0.7310586f, -0.26894142f, 1.7615942f, -4.1223073e-8f, 20}, {6})};
  RunOpCase(c);
  // f'(0) = 1/2, f'(1) = s + s (1 - s) = 0.9276705, f'(-1) = 0.0723295, f'(2) = 1.0907843; dY = 2.
  c = S("swish gradient values", "SwishGrad");
  c.inputs = {F({2, 2, 2, 2, 2, 2}, {6}), F({0, 1, -1, 2, -40, 40}, {6})};
  c.expected = {F({1, 1.855341f, 0.14465898f, 2.1815686f, 0, 2}, {6})};
  RunOpCase(c);
  c = S("swish float32 kernel", "Swish");
  c.kernel = "dnnl";
  c.inputs = {RandomF({4, 8, 5, 5}, 7, -8.f, 8.f)};
  RunOpCase(c);
  c = S("swish gradient float32 kernel", "SwishGrad");
  c.kernel = "dnnl";
  c.inputs = {RandomF({4, 8, 5, 5}, 8), RandomF({4, 8, 5, 5}, 9, -8.f, 8.f)};
  RunOpCase(c);
  c = S("swish first derivative", "Swish");
  c.inputs = {D({-4, -1.5, -0.2, 0, 0.7, 3}, {6})};
  c.grad_inputs = {0};
  RunOpCase(c);
  c = S("swish second derivatives", "SwishGrad");
  c.inputs = {RD({6}, 3), D({-4, -1.5, -0.2, 0, 0.7, 3}, {6})};
  c.grad_inputs = {0, 1};
  RunOpCase(c);
  c = S("swish gradient shapes differ", "SwishGrad");
  c.inputs = {F({1, 2}, {2}), F({1, 2, 3}, {3})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "must have one shape";
  RunOpCase(c);
}

TEST(GradOpsTest, GatherGrad) {
  OpCase c = S("rows accumulate", "GatherGrad");
  c.inputs = {F({1, 2, 3, 4, 5, 6}, {3, 2}), I64({2, 0, -1}, {3}), I64({3, 2}, {2})};
  c.constant_inputs = {2};
  c.expected = {F({3, 4, 0, 0, 6, 8}, {3, 2})};
  RunOpCase(c);
  c = S("second derivative", "GatherGrad");
  c.attrs = {{"axis", AInt(1)}};
  c.inputs = {RD({2, 4, 3}, 1), I64({1, 1, 0, 2}, {4}), I64({2, 3, 3}, {3})};
  c.constant_inputs = {2};
  c.grad_inputs = {0};
  RunOpCase(c);
  c = S("index out of range", "GatherGrad");
  c.inputs = {F({1, 2}, {1, 2}), I64({3}, {1}), I64({3, 2}, {2})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "out of range";
  RunOpCase(c);
}

TEST(GradOpsTest, SoftmaxAndLossGrads) {
  const float l2 = std::log(0.2f), l3 = std::log(0.3f), l5 = std::log(0.5f);
  OpCase c = S("softmax", "SoftmaxGrad");
  c.inputs = {F({1, 0, 0}, {1, 3}), F({0.2f, 0.3f, 0.5f}, {1, 3})};
  c.expected = {F({0.16f, -0.06f, -0.1f}, {1, 3})};
  RunOpCase(c);
  c = S("log softmax", "LogSoftmaxGrad");
  c.inputs = {F({1, 1, 0}, {1, 3}), F({l2, l3, l5}, {1, 3})};
  c.expected = {F({0.6f, 0.4f, -1.0f}, {1, 3})};
  RunOpCase(c);
  for (const char* op : {"SoftmaxGrad", "LogSoftmaxGrad"}) {
    for (int axis : {-1, 1}) {
      c = S("float32 kernels", op);
      c.kernel = "dnnl";
      c.attrs = {{"axis", AInt(axis)}};
      Tensor y = RandomF({8, 10, 3}, 2, -3, -0.1f);
      c.inputs = {RandomF({8, 10, 3}, 1), y};
      RunOpCase(c);
    }
  }
  c = S("cross entropy mean", "SoftmaxCrossEntropyLossGrad");
  c.inputs = {F({1}, {}), F({l2, l3, l5}, {1, 3}), I64({2}, {1})};
  c.expected = {F({0.2f, 0.3f, -0.5f}, {1, 3})};
  RunOpCase(c);
  c = S("nll sum", "NegativeLogLikelihoodLossGrad");
  c.attrs = {{"reduction", AString("sum")}};
  c.inputs = {F({2}, {}), I64({1, 3}, {2}), I64({1}, {1})};
  c.constant_inputs = {1};
  c.expected = {F({0, -2, 0}, {1, 3})};
  RunOpCase(c);
  c = S("target out of range", "SoftmaxCrossEntropyLossGrad");
  c.inputs = {F({1}, {}), F({l2, l3, l5}, {1, 3}), I64({3}, {1})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "outside [0, 3)";
  RunOpCase(c);
}

TEST(GradOpsTest, ConvGrads) {
  OpCase c = S("data 1x1", "ConvBackwardData");
  c.inputs = {F({1, 2, 3, 4}, {1, 1, 2, 2}), F({3}, {1, 1, 1, 1}), I64({1, 1, 2, 2}, {4})};
  c.constant_inputs = {2};
  c.expected = {F({3, 6, 9, 12}, {1, 1, 2, 2})};
  RunOpCase(c);
  c = S("filter 1x1", "ConvBackwardFilter");
  c.inputs = {F({1, 2, 3, 4}, {1, 1, 2, 2}), F({1, 1, 1, 1}, {1, 1, 2, 2}), I64({1, 1, 1, 1}, {4})};
  c.constant_inputs = {2};
  c.num_outputs = 2;
  c.expected = {F({10}, {1, 1, 1, 1}), F({10}, {1})};
  RunOpCase(c);
  struct Geo {
    const char* label;
    graph::AttributeMap attrs;
    std::vector<int64_t> x, w;
  };
  const std::vector<Geo> geos = {
      {"3x3 pad 1", {{"pads", AInts({1, 1, 1, 1})}}, {8, 16, 12, 12}, {32, 16, 3, 3}},
      {"stride 2 dilation 2", {{"strides", AInts({2, 2})}, {"dilations", AInts({2, 2})}}, {2, 4, 11, 9}, {6, 4, 3, 3}},
      {"groups", {{"group", AInt(4)}, {"pads", AInts({0, 1, 1, 0})}}, {2, 8, 7, 7}, {12, 2, 3, 2}},
      {"1d", {{"strides", AInts({3})}}, {3, 5, 20}, {4, 5, 4}},
  };
  for (const Geo& g : geos) {
    Shape ys;
    {  // the forward output shape, from the reference Conv
      std::vector<Tensor> out;
      graph::Model m;
      m.opset_imports[""] = 17;
      m.graph.initializers["x"] = RandomF(g.x, 1);
      m.graph.initializers["w"] = RandomF(g.w, 2);
      m.graph.nodes.push_back(
          {.name = "c", .op_type = "Conv", .inputs = {"x", "w"}, .outputs = {"y"}, .attrs = g.attrs, .opset = 17});
      m.graph.outputs = {{"y", DType::kUndefined, PartialShape::Unknown()}};
      ASSERT_TRUE(graph::RunReference(m, {}, &out).ok());
      ys = out[0].shape();
    }
    c = S(g.label, "ConvBackwardData");
    c.kernel = "dnnl";
    c.attrs = g.attrs;
    c.inputs = {RandomF(ys.ToVector(), 3), RandomF(g.w, 4), I64(g.x, {static_cast<int64_t>(g.x.size())})};
    c.constant_inputs = {2};
    RunOpCase(c);
    c = S(g.label, "ConvBackwardFilter");
    c.kernel = "dnnl";
    c.attrs = g.attrs;
    c.inputs = {RandomF(ys.ToVector(), 5), RandomF(g.x, 6), I64(g.w, {static_cast<int64_t>(g.w.size())})};
    c.constant_inputs = {2};
    c.num_outputs = 2;
    c.rtol = 1e-4;
    c.atol = 1e-4;  // float32 sums of a thousand products, accumulated in different orders
    RunOpCase(c);
  }
  c = S("data second derivative", "ConvBackwardData");
  c.attrs = {{"strides", AInts({2, 1})}, {"pads", AInts({1, 0, 0, 1})}};
  c.inputs = {RD({1, 2, 3, 4}, 7), RD({2, 3, 2, 2}, 8), I64({1, 3, 5, 4}, {4})};
  c.constant_inputs = {2};
  c.grad_inputs = {0, 1};
  RunOpCase(c);
  c = S("filter second derivative", "ConvBackwardFilter");
  c.attrs = {{"group", AInt(2)}};
  c.inputs = {RD({1, 4, 3, 3}, 9), RD({1, 2, 4, 4}, 10), I64({4, 1, 2, 2}, {4})};
  c.constant_inputs = {2};
  c.grad_inputs = {0, 1};
  RunOpCase(c);
  c = S("dY shape mismatch", "ConvBackwardData");
  c.inputs = {F({1, 2, 3}, {1, 1, 3, 1}), F({3}, {1, 1, 1, 1}), I64({1, 1, 2, 2}, {4})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "expected the Conv output shape";
  RunOpCase(c);
}

TEST(GradOpsTest, PoolAndNormGrads) {
  OpCase c = S("max 2x2", "MaxPoolGrad");
  c.attrs = {{"kernel_shape", AInts({2, 2})}};
  c.inputs = {F({5}, {1, 1, 1, 1}), F({1, 4, 3, 2}, {1, 1, 2, 2})};
  c.expected = {F({0, 5, 0, 0}, {1, 1, 2, 2})};
  RunOpCase(c);
  c = S("max 2x2 relu_input", "MaxPoolGrad");
  c.attrs = {{"kernel_shape", AInts({2, 2})}, {"relu_input", AInt(1)}};
  c.inputs = {F({5, 7}, {2, 1, 1, 1}), F({1, 4, 3, 2, -1, -4, 0, -2}, {2, 1, 2, 2})};
  c.expected = {F({0, 5, 0, 0, 0, 0, 0, 0}, {2, 1, 2, 2})};
  RunOpCase(c);
  c = S("average 2x2", "AveragePoolGrad");
  c.attrs = {{"kernel_shape", AInts({2, 2})}};
  c.inputs = {F({4}, {1, 1, 1, 1}), I64({1, 1, 2, 2}, {4})};
  c.constant_inputs = {1};
  c.expected = {F({1, 1, 1, 1}, {1, 1, 2, 2})};
  RunOpCase(c);
  const graph::AttributeMap pool2 = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}};
  const graph::AttributeMap pool3 = {
      {"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}};
  for (const auto& attrs : {pool2, pool3}) {
    const int64_t out = 6;  // 12x12 pooled either way
    for (int relu : {0, 1}) {
      c = S("float32 kernels", "MaxPoolGrad");
      c.kernel = "dnnl";
      c.attrs = attrs;
      c.attrs["relu_input"] = AInt(relu);
      c.inputs = {RandomF({4, 8, out, out}, 1), Cast(DistinctD({4, 8, 12, 12}, 2), DType::kFloat32)};
      RunOpCase(c);
    }
    for (int include : {0, 1}) {
      c = S("float32 kernels", "AveragePoolGrad");
      c.kernel = "dnnl";
      c.attrs = attrs;
      c.attrs["count_include_pad"] = AInt(include);
      c.inputs = {RandomF({4, 8, out, out}, 3), I64({4, 8, 12, 12}, {4})};
      c.constant_inputs = {1};
      RunOpCase(c);
    }
  }
  c = S("average second derivative", "AveragePoolGrad");
  c.attrs = pool3;
  c.inputs = {RD({1, 2, 3, 3}, 4), I64({1, 2, 5, 6}, {4})};
  c.constant_inputs = {1};
  c.grad_inputs = {0};
  RunOpCase(c);
  c = S("batchnorm inference by hand", "BatchNormalizationGrad");
  c.attrs = {{"epsilon", AFloat(1)}};
  c.inputs = {F({1, 2}, {2, 1}), F({0, 1}, {2, 1}), F({2}, {1}), F({0}, {1}), F({3}, {1})};
  c.num_outputs = 3;
  c.expected = {F({1, 2}, {2, 1}), F({1}, {1}), F({3}, {1})};
  RunOpCase(c);
  for (int training : {0, 1}) {
    c = S("float32 kernels", "BatchNormalizationGrad");
    c.kernel = "dnnl";
    c.attrs = {{"training_mode", AInt(training)}};
    c.inputs = {RandomF({8, 16, 6, 6}, 5), RandomF({8, 16, 6, 6}, 6), RandomF({16}, 7, 0.5f, 1.5f), RandomF({16}, 8),
                RandomF({16}, 9, 0.5f, 1.5f)};
    c.num_outputs = 3;
    c.rtol = 1e-4;
    c.atol = 1e-5;
    RunOpCase(c);
  }
  c = S("float32", "LayerNormalizationGrad");
  c.attrs = {{"axis", AInt(-1)}};
  c.inputs = {RandomF({16, 32}, 10), RandomF({16, 32}, 11), RandomF({32}, 12)};
  c.num_outputs = 2;
  RunOpCase(c);
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// Every registered op either has a gradient function or says why it has none (integer outputs, randomness,
// piecewise-constant functions, or "not implemented: ..."), so an error from autodiff can always explain itself.
TEST(GradRegistryTest, EveryOpHasAGradientOrAReason) {
  std::vector<std::string> missing;
  for (const ops::OpSchema* s : ops::OpRegistry::Global().All())
    if (s->grad == nullptr && s->no_grad_reason.empty()) missing.push_back(StrCat(s->domain, ":", s->name));
  EXPECT_TRUE(missing.empty()) << "ops without a gradient or a no_grad_reason: " << StrCat(missing);
}

}  // namespace
}  // namespace strata::testing
