// Learning-rate schedules against the worked checks of specs/tf-formats.md §6.4, and optimizer construction.
#include <gtest/gtest.h>

#include "strata/optim.h"

namespace strata::optim {
namespace {

TEST(SchedulesTest, ExponentialDecay) {
  auto s = *ExponentialDecay(0.1, 100, 0.96);
  EXPECT_NEAR((*s)(0), 0.1, 1e-12);
  EXPECT_NEAR((*s)(50), 0.09797959, 1e-8);
  EXPECT_NEAR((*s)(100), 0.096, 1e-12);
  EXPECT_NEAR((*s)(150), 0.09406041, 1e-8);
  EXPECT_NEAR((**ExponentialDecay(0.1, 100, 0.96, true))(150), 0.096, 1e-12);
}

TEST(SchedulesTest, PiecewiseBoundaryBelongsToTheEarlierInterval) {
  auto s = *PiecewiseConstantDecay({100, 200}, {1.0, 0.5, 0.1});
  EXPECT_EQ((*s)(100), 1.0);
  EXPECT_EQ((*s)(101), 0.5);
  EXPECT_EQ((*s)(200), 0.5);
  EXPECT_EQ((*s)(201), 0.1);
  EXPECT_FALSE(PiecewiseConstantDecay({100}, {1.0}).ok());
  EXPECT_FALSE(PiecewiseConstantDecay({200, 100}, {1.0, 2.0, 3.0}).ok());
}

TEST(SchedulesTest, PolynomialDecay) {
  auto s = *PolynomialDecay(0.1, 1000);
  EXPECT_NEAR((*s)(500), 0.05005, 1e-12);
  EXPECT_NEAR((*s)(1500), 0.0001, 1e-12);
  EXPECT_NEAR((**PolynomialDecay(0.1, 1000, 0.0001, 1.0, true))(1500), 0.025075, 1e-12);
}

TEST(SchedulesTest, CosineWithWarmup) {
  auto s = *CosineDecay(0.0, 1000, 0.0, 0.1, 100);
  EXPECT_NEAR((*s)(0), 0.0, 1e-12);
  EXPECT_NEAR((*s)(50), 0.05, 1e-12);
  EXPECT_NEAR((*s)(100), 0.1, 1e-12);
  EXPECT_NEAR((*s)(600), 0.05, 1e-12);
  EXPECT_NEAR((*s)(1100), 0.0, 1e-12);
  EXPECT_NEAR((*s)(5000), 0.0, 1e-12);
  auto plain = *CosineDecay(1.0, 10, 0.1);
  EXPECT_NEAR((*plain)(10), 0.1, 1e-12);
}

TEST(SchedulesTest, InverseTimeAndBadSteps) {
  EXPECT_NEAR((**InverseTimeDecay(1.0, 10, 0.5))(20), 0.5, 1e-12);
  EXPECT_FALSE(CosineDecay(0.1, 0).ok());
  EXPECT_FALSE(ExponentialDecay(0.1, -1, 0.5).ok());
}

TEST(OptimizerTest, DefaultsAndValidation) {
  auto sgd = *MakeOptimizer("SGD");
  EXPECT_EQ((*sgd->learning_rate())(0), 0.01);
  EXPECT_TRUE(sgd->SlotNames().empty());
  auto adamw = *MakeOptimizer("adamw");
  EXPECT_EQ(adamw->weight_decay_for("dense/kernel"), 0.004);
  EXPECT_EQ(adamw->SlotNames(), (std::vector<std::string>{"m", "v"}));
  OptimizerConfig c;
  c.exclude_from_weight_decay = {"bias"};
  auto adamw2 = *MakeOptimizer("adamw", c);
  EXPECT_EQ(adamw2->weight_decay_for("dense/bias"), 0.0);
  OptimizerConfig both;
  both.clip.clipnorm = 1.0;
  both.clip.global_clipnorm = 1.0;
  EXPECT_FALSE(MakeOptimizer("adam", both).ok());
  EXPECT_FALSE(MakeOptimizer("adagrad").ok());
}

TEST(OptimizerTest, GroupClippingEmitsOneNormPerGroup) {
  OptimizerConfig c;
  c.clip.group_clipnorm = {{"backbone/", 1.0}, {"head/", 5.0}};
  auto opt = *MakeOptimizer("sgd", c);
  graph::Graph g;
  std::vector<VariableGrad> vars = {{"backbone/w", "g0", {}}, {"backbone/b", "g1", {}}, {"head/w", "g2", {}},
                                    {"other/w", "g3", {}}};
  std::vector<VariableUpdate> updates;
  ASSERT_TRUE(opt->EmitUpdates(&g, vars, "lr", "it", &updates).ok());
  int norms = 0;
  for (const auto& n : g.nodes) {
    if (n.op_type != "GlobalNorm") continue;
    ++norms;
    const float clip = n.GetFloat("clip_norm", 0);
    if (clip == 1.0f) {
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"g0", "g1"}));
    } else {
      EXPECT_EQ(clip, 5.0f);
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"g2"}));
    }
  }
  EXPECT_EQ(norms, 2);
  ASSERT_EQ(updates.size(), 4u);
  // The unmatched variable has no grad_scale input.
  for (const auto& n : g.nodes)
    if (n.op_type == "SGDUpdate" && n.inputs[0] == "other/w") {
      EXPECT_EQ(n.inputs.size(), 3u);
    }
}

}  // namespace
}  // namespace strata::optim
