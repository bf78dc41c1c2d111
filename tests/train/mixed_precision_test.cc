// Mixed precision in the Trainer (docs/training.md "Mixed precision"): dtype policies mark the right ops forward and
// backward (and a per-layer override keeps a layer float32), mixed_float16 rounds operands and results to float16
// (checked against a hand-computed float16 oracle), mixed_bfloat16 really changes the arithmetic but stays close to
// float32, and dynamic loss scaling follows Keras's LossScaleOptimizer: an overflow skips the step (weights, slots and
// iterations bitwise unchanged) and halves the scale; 2000 finite steps double it; unscaling is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/random.h"
#include "strata/train.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

using testutil::Mlp;
using testutil::Compile;
using testutil::SameBits;

constexpr char kAttr[] = "strata_compute_dtype";

// Three Gaussian blobs in 8-D: "x" float32 [n, 8] (times `scale`), "label" int64 [n].
data::Element Batch(int n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = scale * ((j % 3 == c ? 2.0f : 0.0f) + 0.7f * rng.Normal());
  }
  data::Element e;
  e.Set("x", x);
  e.Set("label", y);
  return e;
}

// The slots without the loss-scale state.
std::map<std::string, Tensor> OptimizerSlots(const TrainingState& s) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, t] : s.slots)
    if (k.rfind("optimizer/loss_scale/", 0) != 0) out[k] = t;
  return out;
}

std::string Mark(const graph::Node& n) {
  const graph::Attribute* a = n.FindAttr(kAttr);
  return a == nullptr ? "" : a->s();
}

TEST(MixedPrecisionTest, PolicyMarksConvAndMatMulForwardAndBackwardWithPerLayerOverride) {
  auto in = nn::Input({8, 8, 1}, "x");
  auto conv = nn::Conv2D(4, 3, {.activation = "relu"});
  auto x = conv(in);
  x = nn::BatchNormalization()(x);
  x = nn::Flatten()(x);
  auto hidden = nn::Dense(8, {.activation = "relu", .name = "hidden"});
  hidden->set_dtype_policy(nn::DTypePolicy::kFloat32);  // Keras: Dense(..., dtype="float32")
  x = hidden(x);
  auto logits = nn::Dense(2, {.name = "head"})(x);
  nn::Model model({in}, {{"logits", logits}}, "cnn");
  TrainerOptions to;
  to.mixed_precision = nn::DTypePolicy::kMixedBFloat16;
  auto t = Trainer::Create(&model, Compile(), to);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE((*t)->loss_scaling());  // Keras: no loss scaling under mixed_bfloat16
  data::Element batch;
  batch.Set("x", Tensor::Zeros(DType::kFloat32, Shape{4, 8, 8, 1}));
  batch.Set("label", Tensor::Zeros(DType::kInt64, Shape{4}));
  ASSERT_TRUE((*t)->TrainOnBatch(batch).ok());
  const graph::Model* g = (*t)->training_graph();
  ASSERT_NE(g, nullptr);
  std::map<std::string, int> marked, unmarked;
  for (const graph::Node& n : g->graph.nodes) {
    const std::string key = n.op_type + "@" + n.name.substr(0, n.name.find('/')) +
                            (n.name.rfind("grad/", 0) == 0 ? ":" + n.name.substr(5, n.name.find('/', 5) - 5) : "");
    (Mark(n) == "bfloat16" ? marked : unmarked)[key]++;
    if (n.op_type == "BatchNormalization" || n.op_type == "Softmax" || n.op_type == "LogSoftmax" ||
        n.op_type.find("Reduce") == 0 || n.op_type == "BatchNormalizationGrad") {
      EXPECT_EQ(Mark(n), "") << n.Describe() << " must stay float32";
    }
  }
  // conv2d: forward, backward data is not needed (input layer), backward weights.
  EXPECT_EQ(marked["Conv@conv2d"], 1);
  EXPECT_EQ(marked["ConvBackwardFilter@grad:conv2d"], 1);
  // head: forward MatMul and its two gradient MatMuls (dX feeds hidden, dW).
  EXPECT_EQ(marked["MatMul@head"], 1);
  EXPECT_EQ(marked["MatMul@grad:head"], 2);
  // hidden keeps float32: its forward and gradient MatMuls are unmarked.
  EXPECT_EQ(marked["MatMul@hidden"], 0);
  EXPECT_EQ(marked["MatMul@grad:hidden"], 0);
  EXPECT_EQ(unmarked["MatMul@hidden"], 1);
  EXPECT_EQ(unmarked["MatMul@grad:hidden"], 2);
}

