// train: the fit loop on small synthetic data (loss goes down, one compiled plan, determinism, bitwise resume
// mid-epoch), callbacks against the Keras rules, several outputs with auxiliary losses.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "core/random.h"
#include "strata/train.h"
#include "train/callback_util.h"
#include "train_test_util.h"

extern char** environ;

namespace strata::train {
namespace {

using testutil::Mlp;
using testutil::Compile;
using testutil::SameBits;

// Three Gaussian blobs in 8-D: "x" float32 [n, 8], "label" int64 [n].
io::NamedTensors Blobs(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = (j % 3 == c ? 2.0f : 0.0f) + 0.7f * rng.Normal();
  }
  return {{"x", x}, {"label", y}};
}

data::Dataset TrainData(int n = 600, int batch = 32) {
  return data::Dataset::FromTensorSlices(Blobs(n, 1)).Shuffle(n, {.seed = 5}).Batch(batch);
}

// 8x8 images of one bar: horizontal (label 1) or vertical (label 0) at a random position, plus noise.
std::pair<Tensor, Tensor> Bars(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Zeros(DType::kFloat32, Shape{n, 8, 8, 1});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng.Below(2));
    const int pos = static_cast<int>(rng.Below(8));
    y.data<int64_t>()[i] = label;
    for (int k = 0; k < 8; ++k) {
      const int h = label ? pos : k, w = label ? k : pos;
      x.data<float>()[(i * 8 + h) * 8 + w] = 1.0f;
    }
    for (int k = 0; k < 64; ++k) x.data<float>()[i * 64 + k] += 0.1f * rng.Normal();
  }
  return {x, y};
}

