// Open extension points of the trainer (issue 16 item 2): a user optimizer subclass (against a hand computation and
// against the built-in SGD), a user metric, a custom loss (against the hand computation and the built-in equivalent),
// the errors each gives for bad input, the callback factories' one return type, and what the public train.h no
// longer declares.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "strata/onnx.h"
#include "strata/records.h"
#include "strata/util.h"
#include "strata/train.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

using testutil::Mlp;

// ---- user classes, written as a library user would (public headers only) ----

// Heavy-ball momentum with its own slot: v' = 0.5 v + g; w' = w - lr v'.
class HeavyBall : public optim::Optimizer {
 public:
  explicit HeavyBall(optim::OptimizerConfig c = {}) : Optimizer("heavy_ball", std::move(c)) {}
  std::vector<std::string> SlotNames() const override { return {"velocity"}; }

 protected:
  StatusOr<optim::VariableUpdate> BuildUpdate(graph::Builder& b, const optim::UpdateInputs& in) const override {
    const std::string v = b.Emit1("Add", {b.Emit1("Mul", {in.slots.at("velocity"), b.Scalar(0.5f)}), in.grad});
    const std::string w = b.Emit1("Sub", {in.value, b.Emit1("Mul", {v, in.lr})});
    return optim::VariableUpdate{in.variable_name, w, {{"velocity", v}}};
  }
};

// Plain gradient descent written by hand: w' = w - lr g.
class PlainSgd : public optim::Optimizer {
 public:
  explicit PlainSgd(optim::OptimizerConfig c = {}) : Optimizer("plain_sgd", std::move(c)) {}
  std::vector<std::string> SlotNames() const override { return {}; }

 protected:
  StatusOr<optim::VariableUpdate> BuildUpdate(graph::Builder& b, const optim::UpdateInputs& in) const override {
    return optim::VariableUpdate{in.variable_name, b.Emit1("Sub", {in.value, b.Emit1("Mul", {in.grad, in.lr})}), {}};
  }
};

// Declares a slot but forgets to update it.
class ForgetfulOptimizer : public PlainSgd {
 public:
  std::vector<std::string> SlotNames() const override { return {"memory"}; }
};

// Overrides nothing but the slots.
class NoRule : public optim::Optimizer {
 public:
  NoRule() : Optimizer("no_rule", {}) {}
  std::vector<std::string> SlotNames() const override { return {}; }
};

// Counts the rows it saw since the last Reset and sums the labels.
class RowCount : public nn::Metric {
 public:
  explicit RowCount(std::string name = "rows") : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  void Reset() override { rows_ = 0; }
  Status Update(const Tensor& y_true, const Tensor& y_pred) override {
    if (y_pred.rank() < 1) return InvalidArgumentError("rows: the prediction has no batch axis");
    rows_ += y_pred.dim(0);
    ++updates_;
    return Status::OK();
  }
  double Result() const override { return static_cast<double>(rows_); }
  int updates() const { return updates_; }

 private:
  std::string name_;
  int64_t rows_ = 0;
  int updates_ = 0;
};

// The mean squared error from graph ops: mean((pred - float(label))^2).
nn::Loss MyMse() {
  return nn::Loss::Custom("my_mse", [](graph::Builder& b, const std::string& pred,
                                       const std::string& label) -> StatusOr<std::string> {
    const std::string y = b.Emit1("Cast", {label}, {{"to", graph::Attribute::Int(1)}});
    const std::string d = b.Emit1("Sub", {pred, y});
    return b.Emit1("ReduceMean", {b.Emit1("Mul", {d, d})}, {{"keepdims", graph::Attribute::Int(0)}});
  });
}

// ---- a linear model whose step is computed by hand ----

// x [2] -> Dense(1, no bias, kernel ones) = output "y".
std::unique_ptr<nn::Model> Linear() {
  auto in = nn::Input({2}, "x");
  auto y = nn::Dense(1, {.use_bias = false, .kernel_initializer = "ones"})(in);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in}, std::vector<nn::ModelOutput>{{"y", y}},
                                     "linear");
}

