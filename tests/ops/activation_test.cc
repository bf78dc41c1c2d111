// Table rows for the activation family. Expected values: numpy on x = [-2, -0.5, 0, 0.5, 2] with the ONNX
// reference formulas (onnx/backend/test/case/node/*.py), printed with str(np.float32(v)); PRelu and Shrink by hand.
#include <cstdint>
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

const std::vector<float> kX = {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f};

void Act(const char* label, const char* op, graph::AttributeMap attrs, std::vector<float> want) {
  RunOpCase({.label = label, .op_type = op, .attrs = std::move(attrs), .inputs = {F(kX, {5})},
             .expected = {F(std::move(want), {5})}});
}

TEST(ActivationTest, SmoothMatchNumpy) {
  Act("sigmoid", "Sigmoid", {}, {0.119202934f, 0.37754068f, 0.5f, 0.62245935f, 0.880797f});
  Act("tanh", "Tanh", {}, {-0.9640276f, -0.4621172f, 0.0f, 0.4621172f, 0.9640276f});
  Act("softplus", "Softplus", {}, {0.12692805f, 0.474077f, 0.6931472f, 0.974077f, 2.1269279f});
  Act("softsign", "Softsign", {}, {-0.6666667f, -0.33333334f, 0.0f, 0.33333334f, 0.6666667f});
  Act("mish", "Mish", {}, {-0.25250146f, -0.22074378f, 0.0f, 0.37524518f, 1.9439589f});
  Act("gelu", "Gelu", {}, {-0.045500264f, -0.15426877f, 0.0f, 0.34573123f, 1.9544997f});
  Act("gelu tanh", "Gelu", {{"approximate", AString("tanh")}},
      {-0.045402348f, -0.15428598f, 0.0f, 0.34571403f, 1.9545977f});
}

TEST(ActivationTest, PiecewiseDefaultsAndAttributes) {
  Act("leaky default", "LeakyRelu", {}, {-0.02f, -0.005f, 0.0f, 0.5f, 2.0f});
  Act("leaky 0.1", "LeakyRelu", {{"alpha", AFloat(0.1f)}}, {-0.2f, -0.05f, 0.0f, 0.5f, 2.0f});
  Act("elu default", "Elu", {}, {-0.86466473f, -0.39346933f, 0.0f, 0.5f, 2.0f});
  Act("elu 2", "Elu", {{"alpha", AFloat(2)}}, {-1.7293295f, -0.78693867f, 0.0f, 0.5f, 2.0f});
  Act("selu default", "Selu", {}, {-1.5201665f, -0.6917582f, 0.0f, 0.5253505f, 2.101402f});
  Act("selu 2 3", "Selu", {{"alpha", AFloat(2)}, {"gamma", AFloat(3)}}, {-5.1879883f, -2.360816f, 0.0f, 1.5f, 6.0f});
  Act("celu default", "Celu", {}, {-0.86466473f, -0.39346933f, 0.0f, 0.5f, 2.0f});
  Act("celu 2", "Celu", {{"alpha", AFloat(2)}}, {-1.2642412f, -0.44239855f, 0.0f, 0.5f, 2.0f});
  Act("hardsigmoid default", "HardSigmoid", {}, {0.099999994f, 0.4f, 0.5f, 0.6f, 0.9f});
  Act("hardsigmoid 0.5 0.6", "HardSigmoid", {{"alpha", AFloat(0.5f)}, {"beta", AFloat(0.6f)}},
      {0.0f, 0.35000002f, 0.6f, 0.85f, 1.0f});
  Act("thresholded default", "ThresholdedRelu", {}, {0.0f, 0.0f, 0.0f, 0.0f, 2.0f});
  Act("thresholded 0.2", "ThresholdedRelu", {{"alpha", AFloat(0.2f)}}, {0.0f, 0.0f, 0.0f, 0.5f, 2.0f});
  RunOpCase({.label = "hardswish", .op_type = "HardSwish", .inputs = {F({-4, -3, -1, 0, 1, 3, 4}, {7})},
             .expected = {F({-0.0f, -0.0f, -0.3333333f, 0.0f, 0.6666667f, 3.0f, 4.0f}, {7})}});
  RunOpCase({.label = "relu", .op_type = "Relu", .inputs = {F(kX, {5})}, .expected = {F({0, 0, 0, 0.5f, 2}, {5})}});
}

TEST(ActivationTest, ShrinkAllTypes) {
  RunOpCase({.label = "soft", .op_type = "Shrink", .attrs = {{"lambd", AFloat(1.5f)}, {"bias", AFloat(1.5f)}},
             .inputs = {F({-2, -1, 0, 1, 2}, {5})}, .expected = {F({-0.5f, 0, 0, 0, 0.5f}, {5})}});
  RunOpCase({.label = "hard default", .op_type = "Shrink", .inputs = {F({-2, -0.5f, 0.25f, 0.75f}, {4})},
             .expected = {F({-2, 0, 0, 0.75f}, {4})}});
  RunOpCase({.label = "int32", .op_type = "Shrink", .attrs = {{"lambd", AFloat(1)}, {"bias", AFloat(1)}},
             .inputs = {I32({-3, -1, 0, 1, 5}, {5})}, .expected = {I32({-2, 0, 0, 0, 4}, {5})}});
  RunOpCase({.label = "uint8 saturates at 0", .op_type = "Shrink", .attrs = {{"lambd", AFloat(1)}, {"bias", AFloat(3)}},
             .inputs = {T_<uint8_t>({2, 200}, {2})}, .expected = {T_<uint8_t>({0, 197}, {2})}});
}