TEST(TrainerTest, FitReducesLossAndReusesOnePlan) {
  auto model = Mlp();
  auto t = Trainer::Create(model.get(), Compile());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto h = (*t)->Fit(TrainData(600, 32), {.epochs = 4, .validation_data = TrainData(200, 50), .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const auto& loss = h->history.at("loss");
  ASSERT_EQ(loss.size(), 4u);
  EXPECT_LT(loss.back(), 0.5 * loss.front());
  EXPECT_GT(h->history.at("accuracy").back(), 0.9);
  EXPECT_GT(h->history.at("val_accuracy").back(), 0.9);
  // 600 = 18 * 32 + 24: one plan for full batches, one for the last partial batch; every other step is a hit.
  const graph::RunStats s = (*t)->train_stats();
  EXPECT_EQ(s.plan_cache_misses, 2);
  EXPECT_EQ(s.runs, 4 * 19);
  EXPECT_EQ((*t)->iterations(), 4 * 19);
  auto logs = (*t)->Evaluate(TrainData(200, 50));
  ASSERT_TRUE(logs.ok());
  EXPECT_NEAR(*logs->Find("accuracy"), h->history.at("val_accuracy").back(), 1e-12);
  auto pred = (*t)->Predict(data::Dataset::FromTensorSlices(Blobs(70, 3)).Batch(32));
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  EXPECT_EQ(pred->at("logits").shape(), (Shape{70, 3}));
}

TEST(TrainerTest, OptimizersAllTrain) {
  for (const char* opt : {"sgd", "rmsprop", "adamw"}) {
    auto model = Mlp();
    CompileOptions c = Compile(opt, std::string(opt) == "sgd" ? 0.1 : 0.01);
    c.optimizer_config.momentum = std::string(opt) == "sgd" ? 0.9 : 0.0;
    c.optimizer_config.clip.global_clipnorm = 5.0;
    auto t = *Trainer::Create(model.get(), c);
    auto h = t->Fit(TrainData(), {.epochs = 3, .verbose = 0});
    ASSERT_TRUE(h.ok()) << opt << ": " << h.status().ToString();
    EXPECT_LT(h->history.at("loss").back(), 0.6 * h->history.at("loss").front()) << opt;
  }
}

TEST(TrainerTest, SameSeedGivesBitwiseIdenticalWeights) {
  std::map<std::string, Tensor> first;
  for (int run = 0; run < 2; ++run) {
    auto model = Mlp(0.3);
    auto t = *Trainer::Create(model.get(), Compile(), {.seed = 11, .deterministic = true});
    ASSERT_TRUE(t->Fit(TrainData(), {.epochs = 2, .verbose = 0}).ok());
    if (run == 0) first = model->weights();
    else EXPECT_TRUE(SameBits(first, model->weights()));
  }
  auto other = Mlp(0.3);
  auto t = *Trainer::Create(other.get(), Compile(), {.seed = 12, .deterministic = true});
  ASSERT_TRUE(t->Fit(TrainData(), {.epochs = 2, .verbose = 0}).ok());
  EXPECT_FALSE(SameBits(first, other->weights()));
}

// Stops training after `stop_at` batches of epoch `epoch` and keeps the state then.
class Interrupt final : public Callback {
 public:
  Interrupt(int epoch, int64_t stop_at) : epoch_(epoch), stop_at_(stop_at) {}
  Status OnEpochBegin(Trainer&, int epoch) override {
    current_ = epoch;
    return Status::OK();
  }
  Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs&) override {
    if (current_ == epoch_ && batch + 1 == stop_at_) {
      state = t.GetState();
      t.StopTraining();
    }
    return Status::OK();
  }
  std::optional<TrainingState> state;

 private:
  int epoch_ = 0, current_ = 0;
  int64_t stop_at_;
};

TEST(TrainerTest, ResumeMidEpochIsBitwiseIdentical) {
  auto full = Mlp(0.3);
  auto t_full = *Trainer::Create(full.get(), Compile(), {.seed = 3, .deterministic = true});
  ASSERT_TRUE(t_full->Fit(TrainData(), {.epochs = 3, .verbose = 0}).ok());

  auto killed = Mlp(0.3);
  auto t_killed = *Trainer::Create(killed.get(), Compile(), {.seed = 3, .deterministic = true});
  auto interrupt = std::make_shared<Interrupt>(1, 7);
  ASSERT_TRUE(t_killed->Fit(TrainData(), {.epochs = 3, .verbose = 0, .callbacks = {interrupt}}).ok());
  ASSERT_TRUE(interrupt->state.has_value());
  EXPECT_EQ(interrupt->state->epoch, 1);
  EXPECT_EQ(interrupt->state->batch, 7);
  EXPECT_EQ(interrupt->state->iterations, 19 + 7);

  // A fresh process would rebuild the model (any seed) and restore the saved state.
  auto resumed = Mlp(0.3);
  auto t_resumed = *Trainer::Create(resumed.get(), Compile(), {.seed = 99, .deterministic = true});
  TrainingState s = *interrupt->state;
  ASSERT_TRUE(t_resumed->SetState(s).ok());
  ASSERT_TRUE(t_resumed->Fit(TrainData(), {.epochs = 3, .initial_epoch = s.epoch, .verbose = 0,
                                           .initial_batch = s.batch}).ok());
  EXPECT_EQ(t_resumed->iterations(), t_full->iterations());
  EXPECT_TRUE(SameBits(full->weights(), resumed->weights()));
}

// Vertical vs horizontal bars in 8x8 images: a conv/pool/dense model (NHWC in, NCHW Conv/MaxPool inside) learns it.
TEST(TrainerTest, SmallCnnLearnsBars) {
  const int n = 256;
  auto [x, y] = Bars(n, 7);
  auto in = nn::Input({8, 8, 1}, "x");
  auto h = nn::Conv2D(4, 3, {.padding = "same", .activation = "relu"})(in);
  h = nn::MaxPooling2D(2)(h);
  h = nn::Flatten()(h);
  auto logits = nn::Dense(2)(h);
  nn::Model model({in}, {{"logits", logits}}, "bars");
  auto t = *Trainer::Create(&model, Compile("adam", 0.02), {.seed = 1});
  auto ds = data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Shuffle(n, {.seed = 2}).Batch(32);
  auto hist = t->Fit(ds, {.epochs = 4, .verbose = 0});
  ASSERT_TRUE(hist.ok()) << hist.status().ToString();
  EXPECT_LT(hist->history.at("loss").back(), 0.5 * hist->history.at("loss").front());
  EXPECT_GT(hist->history.at("accuracy").back(), 0.95);
  EXPECT_EQ(t->train_stats().plan_cache_misses, 1);
}

// The same bars through batch norm (training mode: batch statistics, moving statistics updated), a depthwise
// convolution, global pooling and layer norm: the layers whose gradients come from the gradients work.
TEST(TrainerTest, NormalizationAndDepthwiseLayersTrain) {
  const int n = 256;
  auto [x, y] = Bars(n, 11);
  auto in = nn::Input({8, 8, 1}, "x");
  auto h = nn::Conv2D(4, {1, 3}, {.padding = "same"})(in);
  h = nn::BatchNormalization()(h);
  h = nn::Activation("relu")(h);
  h = nn::DepthwiseConv2D({3, 1}, 2, {.padding = "same", .activation = "relu"})(h);
  h = nn::GlobalAveragePooling2D()(h);
  h = nn::LayerNormalization()(h);
  auto logits = nn::Dense(2)(h);
  nn::Model model({in}, {{"logits", logits}}, "norms");
  auto t = Trainer::Create(&model, Compile("adam", 0.02), {.seed = 3});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto ds = data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Shuffle(n, {.seed = 2}).Batch(32);
  auto hist = (*t)->Fit(ds, {.epochs = 6, .verbose = 0});
  ASSERT_TRUE(hist.ok()) << hist.status().ToString();
  EXPECT_LT(hist->history.at("loss").back(), 0.5 * hist->history.at("loss").front());
  EXPECT_GT(hist->history.at("accuracy").back(), 0.9);
  // The moving statistics moved away from their initial values (mean 0, variance 1).
  int moving = 0;
  for (const auto& [name, w] : model.weights()) {
    if (name.find("moving_mean") != std::string::npos || name.find("moving_variance") != std::string::npos) {
      ++moving;
      const float init = name.find("moving_mean") != std::string::npos ? 0.0f : 1.0f;
      double change = 0;
      for (float v : w.values<float>()) change += std::fabs(v - init);
      EXPECT_GT(change, 1e-3) << name;
    }
  }
  EXPECT_EQ(moving, 2);
}

// Token ids through an Embedding: the class is whether token 1 occurs in the sequence.
TEST(TrainerTest, EmbeddingTrains) {
  Rng rng(5);
  const int n = 256, len = 6;
  Tensor x = Tensor::Empty(DType::kInt64, Shape{n, len});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng.Below(2));
    y.data<int64_t>()[i] = label;
    for (int k = 0; k < len; ++k) x.data<int64_t>()[i * len + k] = 2 + static_cast<int64_t>(rng.Below(8));
    if (label) x.data<int64_t>()[i * len + rng.Below(len)] = 1;
  }
  auto in = nn::Input({len}, "x", DType::kInt64);
  auto h = nn::Embedding(10, 4)(in);
  h = nn::Flatten()(h);
  auto logits = nn::Dense(2)(h);
  nn::Model model({in}, {{"logits", logits}}, "tokens");
  auto t = Trainer::Create(&model, Compile("adam", 0.05), {.seed = 4});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::map<std::string, Tensor> before;
  for (const auto& [name, w] : model.weights()) before[name] = w.Clone();
  auto ds = data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Shuffle(n, {.seed = 2}).Batch(32);
  auto hist = (*t)->Fit(ds, {.epochs = 8, .verbose = 0});
  ASSERT_TRUE(hist.ok()) << hist.status().ToString();
  EXPECT_LT(hist->history.at("loss").back(), 0.5 * hist->history.at("loss").front());
  EXPECT_GT(hist->history.at("accuracy").back(), 0.9);
  // The embedding table itself learned (its gradient flows), the row of token 1 most of all.
  int tables = 0;
  for (const auto& [name, w] : model.weights()) {
    if (name.find("embedding") == std::string::npos) continue;
    ++tables;
    ASSERT_EQ(w.num_elements(), 40);
    double row1 = 0;
    for (int j = 0; j < 4; ++j) row1 += std::fabs(w.data<float>()[4 + j] - before.at(name).data<float>()[4 + j]);
    EXPECT_GT(row1, 1e-2) << name;
  }
  EXPECT_EQ(tables, 1);
}