// x = [[1, 2], [3, -1]], label = [[1], [0]]. With w = [1, 1]: pred = [3, 2], loss = mean([4, 4]) = 4 and
// dL/dw = (2/2) * (2 * [1, 2] + 2 * [3, -1]) = [8, 2].
data::Element LinearBatch() {
  data::Element e;
  e.Set("x", Tensor::FromVector<float>({1, 2, 3, -1}, Shape{2, 2}));
  e.Set("label", Tensor::FromVector<float>({1, 0}, Shape{2, 1}));
  return e;
}

std::vector<float> Kernel(Trainer& t) {
  auto k = t.GetState().weights.at("dense/kernel");
  return {k.data<float>()[0], k.data<float>()[1]};
}

CompileOptions LinearCompile(OptimizerSpec optimizer, nn::Loss loss = nn::Loss::MeanSquaredError()) {
  CompileOptions c;
  c.loss["y"] = std::move(loss);
  c.optimizer = std::move(optimizer);
  return c;
}

TEST(UserOptimizerTest, TwoStepsMatchTheHandComputation) {
  auto model = Linear();
  auto opt = std::make_shared<HeavyBall>(optim::OptimizerConfig{.learning_rate = optim::ConstantLR(0.1)});
  auto t = Trainer::Create(model.get(), LinearCompile(opt));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(&(*t)->optimizer(), opt.get());
  auto logs = (*t)->TrainOnBatch(LinearBatch());
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_NEAR(*logs->Find("loss"), 4.0, 1e-6);
  // Step 1: v = [8, 2]; w = [1, 1] - 0.1 [8, 2] = [0.2, 0.8].
  std::vector<float> w = Kernel(**t);
  EXPECT_NEAR(w[0], 0.2, 1e-6);
  EXPECT_NEAR(w[1], 0.8, 1e-6);
  // Step 2: pred = [1.8, -0.2], residual [0.8, -0.2], g = 0.8 [1, 2] - 0.2 [3, -1] = [0.2, 1.8];
  // v = 0.5 [8, 2] + [0.2, 1.8] = [4.2, 2.8]; w = [0.2, 0.8] - 0.1 [4.2, 2.8] = [-0.22, 0.52].
  ASSERT_TRUE((*t)->TrainOnBatch(LinearBatch()).ok());
  w = Kernel(**t);
  EXPECT_NEAR(w[0], -0.22, 1e-6);
  EXPECT_NEAR(w[1], 0.52, 1e-6);
  const Tensor v = (*t)->GetState().slots.at("optimizer/dense/kernel/velocity");
  EXPECT_EQ(v.shape(), (Shape{2, 1}));
  EXPECT_NEAR(v.data<float>()[0], 4.2, 1e-6);
  EXPECT_NEAR(v.data<float>()[1], 2.8, 1e-6);
  EXPECT_EQ((*t)->iterations(), 2);
}

TEST(UserOptimizerTest, WeightDecayAndClippingComeFromTheBaseClass) {
  // Decoupled decay first (w -= lr * wd * w), then the rule: [1, 1] - 0.1 * 0.5 * [1, 1] - 0.1 * [8, 2].
  auto model = Linear();
  auto t = *Trainer::Create(model.get(), LinearCompile(std::make_shared<PlainSgd>(optim::OptimizerConfig{
                                             .learning_rate = optim::ConstantLR(0.1), .weight_decay = 0.5})));
  ASSERT_TRUE(t->TrainOnBatch(LinearBatch()).ok());
  std::vector<float> w = Kernel(*t);
  EXPECT_NEAR(w[0], 0.15, 1e-6);
  EXPECT_NEAR(w[1], 0.75, 1e-6);
  // Clipping by norm: |[8, 2]| = sqrt(68), clipped to 1: w = [1, 1] - 0.1 * [8, 2] / sqrt(68).
  auto model2 = Linear();
  optim::OptimizerConfig c{.learning_rate = optim::ConstantLR(0.1)};
  c.clip.clipnorm = 1.0;
  auto t2 = *Trainer::Create(model2.get(), LinearCompile(std::make_shared<PlainSgd>(c)));
  ASSERT_TRUE(t2->TrainOnBatch(LinearBatch()).ok());
  w = Kernel(*t2);
  EXPECT_NEAR(w[0], 1 - 0.8 / std::sqrt(68.0), 1e-6);
  EXPECT_NEAR(w[1], 1 - 0.2 / std::sqrt(68.0), 1e-6);
}

