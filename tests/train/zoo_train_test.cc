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

}  // namespace
}  // namespace strata::train
