// The strata training ops through the op harness: optimizer updates against the spec's worked examples
// (specs/tf-formats.md §6.3), GlobalNorm, SeededDropout, and the loss ops with float64 finite-difference gradients.
#include <cmath>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::AttributeMap;

// Runs one node through the planned executor and returns its outputs.
std::vector<Tensor> RunNode(const std::string& op, AttributeMap attrs, std::vector<Tensor> inputs, int num_outputs) {
  graph::Model m;
  m.opset_imports[""] = 17;
  m.opset_imports["strata"] = 1;
  graph::Node n;
  n.name = "n";
  n.op_type = op;
  n.domain = "strata";
  n.opset = 1;
  n.attrs = std::move(attrs);
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    m.graph.inputs.push_back({name, inputs[i].dtype(), PartialShape::Of(inputs[i].shape())});
    feeds.emplace_back(name, inputs[i]);
  }
  for (int i = 0; i < num_outputs; ++i) {
    n.outputs.push_back("out" + std::to_string(i));
    m.graph.outputs.push_back({"out" + std::to_string(i)});
  }
  m.graph.nodes.push_back(n);
  auto s = graph::Session::Create(std::make_shared<graph::Model>(m));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  std::vector<Tensor> out;
  Status st = (*s)->Run(feeds, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(AdamUpdateTest, FirstStepMatchesTheSpec) {
  // w=1, g=0.5, lr=0.001, t=1 -> 0.999000006325 (epsilon-hat form).
  auto out = RunNode("AdamUpdate", {}, {D({1.0}, {1}), D({0.5}, {1}), D({0.0}, {1}), D({0.0}, {1}), D({0.001}, {}),
                                        I64({0}, {})}, 3);
  EXPECT_NEAR(out[0].data<double>()[0], 0.999000006325, 1e-12);
  EXPECT_NEAR(out[1].data<double>()[0], 0.05, 1e-7);  // betas are float32 attributes, as in Keras
  EXPECT_NEAR(out[2].data<double>()[0], 0.00025, 1e-8);
}

TEST(AdamUpdateTest, WeightDecayGradScaleAndAmsgrad) {
  AttributeMap a;
  a["weight_decay"] = AFloat(0.004f);
  a["amsgrad"] = AInt(1);
  // grad_scale 0.5 halves g; decay first: w * (1 - 0.004 * 0.1).
  auto out = RunNode("AdamUpdate", a, {D({2.0}, {1}), D({1.0}, {1}), D({0.0}, {1}), D({0.0}, {1}), D({0.1}, {}),
                                       I64({0}, {}), D({0.5}, {}), D({0.0}, {1})}, 4);
  const double g = 0.5, m = 0.1 * g, v = 0.001 * g * g;
  const double alpha = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
  const double want = 2.0 * (1 - float(0.004) * 0.1) - alpha * m / (std::sqrt(v) + double(float(1e-7)));
  EXPECT_NEAR(out[0].data<double>()[0], want, 1e-9);
  EXPECT_NEAR(out[3].data<double>()[0], v, 1e-4 * v);  // float32 betas
}

TEST(SgdUpdateTest, MomentumAndNesterovMatchTheSpec) {
  // lr 0.1, momentum 0.9, g 0.5, two steps from w = 1: momentum 0.855, Nesterov 0.7695.
  for (int nesterov : {0, 1}) {
    AttributeMap a;
    a["momentum"] = AFloat(0.9f);
    a["nesterov"] = AInt(nesterov);
    Tensor w = D({1.0}, {1}), m = D({0.0}, {1});
    for (int step = 0; step < 2; ++step) {
      auto out = RunNode("SGDUpdate", a, {w, D({0.5}, {1}), D({0.1}, {}), m}, 2);
      w = out[0], m = out[1];
    }
    EXPECT_NEAR(w.data<double>()[0], nesterov ? 0.7695 : 0.855, 1e-7) << "nesterov=" << nesterov;
  }
  auto plain = RunNode("SGDUpdate", {}, {F({1.0f, 2.0f}, {2}), F({0.5f, -1.0f}, {2}), F({0.1f}, {})}, 1);
  EXPECT_EQ(plain[0].ToVector<float>(), (std::vector<float>{0.95f, 2.1f}));
}

TEST(RmspropUpdateTest, PlainCenteredAndMomentum) {
  auto out = RunNode("RMSpropUpdate", {}, {D({1.0}, {1}), D({0.5}, {1}), D({0.0}, {1}), D({0.01}, {})}, 2);
  const double vel = 0.1 * 0.25;
  // rho is a float32 attribute (as Keras keeps hyperparameters): compare at float precision.
  EXPECT_NEAR(out[1].data<double>()[0], vel, 1e-6 * vel);
  EXPECT_NEAR(out[0].data<double>()[0], 1.0 - 0.01 * 0.5 / std::sqrt(vel + double(float(1e-7))), 1e-7);
  AttributeMap a;
  a["centered"] = AInt(1);
  a["momentum"] = AFloat(0.5f);
  auto c = RunNode("RMSpropUpdate", a, {D({1.0}, {1}), D({0.5}, {1}), D({0.0}, {1}), D({0.01}, {}), D({0.0}, {1}),
                                        D({0.0}, {1})}, 4);
  const double avg = 0.1 * 0.5, inc = 0.01 * 0.5 / std::sqrt(vel - avg * avg + double(float(1e-7)));
  EXPECT_NEAR(c[0].data<double>()[0], 1.0 - inc, 1e-7);
  EXPECT_NEAR(c[2].data<double>()[0], inc, 1e-7);
  EXPECT_NEAR(c[3].data<double>()[0], avg, 1e-7);
}

TEST(GlobalNormTest, NormAndClipScale) {
  AttributeMap a;
  a["clip_norm"] = AFloat(1.0f);
  auto out = RunNode("GlobalNorm", a, {F({3.0f}, {1}), F({4.0f, 0.0f}, {2})}, 2);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 5.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 0.2f);
  AttributeMap big;
  big["clip_norm"] = AFloat(10.0f);
  EXPECT_FLOAT_EQ(RunNode("GlobalNorm", big, {F({3.0f, 4.0f}, {2})}, 2)[1].data<float>()[0], 1.0f);
}