// Three Gaussian blobs in 8-D: "x" float32 [n, 8], "label" int64 [n].
data::Dataset Blobs(int n, uint64_t seed, int batch) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = (j % 3 == c ? 2.0f : 0.0f) + 0.7f * rng.Normal();
  }
  return data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Batch(batch);
}

CompileOptions MlpCompile(OptimizerSpec optimizer) {
  CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.metrics["logits"] = {"accuracy"};
  c.optimizer = std::move(optimizer);
  c.optimizer_config.learning_rate = optim::ConstantLR(0.1);
  return c;
}

TEST(UserOptimizerTest, TrainsAnMlpLikeTheBuiltInSgd) {
  auto mine = Mlp(), builtin = Mlp();
  const optim::OptimizerConfig c{.learning_rate = optim::ConstantLR(0.1)};
  auto t1 = *Trainer::Create(mine.get(), MlpCompile(std::make_shared<PlainSgd>(c)), {.seed = 3, .deterministic = true});
  auto t2 = *Trainer::Create(builtin.get(), MlpCompile(optim::SGD(c)), {.seed = 3, .deterministic = true});
  auto h1 = t1->Fit(Blobs(300, 1, 30), {.epochs = 3, .verbose = 0});
  auto h2 = t2->Fit(Blobs(300, 1, 30), {.epochs = 3, .verbose = 0});
  ASSERT_TRUE(h1.ok()) << h1.status().ToString();
  ASSERT_TRUE(h2.ok()) << h2.status().ToString();
  EXPECT_LT(h1->history.at("loss").back(), 0.5 * h1->history.at("loss").front());
  EXPECT_GT(h1->history.at("accuracy").back(), 0.9);
  // The same rule as SGDUpdate: the same weights after 30 steps (up to float rounding of two op orders).
  const TrainingState mine_state = t1->GetState(), builtin_state = t2->GetState();  // copies: keep them alive
  for (const auto& [name, w] : builtin_state.weights) {
    const Tensor& got = mine_state.weights.at(name);
    for (int64_t i = 0; i < w.num_elements(); ++i)
      ASSERT_NEAR(got.data<float>()[i], w.data<float>()[i], 1e-4) << name << "[" << i << "]";
  }
  EXPECT_EQ(t1->optimizer().name(), "plain_sgd");
}

TEST(UserOptimizerTest, BadRulesAndConfigsAreErrorsNamingThem) {
  auto model = Linear();
  auto t = *Trainer::Create(model.get(), LinearCompile(std::make_shared<ForgetfulOptimizer>()));
  auto s = t->TrainOnBatch(LinearBatch()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("missing [memory]"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("dense/kernel"), std::string::npos) << s.ToString();

  auto t2 = *Trainer::Create(model.get(), LinearCompile(std::make_shared<NoRule>()));
  s = t2->TrainOnBatch(LinearBatch()).status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.ToString().find("no_rule"), std::string::npos) << s.ToString();

  // The base class checks a user optimizer's config like a named one's.
  auto bad = Trainer::Create(model.get(), LinearCompile(std::make_shared<PlainSgd>(optim::OptimizerConfig{
                                              .momentum = 2.0})));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("plain_sgd"), std::string::npos) << bad.status().ToString();
  // Names still work, and an unknown one says what is known.
  auto unknown = Trainer::Create(model.get(), LinearCompile("adamax"));
  EXPECT_NE(unknown.status().ToString().find("expected sgd, adam"), std::string::npos);
}