TEST(TrainerTest, StateMismatchListsEveryDifference) {
  auto model = Mlp();
  auto t = *Trainer::Create(model.get(), Compile());
  TrainingState s = t->GetState();
  s.weights.erase("dense/bias");
  s.weights["dense/kernel"] = Tensor::Zeros(DType::kFloat32, Shape{8, 15});
  s.weights["extra"] = Tensor::Zeros(DType::kFloat32, Shape{1});
  Status st = t->SetState(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const char* want : {"missing weight 'dense/bias'", "'dense/kernel' is float32[8,16] in the model, float32[8,15]",
                           "unexpected weight 'extra'"})
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
}

TEST(TrainerTest, TwoOutputsWithAuxiliaryLoss) {
  auto in = nn::Input({8}, "x");
  auto features = nn::Dense(16, {.activation = "relu"})(in);
  auto logits = nn::Dense(3)(features);
  auto reg = nn::Dense(1)(features);
  nn::Model model({in}, {{"logits", logits}, {"features", features}, {"value", reg}});
  CompileOptions c = Compile();
  c.loss["value"] = nn::Loss::MeanSquaredError();
  c.loss_weights["value"] = 0.5;
  c.labels["value"] = "target";
  auto t = Trainer::Create(&model, c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  io::NamedTensors data = Blobs(256, 4);
  Tensor target = Tensor::Empty(DType::kFloat32, Shape{256, 1});
  for (int i = 0; i < 256; ++i) target.data<float>()[i] = float(data[1].second.data<int64_t>()[i]);
  data.emplace_back("target", target);
  auto h = (*t)->Fit(data::Dataset::FromTensorSlices(data).Batch(32), {.epochs = 3, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  for (const char* key : {"loss", "logits_loss", "value_loss", "logits_accuracy"})
    EXPECT_TRUE(h->history.count(key)) << key;
  const double total = h->history.at("loss").back();
  EXPECT_NEAR(total, h->history.at("logits_loss").back() + 0.5 * h->history.at("value_loss").back(), 1e-4);
  EXPECT_LT(h->history.at("value_loss").back(), h->history.at("value_loss").front());
}

TEST(TrainerTest, InputDtypeMismatchExplains) {
  auto model = Mlp();
  auto t = *Trainer::Create(model.get(), Compile());
  io::NamedTensors data = {{"x", Tensor::Zeros(DType::kUInt8, Shape{4, 8})},
                           {"label", Tensor::Zeros(DType::kInt64, Shape{4})}};
  auto h = t->Fit(data::Dataset::FromTensorSlices(data).Batch(2), {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("model input 'x' expects float32"), std::string::npos) << h.status().message();
}

// A label outside [0, classes) names the example (source file and record index from the pipeline's metadata), the
// label and the valid range; in training and in evaluation.
TEST(TrainerTest, LabelOutOfRangeNamesTheExampleFileAndRecord) {
  io::NamedTensors data = Blobs(40, 6);
  data[1].second.data<int64_t>()[13] = 7;
  std::vector<data::Metadata> meta;
  for (int i = 0; i < 40; ++i)
    meta.push_back({{data::kMetaSource, i < 20 ? "a.tfrecord" : "b.tfrecord"}, {data::kMetaRecord, StrCat(i % 20)}});
  auto ds = data::Dataset::FromTensorSlices(data, meta).Shuffle(40, {.seed = 2}).Batch(8);
  auto model = Mlp();
  auto t = *Trainer::Create(model.get(), Compile());
  auto h = t->Fit(ds, {.epochs = 1, .verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("label 7 of example record 13 of 'a.tfrecord' is outside the valid range [0, 3) "
                                      "of output 'logits'"),
            std::string::npos)
      << h.status().message();
  auto e = t->Evaluate(ds);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("label 7 of example record 13 of 'a.tfrecord' is outside the valid range [0, 3)"),
            std::string::npos)
      << e.status().message();
  // Negative labels too, and int32 labels; without metadata the batch row is named.
  Tensor y32 = Tensor::Zeros(DType::kInt32, Shape{4});
  y32.data<int32_t>()[2] = -1;
  auto bare = data::Dataset::FromTensorSlices({{"x", Tensor::Zeros(DType::kFloat32, Shape{4, 8})}, {"label", y32}});
  auto h2 = t->Fit(bare.Batch(4), {.epochs = 1, .verbose = 0});
  ASSERT_FALSE(h2.ok());
  EXPECT_NE(h2.status().message().find("label -1 of row 2 of the batch is outside the valid range [0, 3)"),
            std::string::npos)
      << h2.status().message();
}

// ---- SIGKILL at a random moment, then resume: bitwise identical to an uninterrupted run ----

data::Dataset KillData() { return TrainData(600, 8); }  // 75 steps per epoch

// The child half: trains with BackupAndRestore saving every step (and restoring what an earlier child left).
TEST(KillAndResumeTest, ChildTrains) {
  const char* dir = std::getenv("STRATA_KILL_CHILD_DIR");
  if (dir == nullptr) GTEST_SKIP() << "the child of KillAndResumeTest.SigkillAnywhereThenResume";
  auto model = Mlp(0.3);
  auto t = *Trainer::Create(model.get(), Compile(), {.seed = 21, .deterministic = true});
  ASSERT_TRUE(t->Fit(KillData(), {.epochs = 3, .verbose = 0, .callbacks = {*BackupAndRestore(dir, 1, false)}}).ok());
}

TEST(KillAndResumeTest, SigkillAnywhereThenResume) {
  if (std::getenv("STRATA_KILL_CHILD_DIR") != nullptr) GTEST_SKIP();
  auto reference = Mlp(0.3);
  auto t_ref = *Trainer::Create(reference.get(), Compile(), {.seed = 21, .deterministic = true});
  ASSERT_TRUE(t_ref->Fit(KillData(), {.epochs = 3, .verbose = 0}).ok());

  const std::string dir = ::testing::TempDir() + "/kill_resume_" + std::to_string(getpid());
  ASSERT_TRUE((*CheckpointManager::Open(dir))->DeleteAll().ok());
  std::mt19937 gen(std::random_device{}());
  std::vector<int64_t> killed_at;
  for (int round = 0; round < 3; ++round) {
    const std::string env_var = "STRATA_KILL_CHILD_DIR=" + dir;
    std::vector<char*> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    env.push_back(const_cast<char*>(env_var.c_str()));
    env.push_back(nullptr);
    std::string self = "/proc/self/exe", filter = "--gtest_filter=KillAndResumeTest.ChildTrains";
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data()), 0);
    // Wait for the first checkpoint of this child (or its end), then kill it at a random moment.
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    bool exited = false;
    const std::string state_file = dir + "/checkpoint";
    const std::string before = FileExists(state_file) ? *ReadFile(state_file) : std::string();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      if (FileExists(state_file)) {
        auto now = ReadFile(state_file);  // may vanish between the two calls while the child renames it
        if (now.ok() && *now != before) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (exited) break;  // it finished before the kill: nothing left to interrupt
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 150000)(gen)));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    auto manager = CheckpointManager::Open(dir, {.max_to_keep = 1});
    ASSERT_TRUE(manager.ok()) << manager.status().ToString();
    auto s = (*manager)->ReadLatest();
    ASSERT_TRUE(s.ok()) << s.status().ToString();  // whole, CRCs verified, whenever the kill landed
    if (*s) {
      killed_at.push_back((*s)->state.iterations);
      EXPECT_NE((*s)->model_config.find("\"class_name\":\"Dense\""), std::string::npos);  // the backup's model
    }
  }
  SCOPED_TRACE(StrCat("children killed after steps ", killed_at, " of 225"));
  EXPECT_FALSE(killed_at.empty());
  // Resume in this process from whatever the last child left, with a model built from another seed.
  auto resumed = Mlp(0.3);
  auto t = *Trainer::Create(resumed.get(), Compile(), {.seed = 5, .deterministic = true});
  ASSERT_TRUE(t->Fit(KillData(), {.epochs = 3, .verbose = 0, .callbacks = {*BackupAndRestore(dir, 1, true)}}).ok());
  EXPECT_EQ(t->iterations(), t_ref->iterations());
  EXPECT_TRUE(SameBits(reference->weights(), resumed->weights()));
  auto left = (*CheckpointManager::Open(dir))->ReadLatest();
  ASSERT_TRUE(left.ok());
  EXPECT_FALSE(left->has_value());  // delete_checkpoint removed the backups after the normal end
}