// mixed_float16 on Dense(3, no bias): the forward result must be fp16(sum_k fp16(x_k) * fp16(w_k)), computed here in
// double from the float16 conversions (one float16 ulp of slack for float32 summation order).
TEST(MixedPrecisionTest, MixedFloat16RoundsOperandsAndResultsToFloat16) {
  auto in = nn::Input({8}, "x");
  auto logits = nn::Dense(3, {.use_bias = false})(in);
  nn::Model model({in}, {{"logits", logits}}, "dense");
  TrainerOptions to;
  to.mixed_precision = nn::DTypePolicy::kMixedFloat16;
  auto t = Trainer::Create(&model, Compile(), to);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->loss_scaling());
  EXPECT_EQ((*t)->loss_scale(), 32768.0);
  const data::Element batch = Batch(16, 3, 1.37f);
  auto out = (*t)->PredictOnBatch(batch);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& y = out->at("logits");
  const Tensor& x = *batch.Find("x");
  const Tensor& w = model.weights().at("dense/kernel");  // (8, 3)
  auto h = [](float v) { return static_cast<double>(static_cast<float>(Float16(v))); };
  int not_fp32 = 0;
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 3; ++j) {
      double want = 0, exact = 0;
      for (int k = 0; k < 8; ++k) {
        want += h(x.data<float>()[i * 8 + k]) * h(w.data<float>()[k * 3 + j]);
        exact += double(x.data<float>()[i * 8 + k]) * w.data<float>()[k * 3 + j];
      }
      want = h(static_cast<float>(want));
      const float got = y.data<float>()[i * 3 + j];
      EXPECT_EQ(h(got), got) << "output " << i << "," << j << " is not a float16 value";
      EXPECT_NEAR(got, want, std::abs(want) * std::ldexp(1.0, -10) + 1e-7) << i << "," << j;
      not_fp32 += std::abs(got - exact) > 1e-6 * std::abs(exact);
    }
  }
  EXPECT_GT(not_fp32, 0) << "the results equal float32 arithmetic: nothing was rounded";
}

TEST(MixedPrecisionTest, MixedBFloat16StepIsCloseToFloat32ButNotEqual) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "no avx512_bf16: mixed_bfloat16 runs float32 here";
  auto run = [](nn::DTypePolicy p) {
    auto model = Mlp();
    TrainerOptions to;
    to.seed = 7;
    to.mixed_precision = p;
    auto t = *Trainer::Create(model.get(), Compile("sgd", 0.1), to);
    double loss = 0;
    for (int s = 0; s < 3; ++s) loss = *(*t->TrainOnBatch(Batch(64, 11 + s))).Find("loss");
    return std::make_pair(loss, t->GetState().weights);
  };
  const auto [loss32, w32] = run(nn::DTypePolicy::kFloat32);
  const auto [loss16, w16] = run(nn::DTypePolicy::kMixedBFloat16);
  EXPECT_FALSE(SameBits(w32, w16)) << "mixed_bfloat16 trained bitwise like float32: no bfloat16 kernel ran";
  EXPECT_NEAR(loss16, loss32, 2e-2 * std::abs(loss32));
  for (const auto& [name, a] : w32) {
    const Tensor& b = w16.at(name);
    double max_abs = 0, max_diff = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      max_abs = std::max(max_abs, double(std::abs(a.data<float>()[i])));
      max_diff = std::max(max_diff, double(std::abs(a.data<float>()[i] - b.data<float>()[i])));
    }
    EXPECT_LE(max_diff, 1e-2 * max_abs + 1e-6) << name;
  }
}

TEST(LossScaleTest, OnByDefaultOnlyUnderMixedFloat16AndChecked) {
  for (auto [policy, mode, on] : {std::tuple{nn::DTypePolicy::kFloat32, LossScaleOptions::Mode::kAuto, false},
                                  std::tuple{nn::DTypePolicy::kMixedBFloat16, LossScaleOptions::Mode::kAuto, false},
                                  std::tuple{nn::DTypePolicy::kMixedFloat16, LossScaleOptions::Mode::kAuto, true},
                                  std::tuple{nn::DTypePolicy::kMixedFloat16, LossScaleOptions::Mode::kOff, false},
                                  std::tuple{nn::DTypePolicy::kFloat32, LossScaleOptions::Mode::kDynamic, true}}) {
    auto model = Mlp();
    TrainerOptions to;
    to.mixed_precision = policy;
    to.loss_scale.mode = mode;
    auto t = Trainer::Create(model.get(), Compile(), to);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ((*t)->loss_scaling(), on) << nn::DTypePolicyName(policy) << " " << LossScaleModeName(mode);
    EXPECT_EQ((*t)->loss_scale(), on ? 32768.0 : 1.0);
  }
  auto model = Mlp();
  TrainerOptions bad;
  bad.loss_scale.mode = LossScaleOptions::Mode::kDynamic;
  bad.loss_scale.initial_scale = 1000;
  auto t = Trainer::Create(model.get(), Compile(), bad);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("power of two"), std::string::npos) << t.status().ToString();
  EXPECT_FALSE(nn::ParseDTypePolicy("mixed_float8").ok());
  EXPECT_EQ(*nn::ParseDTypePolicy("bf16"), nn::DTypePolicy::kMixedBFloat16);
  EXPECT_FALSE(ParseLossScaleMode("static").ok());
}