TEST(ActivationTest, DtypesShapesAndErrors) {
  RunOpCase({.label = "float16 sigmoid", .op_type = "Sigmoid", .inputs = {Cast(F({0, 2}, {2}), DType::kFloat16)},
             .expected = {Cast(F({0.5f, 0.880797f}, {2}), DType::kFloat16)}, .rtol = 1e-3});
  RunOpCase({.label = "double elu", .op_type = "Elu", .inputs = {D({-1, 3}, {2})},
             .expected = {D({-0.6321205588285577, 3}, {2})}, .rtol = 1e-12});
  RunOpCase({.label = "sigmoid extremes", .op_type = "Sigmoid", .inputs = {F({-1000, 1000}, {2})},
             .expected = {F({0, 1}, {2})}});
  RunOpCase({.label = "softplus large", .op_type = "Softplus", .inputs = {F({-1000, 1000}, {2})},
             .expected = {F({0, 1000}, {2})}});
  RunOpCase({.label = "zero-size", .op_type = "Selu", .inputs = {F({}, {0, 3})}, .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "scalar", .op_type = "LeakyRelu", .inputs = {F({-1}, {})}, .expected = {F({-0.01f}, {})}});
  RunOpCase({.label = "random rank 3", .op_type = "Mish", .inputs = {RandomF({3, 4, 5}, 41, -5, 5)}});
  RunOpCase({.label = "int sigmoid", .op_type = "Sigmoid", .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
  RunOpCase({.label = "gelu approximate", .op_type = "Gelu", .attrs = {{"approximate", AString("erf")}},
             .inputs = {F({1}, {1})}, .expect_error = StatusCode::kInvalidArgument, .error_substr = "\"none\" or \"tanh\""});
  RunOpCase({.label = "celu alpha 0", .op_type = "Celu", .attrs = {{"alpha", AFloat(0)}}, .inputs = {F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "non-zero"});
}

TEST(PReluTest, SlopeBroadcasting) {
  RunOpCase({.label = "same shape", .op_type = "PRelu", .inputs = {F({-1, 2, -3}, {3}), F({0.5f, 0.5f, 2}, {3})},
             .expected = {F({-0.5f, 2, -6}, {3})}});
  RunOpCase({.label = "slope over last axis", .op_type = "PRelu",
             .inputs = {F({-1, -1, -1, 1, -2, -2, -2, 2}, {2, 4}), F({1, 2, 3, 4}, {4})},
             .expected = {F({-1, -2, -3, 1, -2, -4, -6, 2}, {2, 4})}});
  RunOpCase({.label = "slope [C,1,1] (opset 7+)", .op_type = "PRelu",
             .inputs = {F({-1, -1, -1, -1, -1, -1}, {1, 3, 1, 2}), F({1, 2, 3}, {3, 1, 1})},
             .expected = {F({-1, -1, -2, -2, -3, -3}, {1, 3, 1, 2})}});
  RunOpCase({.label = "opset 6 per-channel slope", .op_type = "PRelu", .opset = 6,
             .inputs = {F({-1, -1, -1, -1, -1, -1}, {1, 3, 2}), F({1, 2, 3}, {3})},
             .expected = {F({-1, -1, -2, -2, -3, -3}, {1, 3, 2})}});
  RunOpCase({.label = "scalar slope", .op_type = "PRelu", .inputs = {F({-4, 4}, {2}), F({0.25f}, {1})},
             .expected = {F({-1, 4}, {2})}});
  RunOpCase({.label = "int64 opset 9", .op_type = "PRelu", .opset = 9, .inputs = {I64({-3, 3}, {2}), I64({2}, {1})},
             .expected = {I64({-6, 3}, {2})}});
  RunOpCase({.label = "zero-size", .op_type = "PRelu", .inputs = {F({}, {0, 2}), F({1, 2}, {2})}, .expected = {F({}, {0, 2})}});
  RunOpCase({.label = "slope wider than X", .op_type = "PRelu", .inputs = {F({-1}, {1}), F({1, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "does not broadcast"});
  RunOpCase({.label = "opset 7 channel vector", .op_type = "PRelu", .opset = 7,
             .inputs = {F({-1, -1, -1, -1, -1, -1}, {1, 3, 2}), F({1, 2, 3}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "does not broadcast"});
  RunOpCase({.label = "int before opset 9", .op_type = "PRelu", .opset = 8, .inputs = {I32({1}, {1}), I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
}

}  // namespace
}  // namespace strata::testing