TEST(SeededDropoutTest, RateScaleDeterminismAndSeedDependence) {
  AttributeMap a;
  a["rate"] = AFloat(0.25f);
  Tensor x = RandomF({64, 128}, 7, 1.0f, 2.0f);
  auto r1 = RunNode("SeededDropout", a, {x, I64({42}, {})}, 2);
  auto r2 = RunNode("SeededDropout", a, {x, I64({42}, {})}, 2);
  auto r3 = RunNode("SeededDropout", a, {x, I64({43}, {})}, 2);
  EXPECT_EQ(CompareTensors(r1[0], r2[0], 0, 0), "");
  EXPECT_NE(CompareTensors(r1[1], r3[1], 0, 0), "");
  int64_t kept = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float m = r1[1].data<float>()[i];
    ASSERT_TRUE(m == 0.0f || std::abs(m - 1.0f / 0.75f) < 1e-6f) << m;
    kept += m != 0;
    EXPECT_FLOAT_EQ(r1[0].data<float>()[i], x.data<float>()[i] * m);
  }
  EXPECT_NEAR(double(kept) / double(x.num_elements()), 0.75, 0.02);
  AttributeMap zero;
  zero["rate"] = AFloat(0.0f);
  EXPECT_EQ(CompareTensors(RunNode("SeededDropout", zero, {x, I64({1}, {})}, 1)[0], x, 0, 0), "");
}

TEST(SeededDropoutTest, GradientIsTheMask) {
  OpCase c;
  c.op_type = "SeededDropout";
  c.domain = "strata";
  c.opset = 1;
  c.attrs["rate"] = AFloat(0.5f);
  c.inputs = {Cast(RandomF({4, 5}, 3), DType::kFloat64), I64({9}, {})};
  c.num_outputs = 2;
  c.grad_inputs = {0};
  CheckGradient(c);
}

