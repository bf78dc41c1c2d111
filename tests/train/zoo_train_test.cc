// The Keras applications train: a few steps of MobileNetV3Small and EfficientNetV2B0 through the Trainer (gradients
// of hard_sigmoid/hard_swish, squeeze-and-excitation, ZeroPadding2D's Pad, per-sample stochastic depth), with finite
// losses that go down on one repeated batch, and batch-norm moving statistics that move. (ResNet50V2 trains too but
// takes a minute to compile here: left to `strata train --model_name ResNet50V2`.)
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "strata/train.h"

namespace strata::train {
namespace {

data::Element Batch(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 32, 32, 3});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    y.data<int64_t>()[i] = i % 2;
    for (int j = 0; j < 32 * 32 * 3; ++j)
      x.data<float>()[i * 32 * 32 * 3 + j] = 127.5f + 60.0f * rng.Normal() + (i % 2 ? 40.0f : -40.0f);
  }
  data::Element e;
  e.Set("input_image", x);
  e.Set("label", y);
  return e;
}

TEST(ZooTrainTest, ApplicationsTrainAFewSteps) {
  for (const char* name : {"MobileNetV3Small", "EfficientNetV2B0"}) {
    auto model = nn::ZooModel(name, {32, 32, 3}, 2);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status().ToString();
    CompileOptions c;
    c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
    c.optimizer = "adam";
    c.optimizer_config.learning_rate = optim::ConstantLR(1e-3);
    auto t = Trainer::Create(model->get(), c, {.seed = 1});
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    const std::string bn = std::string(name) == "MobileNetV3Small" ? "conv_bn/moving_mean" : "stem_bn/moving_mean";
    const std::vector<float> mean_before = (*model)->GetWeight(bn)->ToVector<float>();
    const data::Element batch = Batch(8, 3);
    std::vector<double> losses;
    for (int step = 0; step < 6; ++step) {
      auto logs = (*t)->TrainOnBatch(batch);
      ASSERT_TRUE(logs.ok()) << name << ": " << logs.status().ToString();
      ASSERT_NE(logs->Find("loss"), nullptr);
      losses.push_back(*logs->Find("loss"));
      EXPECT_TRUE(std::isfinite(losses.back())) << name << " step " << step;
    }
    EXPECT_LT(losses.back(), losses.front()) << name;
    EXPECT_NE((*t)->GetState().weights.at(bn).ToVector<float>(), mean_before) << name;
  }
}

// Keras's swish (x * sigmoid(x), as layers write it) trains as one strata.Swish with one strata.SwishGrad: no Sigmoid,
// SigmoidGrad or Sum left in the training graph of a Conv2D(activation="swish") followed by Activation("swish"), and
// the loss still goes down. (The ops' values and gradients: GradOpsTest.Swish; whole models against Keras: the zoo
// peer tests.)
TEST(ZooTrainTest, SwishTrainsAsOneOpEachWay) {
  auto in = nn::Input({6, 6, 3}, "input_image");
  auto x = nn::Conv2D(4, 3, {.activation = "swish", .name = "c"})(in);
  x = nn::Activation("swish", "a")(x);
  x = nn::Flatten()(x);
  auto logits = nn::Dense(2, {.name = "head"})(x);
  nn::Model model({in}, {{"logits", logits}}, "swish");
  CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.optimizer = "sgd";
  c.optimizer_config.learning_rate = optim::ConstantLR(0.05);
  auto t = Trainer::Create(&model, c, {.seed = 1});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Rng rng(5);
  Tensor images = Tensor::Empty(DType::kFloat32, Shape{4, 6, 6, 3});
  for (int i = 0; i < 4 * 6 * 6 * 3; ++i) images.data<float>()[i] = rng.Normal() + ((i / 108) % 2 ? 1.0f : -1.0f);
  data::Element batch;
  batch.Set("input_image", images);
  batch.Set("label", Tensor::FromVector<int64_t>({0, 1, 0, 1}));
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {
    auto logs = (*t)->TrainOnBatch(batch);
    ASSERT_TRUE(logs.ok()) << logs.status().ToString();
    losses.push_back(*logs->Find("loss"));
  }
  EXPECT_LT(losses.back(), losses.front());
  const graph::Model* g = (*t)->training_graph();
  ASSERT_NE(g, nullptr);
  std::map<std::string, int> ops;
  for (const graph::Node& n : g->graph.nodes) ops[n.domain + ":" + n.op_type]++;
  EXPECT_EQ(ops["strata:Swish"], 2);
  EXPECT_EQ(ops["strata:SwishGrad"], 2);
  EXPECT_EQ(ops[":Sigmoid"], 0);
  EXPECT_EQ(ops["strata:SigmoidGrad"], 0);
  EXPECT_EQ(ops[":Sum"], 0);
}

}  // namespace
}  // namespace strata::train