// ---- custom losses ----

TEST(CustomLossTest, GradientMatchesTheHandComputation) {
  // The custom MSE through autodiff gives dL/dw = [8, 2]: plain SGD at lr 0.1 moves w from [1, 1] to [0.2, 0.8].
  auto model = Linear();
  auto t = *Trainer::Create(model.get(), LinearCompile(optim::SGD({.learning_rate = optim::ConstantLR(0.1)}), MyMse()));
  auto logs = t->TrainOnBatch(LinearBatch());
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_NEAR(*logs->Find("loss"), 4.0, 1e-6);
  std::vector<float> w = Kernel(*t);
  EXPECT_NEAR(w[0], 0.2, 1e-6);
  EXPECT_NEAR(w[1], 0.8, 1e-6);
}

// x [4] -> Dense 8 tanh -> Dense 2 = "y" (a regression).
std::unique_ptr<nn::Model> Regressor() {
  auto in = nn::Input({4}, "x");
  auto h = nn::Dense(8, {.activation = "tanh"})(in);
  auto y = nn::Dense(2)(h);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in}, std::vector<nn::ModelOutput>{{"y", y}}, "reg");
}

data::Element RegressionBatch(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 4}), y = Tensor::Empty(DType::kFloat32, Shape{n, 2});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = rng.Normal();
  for (int i = 0; i < n; ++i) {
    y.data<float>()[i * 2] = x.data<float>()[i * 4] - 0.5f * x.data<float>()[i * 4 + 3];
    y.data<float>()[i * 2 + 1] = 0.3f * x.data<float>()[i * 4 + 1];
  }
  data::Element e;
  e.Set("x", x);
  e.Set("label", y);
  return e;
}

TEST(CustomLossTest, TrainsLikeTheBuiltInEquivalent) {
  // Same seed, same steps: the custom MSE (Sub, Mul, ReduceMean and their autodiff gradients) and the built-in
  // fused RegressionLoss give the same losses and weights.
  auto a = Regressor(), b = Regressor();
  auto sgd = [] { return optim::SGD({.learning_rate = optim::ConstantLR(0.05)}); };
  auto ta = *Trainer::Create(a.get(), LinearCompile(sgd(), MyMse()), {.seed = 9, .deterministic = true});
  CompileOptions cb = LinearCompile(sgd());
  auto tb = *Trainer::Create(b.get(), cb, {.seed = 9, .deterministic = true});
  for (int step = 0; step < 5; ++step) {
    const data::Element batch = RegressionBatch(16, 100 + step);
    auto la = ta->TrainOnBatch(batch);
    auto lb = tb->TrainOnBatch(batch);
    ASSERT_TRUE(la.ok()) << la.status().ToString();
    ASSERT_TRUE(lb.ok()) << lb.status().ToString();
    EXPECT_NEAR(*la->Find("loss"), *lb->Find("loss"), 1e-5) << "step " << step;
  }
  const TrainingState state_a = ta->GetState(), state_b = tb->GetState();  // copies: keep them alive
  for (const auto& [name, w] : state_b.weights) {
    const Tensor& got = state_a.weights.at(name);
    for (int64_t i = 0; i < w.num_elements(); ++i)
      ASSERT_NEAR(got.data<float>()[i], w.data<float>()[i], 1e-5) << name << "[" << i << "]";
  }
  // Evaluation runs the custom loss too.
  auto ev = ta->Evaluate(data::Dataset::FromTensorSlices(RegressionBatch(32, 7).tensors).Batch(16));
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_GT(*ev->Find("loss"), 0.0);
}