// Loss ops: values against hand computations and gradients by finite differences.
TEST(LossOpsTest, SparseSoftmaxCrossEntropy) {
  // logits [[1,2,3],[1,1,1]], labels [2,0]: mean(lse - x[label]).
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), lse1 = 1.0 + std::log(3.0);
  auto out = RunNode("SoftmaxCrossEntropyWithLogits", {{"from_logits", AInt(1)}},
                     {D({1, 2, 3, 1, 1, 1}, {2, 3}), I64({2, 0}, {2})}, 1);
  EXPECT_NEAR(out[0].data<double>()[0], ((lse0 - 3) + (lse1 - 1)) / 2, 1e-12);
  for (int from_logits : {1, 0}) {
    OpCase c;
    c.op_type = "SoftmaxCrossEntropyWithLogits";
    c.domain = "strata";
    c.opset = 1;
    c.attrs["from_logits"] = AInt(from_logits);
    Tensor x = Cast(RandomF({3, 4}, 11, from_logits ? -2.0f : 0.1f, from_logits ? 2.0f : 1.0f), DType::kFloat64);
    c.inputs = {x, I64({1, 3, 0}, {3})};
    c.grad_inputs = {0};
    CheckGradient(c);
    c.inputs = {x, Cast(RandomF({3, 4}, 12, 0.0f, 1.0f), DType::kFloat64)};  // soft labels
    CheckGradient(c);
  }
}

TEST(LossOpsTest, SparseLabelOutOfRangeIsAnError) {
  OpCase c;
  c.op_type = "SoftmaxCrossEntropyWithLogits";
  c.domain = "strata";
  c.opset = 1;
  c.inputs = {F({1, 2, 3}, {1, 3}), I64({3}, {1})};
  c.expect_error = StatusCode::kInvalidArgument;
  c.error_substr = "outside [0, 3)";
  RunOpCase(c);
}

TEST(LossOpsTest, BinaryAndRegressionLosses) {
  // Keras: binary_crossentropy(from_logits) of x=0, z=1 is log 2; MSE/MAE/Huber by hand.
  auto bce = RunNode("SigmoidCrossEntropyWithLogits", {{"from_logits", AInt(1)}}, {D({0.0}, {1}), D({1.0}, {1})}, 1);
  EXPECT_NEAR(bce[0].data<double>()[0], std::log(2.0), 1e-12);
  auto mse = RunNode("RegressionLoss", {{"kind", AString("mse")}}, {D({1, 2, 4}, {3}), D({1, 1, 1}, {3})}, 1);
  EXPECT_NEAR(mse[0].data<double>()[0], (0 + 1 + 9) / 3.0, 1e-12);
  auto mae = RunNode("RegressionLoss", {{"kind", AString("mae")}}, {D({1, 2, 4}, {3}), D({1, 1, 1}, {3})}, 1);
  EXPECT_NEAR(mae[0].data<double>()[0], (0 + 1 + 3) / 3.0, 1e-12);
  auto hub = RunNode("RegressionLoss", {{"kind", AString("huber")}, {"delta", AFloat(1.0f)}},
                     {D({1, 1.5, 4}, {3}), D({1, 1, 1}, {3})}, 1);
  EXPECT_NEAR(hub[0].data<double>()[0], (0 + 0.125 + (3 - 0.5)) / 3.0, 1e-12);
  for (const char* kind : {"mse", "mae", "huber"}) {
    OpCase c;
    c.op_type = "RegressionLoss";
    c.domain = "strata";
    c.opset = 1;
    c.attrs["kind"] = AString(kind);
    c.inputs = {Cast(RandomF({2, 3}, 5, -2.0f, 2.0f), DType::kFloat64), Cast(RandomF({2, 3}, 6), DType::kFloat64)};
    c.grad_inputs = {0};
    CheckGradient(c);
  }
  for (int from_logits : {1, 0}) {
    OpCase c;
    c.op_type = "SigmoidCrossEntropyWithLogits";
    c.domain = "strata";
    c.opset = 1;
    c.attrs["from_logits"] = AInt(from_logits);
    c.inputs = {Cast(RandomF({2, 3}, 8, from_logits ? -3.0f : 0.05f, from_logits ? 3.0f : 0.95f), DType::kFloat64),
                Cast(RandomF({2, 3}, 9, 0.0f, 1.0f), DType::kFloat64)};
    c.grad_inputs = {0};
    CheckGradient(c);
  }
}

}  // namespace
}  // namespace strata::testing