// ---- callbacks against the Keras rules ----

class CallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = Mlp();
    trainer_ = *Trainer::Create(model_.get(), Compile());
  }
  Status EpochEnd(Callback& cb, int epoch, std::vector<std::pair<std::string, double>> values) {
    Logs logs;
    for (auto& [k, v] : values) logs.Set(k, v);
    return cb.OnEpochEnd(*trainer_, epoch, logs);
  }
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<Trainer> trainer_;
};

TEST_F(CallbackTest, EarlyStoppingPatienceMinDeltaAndBaseline) {
  auto es = *EarlyStopping({.monitor = "val_loss", .min_delta = 0.1, .patience = 2});
  ASSERT_TRUE(es->OnTrainBegin(*trainer_).ok());
  ASSERT_TRUE(EpochEnd(*es, 0, {{"val_loss", 1.0}}).ok());
  ASSERT_TRUE(EpochEnd(*es, 1, {{"val_loss", 0.95}}).ok());  // within min_delta: no improvement, wait 1
  EXPECT_FALSE(trainer_->stop_training());
  ASSERT_TRUE(EpochEnd(*es, 2, {{"val_loss", 0.85}}).ok());  // improved by > 0.1: wait 0
  ASSERT_TRUE(EpochEnd(*es, 3, {{"val_loss", 0.9}}).ok());
  EXPECT_FALSE(trainer_->stop_training());
  ASSERT_TRUE(EpochEnd(*es, 4, {{"val_loss", 0.9}}).ok());
  EXPECT_TRUE(trainer_->stop_training());

  // Keras: the first value always counts as an improvement, but `wait` only resets when the baseline is beaten too,
  // so a flat value under the baseline stops after `patience` epochs; without a baseline it would not yet.
  for (bool with_baseline : {true, false}) {
    EarlyStoppingOptions o{.monitor = "val_accuracy", .patience = 2};
    if (with_baseline) o.baseline = 0.9;
    auto cb = *EarlyStopping(o);
    auto t2 = *Trainer::Create(model_.get(), Compile());
    ASSERT_TRUE(cb->OnTrainBegin(*t2).ok());
    for (int e = 0; e < 2; ++e) {
      Logs l;
      l.Set("val_accuracy", 0.5);
      ASSERT_TRUE(cb->OnEpochEnd(*t2, e, l).ok());
    }
    EXPECT_EQ(t2->stop_training(), with_baseline);
  }
}