TEST(CustomLossTest, ErrorsNameTheLoss) {
  auto model = Linear();
  auto sgd = [] { return optim::SGD(); };
  // A loss function that fails.
  auto failing = nn::Loss::Custom("broken", [](graph::Builder&, const std::string&, const std::string&)
                                                -> StatusOr<std::string> { return InvalidArgumentError("no labels"); });
  auto t = *Trainer::Create(model.get(), LinearCompile(sgd(), failing));
  auto s = t->TrainOnBatch(LinearBatch()).status();
  EXPECT_NE(s.ToString().find("custom loss 'broken'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("no labels"), std::string::npos) << s.ToString();
  // A loss function that returns a value it did not emit.
  auto stray = nn::Loss::Custom("stray", [](graph::Builder&, const std::string& pred, const std::string&)
                                              -> StatusOr<std::string> { return pred; });
  auto t2 = *Trainer::Create(model.get(), LinearCompile(sgd(), stray));
  s = t2->TrainOnBatch(LinearBatch()).status();
  EXPECT_NE(s.ToString().find("not an output of a node it emitted"), std::string::npos) << s.ToString();
  // "accuracy" is resolved against the loss, which a custom loss cannot answer.
  CompileOptions c = LinearCompile(sgd(), MyMse());
  c.metrics["y"] = {"accuracy"};
  auto t3 = Trainer::Create(model.get(), c);
  EXPECT_FALSE(t3.ok());
  EXPECT_NE(t3.status().ToString().find("sparse_categorical_accuracy"), std::string::npos);
}

// ---- user metrics ----

TEST(UserMetricTest, UpdatedEveryBatchResetEveryEpochAndLogged) {
  auto model = Mlp();
  auto rows = std::make_shared<RowCount>();
  CompileOptions c = MlpCompile("sgd");
  c.metrics["logits"] = {"accuracy", rows};
  auto t = *Trainer::Create(model.get(), c);
  auto h = t->Fit(Blobs(100, 1, 25), {.epochs = 2, .validation_data = Blobs(60, 2, 20), .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  // Reset at each epoch start: every epoch counts its own 100 rows; validation its 60.
  EXPECT_EQ(h->history.at("rows"), (std::vector<double>{100, 100}));
  EXPECT_EQ(h->history.at("val_rows"), (std::vector<double>{60, 60}));
  EXPECT_EQ(rows->updates(), 2 * (4 + 3));
  ASSERT_TRUE(h->history.count("accuracy"));
}

TEST(UserMetricTest, AnInstanceServesOneOutput) {
  auto in = nn::Input({3}, "x");
  auto a = nn::Dense(2)(in);
  auto b = nn::Dense(2)(in);
  nn::Model model({in}, {{"a", a}, {"b", b}}, "two");
  auto shared = std::make_shared<RowCount>();
  CompileOptions c;
  c.loss = {{"a", nn::Loss::MeanSquaredError()}, {"b", nn::Loss::MeanSquaredError()}};
  c.metrics = {{"a", {shared}}, {"b", {shared}}};
  auto t = Trainer::Create(&model, c);
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("given twice"), std::string::npos) << t.status().ToString();
}

// ---- export: any signature ----

std::vector<float> Values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.num_elements()}; }

TEST(GeneralExportTest, SeveralInputsAndOutputsLoadBackAndRun) {
  auto a = nn::Input({3}, "a");
  auto b = nn::Input({2}, "b");
  auto h = nn::Dense(4, {.activation = "tanh"})(nn::Concatenate()({a, b}));
  nn::Model model({a, b}, {{"scores", nn::Dense(3)(h)}, {"value", nn::Dense(1)(h)}}, "two_inputs");
  ASSERT_TRUE(model.Build(4).ok());
  ExportOptions o;
  o.signature = ExportOptions::Signature::kGeneral;
  o.input_names = {{"a", "features"}};
  o.input_scales = {{"b", 0.5f}};
  o.outputs = {"value", "scores"};
  o.output_names = {{"value", "v"}};
  o.softmax_outputs = {{"scores", "probs"}};
  const std::string dir = ::testing::TempDir() + "/general_export";
  auto path = ExportModel(model, dir, "two", 1, o);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto loaded = onnx::LoadModel(*path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->graph.inputs.size(), 2u);
  EXPECT_EQ(loaded->graph.inputs[0].name, "features");
  EXPECT_EQ(loaded->graph.inputs[1].name, "b");
  std::vector<std::string> outs;
  for (const auto& vi : loaded->graph.outputs) outs.push_back(vi.name);
  EXPECT_EQ(outs, (std::vector<std::string>{"v", "scores", "probs"}));
  std::string sig;
  for (const auto& [k, v] : loaded->metadata)
    if (k == "strata.signature") sig = v;
  EXPECT_NE(sig.find("\"model_input\":\"a\""), std::string::npos) << sig;

  const Tensor xa = Tensor::FromVector<float>({0.1f, -0.4f, 0.7f, 1.5f, 0.2f, -0.3f}, Shape{2, 3});
  const Tensor xb = Tensor::FromVector<float>({2.0f, -1.0f, 0.6f, 4.0f}, Shape{2, 2});
  auto served = *graph::Session::Create(std::make_shared<graph::Model>(std::move(*loaded)));
  std::vector<Tensor> got;
  ASSERT_TRUE(served->Run({{"features", xa}, {"b", xb}}, {"v", "scores", "probs"}, &got).ok());
  // The model itself on the same inputs, with b scaled by hand.
  auto reference = *graph::Session::Create(std::make_shared<graph::Model>(*model.InferenceModel()));
  const Tensor half_b = Tensor::FromVector<float>({1.0f, -0.5f, 0.3f, 2.0f}, Shape{2, 2});
  std::vector<Tensor> want;
  ASSERT_TRUE(reference->Run({{"a", xa}, {"b", half_b}}, {"scores", "value"}, &want).ok());
  const std::vector<float> v = Values(got[0]), scores = Values(got[1]), probs = Values(got[2]);
  const std::vector<float> want_scores = Values(want[0]), want_value = Values(want[1]);
  ASSERT_EQ(v.size(), 2u);
  ASSERT_EQ(scores.size(), 6u);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(v[i], want_value[i], 1e-6);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += std::exp(want_scores[r * 3 + j]);
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(scores[r * 3 + j], want_scores[r * 3 + j], 1e-6);
      EXPECT_NEAR(probs[r * 3 + j], std::exp(want_scores[r * 3 + j]) / sum, 1e-6);
    }
  }
}