// Scaling the loss by a power of two and dividing the gradients by it is exact: a float32 run with dynamic loss
// scaling trains bitwise like one without.
TEST(LossScaleTest, UnscalingIsExact) {
  auto run = [](LossScaleOptions::Mode mode) {
    auto model = Mlp();
    TrainerOptions to;
    to.seed = 3;
    to.loss_scale.mode = mode;
    auto t = *Trainer::Create(model.get(), Compile("adam", 0.01), to);
    for (int s = 0; s < 5; ++s) EXPECT_TRUE(t->TrainOnBatch(Batch(32, 20 + s)).ok());
    EXPECT_EQ(t->iterations(), 5);
    return t->GetState();
  };
  const TrainingState off = run(LossScaleOptions::Mode::kOff), on = run(LossScaleOptions::Mode::kDynamic);
  EXPECT_TRUE(SameBits(off.weights, on.weights));
  EXPECT_TRUE(SameBits(OptimizerSlots(off), OptimizerSlots(on)));
  EXPECT_EQ(on.slots.at("optimizer/loss_scale/dynamic_scale").data<float>()[0], 32768.0f);
  EXPECT_EQ(on.slots.at("optimizer/loss_scale/step_counter").data<int64_t>()[0], 5);
}

// mixed_float16, inputs times 100: the forward pass stays within float16 (the loss is finite), but the last layer's
// weight gradient times 2^15 passes 65504 and becomes infinity. Each such step is skipped (weights, slots and
// iterations bitwise unchanged) and halves the scale, until the scale is small enough; that step trains.
TEST(LossScaleTest, OverflowSkipsTheStepAndHalvesTheScale) {
  auto model = Mlp();
  TrainerOptions to;
  to.seed = 1;
  to.mixed_precision = nn::DTypePolicy::kMixedFloat16;
  auto t = *Trainer::Create(model.get(), Compile("adam", 1e-3), to);
  const data::Element batch = Batch(32, 5, 100.0f);
  double scale = 32768;
  int skipped = 0;
  for (;;) {
    ASSERT_LT(skipped, 20) << "the scale kept halving";
    const TrainingState before = t->GetState();
    auto logs = t->TrainOnBatch(batch);
    ASSERT_TRUE(logs.ok()) << logs.status().ToString();
    ASSERT_TRUE(std::isfinite(*logs->Find("loss"))) << "the forward pass overflowed, not the gradients";
    const TrainingState after = t->GetState();
    if (t->skipped_steps() == skipped) {  // trained
      EXPECT_FALSE(SameBits(before.weights, after.weights));
      EXPECT_EQ(t->iterations(), 1);
      EXPECT_EQ(t->loss_scale(), scale);
      EXPECT_EQ(after.slots.at("optimizer/loss_scale/step_counter").data<int64_t>()[0], 1);
      break;
    }
    ++skipped;
    scale /= 2;
    EXPECT_EQ(t->skipped_steps(), skipped);
    EXPECT_TRUE(SameBits(before.weights, after.weights)) << "skipped step " << skipped << " changed the weights";
    EXPECT_TRUE(SameBits(OptimizerSlots(before), OptimizerSlots(after))) << "skipped step changed the slots";
    EXPECT_EQ(t->iterations(), 0);
    EXPECT_EQ(t->loss_scale(), scale);
    EXPECT_EQ(after.slots.at("optimizer/loss_scale/step_counter").data<int64_t>()[0], 0);
  }
  EXPECT_GE(skipped, 1) << "no step overflowed: the test does not exercise the skip";
}

// Keras's dynamic_growth_steps: the 2000th finite step in a row doubles the scale and resets the counter.
TEST(LossScaleTest, TwoThousandFiniteStepsDoubleTheScale) {
  auto model = Mlp();
  TrainerOptions to;
  to.loss_scale.mode = LossScaleOptions::Mode::kDynamic;
  auto t = *Trainer::Create(model.get(), Compile("sgd", 1e-4), to);
  const data::Element batch = Batch(8, 9);
  for (int s = 0; s < 1999; ++s) ASSERT_TRUE(t->TrainOnBatch(batch).ok());
  EXPECT_EQ(t->loss_scale(), 32768.0);
  EXPECT_EQ(t->GetState().slots.at("optimizer/loss_scale/step_counter").data<int64_t>()[0], 1999);
  ASSERT_TRUE(t->TrainOnBatch(batch).ok());
  EXPECT_EQ(t->loss_scale(), 65536.0);
  EXPECT_EQ(t->GetState().slots.at("optimizer/loss_scale/step_counter").data<int64_t>()[0], 0);
  EXPECT_EQ(t->skipped_steps(), 0);
  EXPECT_EQ(t->iterations(), 2000);
}

}  // namespace
}  // namespace strata::train