TEST_F(CallbackTest, EarlyStoppingRestoresBestWeights) {
  auto es = *EarlyStopping({.monitor = "loss", .patience = 5, .restore_best_weights = true});
  ASSERT_TRUE(es->OnTrainBegin(*trainer_).ok());
  const auto best = trainer_->GetState().weights;
  ASSERT_TRUE(EpochEnd(*es, 0, {{"loss", 0.5}}).ok());
  ASSERT_TRUE(trainer_->Fit(TrainData(), {.epochs = 1, .verbose = 0}).ok());  // changes the weights
  ASSERT_TRUE(EpochEnd(*es, 1, {{"loss", 0.7}}).ok());
  ASSERT_TRUE(es->OnTrainEnd(*trainer_, {}).ok());
  EXPECT_TRUE(SameBits(best, trainer_->GetState().weights));
}

TEST_F(CallbackTest, ReduceLROnPlateauFactorCooldownMinLr) {
  auto cb = *ReduceLROnPlateau({.monitor = "val_loss", .factor = 0.5, .patience = 1, .cooldown = 2, .min_lr = 0.003});
  ASSERT_TRUE(cb->OnTrainBegin(*trainer_).ok());
  Logs logs;
  logs.Set("val_loss", 1.0);
  ASSERT_TRUE(cb->OnEpochEnd(*trainer_, 0, logs).ok());
  EXPECT_DOUBLE_EQ(*logs.Find("learning_rate"), 0.01);
  logs.Set("val_loss", 1.0);
  ASSERT_TRUE(cb->OnEpochEnd(*trainer_, 1, logs).ok());  // wait 1 >= patience: 0.01 -> 0.005
  EXPECT_DOUBLE_EQ(trainer_->learning_rate(), 0.005);
  // Keras decrements the cooldown before testing it: cooldown 2 rests one full epoch.
  ASSERT_TRUE(cb->OnEpochEnd(*trainer_, 2, logs).ok());
  EXPECT_DOUBLE_EQ(trainer_->learning_rate(), 0.005);
  ASSERT_TRUE(cb->OnEpochEnd(*trainer_, 3, logs).ok());  // 0.0025 clamps to min_lr
  EXPECT_DOUBLE_EQ(trainer_->learning_rate(), 0.003);
  EXPECT_FALSE(ReduceLROnPlateau({.factor = 1.0}).ok());
}