TEST(GeneralExportTest, BadSignaturesNameWhatIsWrong) {
  auto a = nn::Input({3}, "a");
  auto b = nn::Input({2}, "b");
  auto h = nn::Concatenate()({a, b});
  nn::Model model({a, b}, {{"scores", nn::Dense(3)(h)}, {"value", nn::Dense(1)(h)}}, "two_inputs");
  ASSERT_TRUE(model.Build(4).ok());
  // The classifier signature (the default) needs one input, and says what to use instead.
  auto s = ServingModel(model).status();
  EXPECT_NE(s.ToString().find("kGeneral"), std::string::npos) << s.ToString();
  auto general = [] {
    ExportOptions o;
    o.signature = ExportOptions::Signature::kGeneral;
    return o;
  };
  ExportOptions o = general();
  o.input_names = {{"c", "x"}};
  s = ServingModel(model, o).status();
  EXPECT_NE(s.ToString().find("input 'c' is not one of the model's: [a,b]"), std::string::npos) << s.ToString();
  o = general();
  o.output_names = {{"value", "scores"}};
  s = ServingModel(model, o).status();
  EXPECT_NE(s.ToString().find("'scores' is given twice"), std::string::npos) << s.ToString();
  o = general();
  o.output_names = {{"value", "dense/kernel"}};  // a weight of the graph
  s = ServingModel(model, o).status();
  EXPECT_NE(s.ToString().find("already a value"), std::string::npos) << s.ToString();
  o = general();
  o.outputs = {"logits"};
  EXPECT_FALSE(ServingModel(model, o).ok());
  // Every output, in the model's order, by default.
  auto all = ServingModel(model, general());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->graph.outputs.size(), 2u);
  EXPECT_EQ(all->graph.outputs[0].name, "scores");
  EXPECT_EQ(all->graph.inputs[0].name, "a");
}

