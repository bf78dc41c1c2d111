// Table rows for the ai.onnx.preview.training update ops Adagrad, Adam and Momentum. Expected values are the ONNX
// spec's update formulas evaluated with numpy in float64 (the same formulas as its backend-test generators).
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";

TEST(AdagradTest, Steps) {
  RunOpCase({.label = "decay and norm",
             .op_type = "Adagrad",
             .domain = kTraining,
             .opset = 1,
             .attrs = {{"decay_factor", AFloat(0.5f)}, {"norm_coefficient", AFloat(0.01f)}},
             .inputs = {F({0.1f}, {}), I64({3}, {}), F({1, -2}, {2}), F({0.5f, 0.25f}, {2}), F({1, 0}, {2})},
             .num_outputs = 2,
             .expected = {F({0.981826973f, -2.03999983f}, {2}), F({1.2601f, 0.0529f}, {2})}});
  // Two tensors (the second float64), defaults: r = R, g = G, H_new = H + G^2.
  RunOpCase({.label = "two tensors, defaults",
             .op_type = "Adagrad",
             .domain = kTraining,
             .opset = 1,
             .inputs = {D({0.1}, {}), I64({0}, {}), F({1, -2}, {2}), D({3}, {1}), F({0.5f, 0.25f}, {2}), D({-1}, {1}),
                        F({1, 0}, {2}), D({0}, {1})},
             .num_outputs = 4,
             .expected = {F({0.955278665f, -2.09999996f}, {2}), D({3.0999999000000094}, {1}), F({1.25f, 0.0625f}, {2}),
                          D({1}, {1})},
             .rtol = 1e-6});
  RunOpCase({.label = "input count",
             .op_type = "Adagrad",
             .domain = kTraining,
             .opset = 1,
             .inputs = {F({0.1f}, {}), I64({0}, {}), F({1}, {1}), F({1}, {1}), F({1}, {1}), F({1}, {1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "expected 2 + 3 * n inputs"});
  RunOpCase({.label = "float T",
             .op_type = "Adagrad",
             .domain = kTraining,
             .opset = 1,
             .inputs = {F({0.1f}, {}), F({0}, {}), F({1}, {1}), F({1}, {1}), F({1}, {1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "T must be an int64 scalar"});
}

TEST(AdamTest, Steps) {
  RunOpCase(
      {.label = "bias correction at T = 2, default alpha/beta/epsilon",
       .op_type = "Adam",
       .domain = kTraining,
       .opset = 1,
       .attrs = {{"norm_coefficient_post", AFloat(0.1f)}},
       .inputs = {F({0.01f}, {}), I64({2}, {}), F({1, -1}, {2}), F({0.2f, -0.4f}, {2}), F({0.1f, 0}, {2}),
                  F({0.01f, 0.02f}, {2})},
       .num_outputs = 3,
       .expected = {F({0.897673874f, -0.899403071f}, {2}), F({0.11f, -0.04f}, {2}), F({0.01003f, 0.02014f}, {2})}});
  RunOpCase({.label = "shapes differ",
             .op_type = "Adam",
             .domain = kTraining,
             .opset = 1,
             .inputs = {F({0.01f}, {}), I64({2}, {}), F({1, -1}, {2}), F({0.2f}, {1}), F({0.1f, 0}, {2}),
                        F({0.01f, 0.02f}, {2})},
             .num_outputs = 3,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "must be a float tensor of shape [2]"});
}

TEST(MomentumTest, Steps) {
  const std::vector<Tensor> in = {F({0.1f}, {}), I64({5}, {}), F({1, 2}, {2}), F({0.5f, -0.5f}, {2}),
                                  F({0.2f, 0.1f}, {2})};
  auto attrs = [](const char* mode) {
    return graph::AttributeMap{
        {"alpha", AFloat(0.9f)}, {"beta", AFloat(0.5f)}, {"norm_coefficient", AFloat(0.01f)}, {"mode", AString(mode)}};
  };
  RunOpCase({.label = "standard",
             .op_type = "Momentum",
             .domain = kTraining,
             .opset = 1,
             .attrs = attrs("standard"),
             .inputs = in,
             .num_outputs = 2,
             .expected = {F({0.9565f, 2.015f}, {2}), F({0.435f, -0.15f}, {2})}});
  RunOpCase({.label = "nesterov",
             .op_type = "Momentum",
             .domain = kTraining,
             .opset = 1,
             .attrs = attrs("nesterov"),
             .inputs = in,
             .num_outputs = 2,
             .expected = {F({0.90985f, 2.0615f}, {2}), F({0.435f, -0.15f}, {2})}});
  RunOpCase({.label = "two tensors",
             .op_type = "Momentum",
             .domain = kTraining,
             .opset = 1,
             .attrs = attrs("standard"),
             .inputs = {F({0.1f}, {}), I64({5}, {}), F({1, 2}, {2}), F({4}, {}), F({0.5f, -0.5f}, {2}), F({1}, {}),
                        F({0.2f, 0.1f}, {2}), F({0}, {})},
             .num_outputs = 4,
             .expected = {F({0.9565f, 2.015f}, {2}), F({3.948f}, {}), F({0.435f, -0.15f}, {2}), F({0.52f}, {})}});
  RunOpCase({.label = "mode missing",
             .op_type = "Momentum",
             .domain = kTraining,
             .opset = 1,
             .attrs = {{"alpha", AFloat(0.9f)}, {"beta", AFloat(0.5f)}, {"norm_coefficient", AFloat(0)}},
             .inputs = in,
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "attribute mode (standard or nesterov) is required"});
  RunOpCase({.label = "alpha missing",
             .op_type = "Momentum",
             .domain = kTraining,
             .opset = 1,
             .attrs = {{"beta", AFloat(0.5f)}, {"norm_coefficient", AFloat(0)}, {"mode", AString("standard")}},
             .inputs = in,
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "alpha"});
}

}  // namespace
}  // namespace strata::testing