TEST_F(CallbackTest, CsvLoggerKerasFormat) {
  const std::string path = ::testing::TempDir() + "/log.csv";
  auto cb = *CSVLogger(path);
  ASSERT_TRUE(cb->OnTrainBegin(*trainer_).ok());
  ASSERT_TRUE(EpochEnd(*cb, 0, {{"loss", 0.5}, {"accuracy", 0.75}}).ok());
  ASSERT_TRUE(EpochEnd(*cb, 1, {{"loss", 0.25}, {"accuracy", 0.875}, {"val_loss", 0.1}}).ok());
  ASSERT_TRUE(cb->OnTrainEnd(*trainer_, {}).ok());
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(),
            "epoch,accuracy,loss,val_accuracy,val_loss\r\n0,0.75,0.5,NA,NA\r\n1,0.875,0.25,NA,0.1\r\n");
}

TEST_F(CallbackTest, LearningRateSchedulerSetsAndLogs) {
  auto cb = *LearningRateScheduler([](int epoch, double lr) { return epoch < 1 ? lr : lr * 0.1; });
  ASSERT_TRUE(cb->OnEpochBegin(*trainer_, 0).ok());
  EXPECT_DOUBLE_EQ(trainer_->learning_rate(), 0.01);
  ASSERT_TRUE(cb->OnEpochBegin(*trainer_, 1).ok());
  EXPECT_NEAR(trainer_->learning_rate(), 0.001, 1e-15);
  Logs logs;
  ASSERT_TRUE(cb->OnEpochEnd(*trainer_, 1, logs).ok());
  EXPECT_NEAR(*logs.Find("learning_rate"), 0.001, 1e-15);
}

TEST(MonitorTest, AutoModes) {
  EXPECT_TRUE(MakeMonitor("val_accuracy", "auto", 0, "early_stopping")->higher_is_better);
  EXPECT_FALSE(MakeMonitor("val_acc_drop", "auto", 0, "early_stopping")->higher_is_better);
  EXPECT_TRUE(MakeMonitor("val_acc_drop", "auto", 0, "contains_acc")->higher_is_better);
  EXPECT_FALSE(MakeMonitor("val_loss", "auto", 0, "contains_acc")->higher_is_better);
  EXPECT_FALSE(MakeMonitor("loss", "sideways", 0, "contains_acc").ok());
}

}  // namespace
}  // namespace strata::train