// ---- callbacks: one factory type ----

TEST(CallbackFactoryTest, EveryFactoryReturnsStatusOrAndChecksItsOptions) {
  using Made = StatusOr<std::shared_ptr<Callback>>;
  static_assert(std::is_same_v<decltype(ProgressBar()), Made>);
  static_assert(std::is_same_v<decltype(EarlyStopping()), Made>);
  static_assert(std::is_same_v<decltype(ReduceLROnPlateau()), Made>);
  static_assert(std::is_same_v<decltype(TerminateOnNaN()), Made>);
  static_assert(std::is_same_v<decltype(CSVLogger("x")), Made>);
  static_assert(std::is_same_v<decltype(LearningRateScheduler(nullptr)), Made>);
  static_assert(std::is_same_v<decltype(BackupAndRestore("x")), Made>);
  static_assert(std::is_same_v<decltype(TensorBoard()), Made>);
  static_assert(std::is_same_v<decltype(ModelCheckpoint({})), Made>);
  EXPECT_TRUE(ProgressBar(1).ok());
  EXPECT_TRUE(TerminateOnNaN().ok());
  EXPECT_NE(ProgressBar(7).status().ToString().find("verbose"), std::string::npos);
  EXPECT_NE(EarlyStopping({.mode = "sideways"}).status().ToString().find("EarlyStopping"), std::string::npos);
  EXPECT_FALSE(EarlyStopping({.patience = -1}).ok());
  EXPECT_FALSE(CSVLogger("").ok());
  EXPECT_FALSE(LearningRateScheduler(nullptr).ok());
  EXPECT_FALSE(BackupAndRestore("").ok());
  EXPECT_FALSE(BackupAndRestore("dir", -1).ok());
}

// ---- public utilities: Rng and Glob (strata/util.h), the TFRecord writer (strata/records.h) ----

TEST(PublicUtilTest, GlobFindsRecordShardsSorted) {
  const std::string dir = ::testing::TempDir() + "/glob_shards";
  ASSERT_TRUE(Glob(dir + "/*").ok());
  std::filesystem::create_directories(dir);
  for (const char* name : {"train-00001.tfrecord", "train-00000.tfrecord", "val-00000.tfrecord"}) {
    auto w = io::RecordFileWriter::Open(dir + "/" + name);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write("record").ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto shards = Glob(dir + "/train-*.tfrecord");
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  EXPECT_EQ(*shards, (std::vector<std::string>{dir + "/train-00000.tfrecord", dir + "/train-00001.tfrecord"}));
  EXPECT_TRUE(Glob(dir + "/none-*")->empty());
  // The same seed gives the same stream; another seed another.
  Rng a(5), b(5), c(6);
  const uint32_t first = a.NextU32();
  EXPECT_EQ(first, b.NextU32());
  EXPECT_NE(first, c.NextU32());
}

// ---- what the public header no longer declares ----

// The trainer's state lives behind its pointer to implementation: the public class holds nothing else.
static_assert(sizeof(Trainer) == sizeof(std::unique_ptr<Trainer::Impl>));

TEST(PublicHeaderTest, TrainHeaderDeclaresNoInternals) {
  std::ifstream f(std::string(STRATA_TEST_SOURCE_DIR) + "/include/strata/train.h");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  for (const char* internal : {"struct Monitor", "MakeMonitor", "PeakRssBytes", "FormatCheckpointPath", "state_;",
                               "optimizer_;", "EnsureTrainSession"})
    EXPECT_EQ(text.find(internal), std::string::npos) << "include/strata/train.h declares " << internal;
}

}  // namespace
}  // namespace strata::train
