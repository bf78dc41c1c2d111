// Transfer learning: trainable flags changed at any time (frozen weights bitwise unchanged, the plan recompiled and
// logged), frozen BatchNormalization in inference mode, learning-rate multipliers, and weight import (safetensors,
// checkpoints, ONNX initializers) with every mismatch named and nothing changed on error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/file_util.h"
#include "core/random.h"
#include "io/safetensors.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::train {
namespace {

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

// n random 8x8x1 images and labels in [0, 3).
data::Element Batch(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8, 8, 1});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    y.data<int64_t>()[i] = static_cast<int64_t>(rng.Below(3));
    for (int j = 0; j < 64; ++j) x.data<float>()[i * 64 + j] = rng.Normal() + 0.5f * y.data<int64_t>()[i];
  }
  data::Element e;
  e.Set("x", x);
  e.Set("label", y);
  return e;
}

// conv -> bn -> relu -> gap -> dense(3): layers conv2d, batch_normalization, activation, global_average_pooling2d,
// dense.
std::unique_ptr<nn::Model> SmallCnn(const std::string& name = "small") {
  auto in = nn::Input({8, 8, 1}, "x");
  auto h = nn::Conv2D(4, 3, {.padding = "same"})(in);
  h = nn::BatchNormalization()(h);
  h = nn::Activation("relu")(h);
  h = nn::GlobalAveragePooling2D()(h);
  auto logits = nn::Dense(3)(h);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in},
                                     std::vector<nn::ModelOutput>{{"logits", logits}}, name);
}

CompileOptions Compile(std::string optimizer = "adam", double lr = 0.01) {
  CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.optimizer = std::move(optimizer);
  c.optimizer_config.learning_rate = optim::ConstantLR(lr);
  return c;
}

nn::Layer* LayerNamed(nn::Model& m, const std::string& name) {
  for (nn::Layer* l : m.layers())
    if (l->name() == name) return l;
  return nullptr;
}

TEST(TransferTest, FreezeAfterTrainingRecompilesLogsAndKeepsFrozenWeightsBitwise) {
  auto model = SmallCnn();
  auto t = Trainer::Create(model.get(), Compile(), {.seed = 1});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const data::Element b = Batch(16, 2);
  ASSERT_TRUE((*t)->TrainOnBatch(b).ok());
  EXPECT_EQ((*t)->trainable_recompiles(), 0);
  // Freeze everything but the head, after the model was built and trained.
  for (nn::Layer* l : model->layers())
    if (l->name() != "dense") l->set_trainable(false);
  EXPECT_EQ(model->CountParams(true), 4 * 3 + 3);
  const auto before = model->weights();
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*t)->TrainOnBatch(b).ok());
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("recompiling the training plan"), std::string::npos) << log;
  EXPECT_EQ((*t)->trainable_recompiles(), 1);
  for (const auto& [name, w] : model->weights()) {
    const bool head = name.rfind("dense/", 0) == 0;
    EXPECT_EQ(SameBits(w, before.at(name)), !head) << name;  // frozen bitwise equal, the head trained
  }
  // Only the head has optimizer slots now.
  for (const auto& [key, slot] : (*t)->GetState().slots) EXPECT_EQ(key.rfind("optimizer/dense/", 0), 0u) << key;
  // Unfreezing recompiles again and trains the conv layer.
  LayerNamed(*model, "conv2d")->set_trainable(true);
  ASSERT_TRUE((*t)->TrainOnBatch(b).ok());
  EXPECT_EQ((*t)->trainable_recompiles(), 2);
  EXPECT_FALSE(SameBits(model->weights().at("conv2d/kernel"), before.at("conv2d/kernel")));
}

TEST(TransferTest, FrozenBatchNormRunsInInferenceModeAndKeepsMovingStatistics) {
  for (bool frozen : {false, true}) {
    auto model = SmallCnn();
    ASSERT_TRUE(model->Build(4).ok());
    // Moving statistics away from (0, 1), so that inference mode is distinguishable from batch statistics.
    std::map<std::string, Tensor> stats = {
        {"batch_normalization/moving_mean", Tensor::FromVector(std::vector<float>{0.1f, -0.2f, 0.3f, 0.05f})},
        {"batch_normalization/moving_variance", Tensor::FromVector(std::vector<float>{0.5f, 2.0f, 1.5f, 0.8f})}};
    ASSERT_TRUE(model->SetWeights(stats).ok());
    LayerNamed(*model, "batch_normalization")->set_trainable(!frozen);
    auto t = Trainer::Create(model.get(), Compile("sgd", 0.1), {.seed = 1});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const data::Element b = Batch(32, 7);
    // The evaluation loss (inference mode by definition) before the step, then the step's own loss (computed on the
    // weights before its update).
    auto eval = (*t)->Evaluate(data::Dataset::FromTensorSlices(b.tensors).Batch(32));
    ASSERT_TRUE(eval.ok()) << eval.status().ToString();
    auto step = (*t)->TrainOnBatch(b);
    ASSERT_TRUE(step.ok()) << step.status().ToString();
    const double eval_loss = *eval->Find("loss"), train_loss = *step->Find("loss");
    if (frozen) {
      EXPECT_NEAR(train_loss, eval_loss, 1e-5) << "frozen BN must normalise with the moving statistics";
      for (const auto& [name, v] : stats) EXPECT_TRUE(SameBits(model->weights().at(name), v)) << name;
      EXPECT_TRUE(SameBits(model->weights().at("batch_normalization/gamma"),
                           Tensor::FromVector(std::vector<float>{1, 1, 1, 1})));
    } else {
      EXPECT_GT(std::fabs(train_loss - eval_loss), 1e-3) << "trainable BN normalises with the batch statistics";
      EXPECT_FALSE(SameBits(model->weights().at("batch_normalization/moving_mean"), stats.begin()->second));
    }
  }
}

TEST(TransferTest, LearningRateMultipliersScaleTheUpdatePerPrefix) {
  // One SGD step from identical weights with multipliers 1, 2.5 and 0 on the conv layer: the change of its kernel
  // scales with the multiplier (w - lr*m*g), the other layers' changes are the same.
  std::map<double, std::map<std::string, Tensor>> after;
  std::map<std::string, Tensor> initial;
  for (double m : {1.0, 2.5, 0.0}) {
    auto model = SmallCnn();
    CompileOptions c = Compile("sgd", 0.05);
    c.optimizer_config.lr_multipliers = {{"conv2d/", m}};
    auto t = Trainer::Create(model.get(), std::move(c), {.seed = 9});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    initial = model->weights();
    ASSERT_TRUE((*t)->TrainOnBatch(Batch(16, 3)).ok());
    after[m] = model->weights();
  }
  const Tensor& w0 = initial.at("conv2d/kernel");
  double max_err = 0, max_delta = 0;
  for (int64_t i = 0; i < w0.num_elements(); ++i) {
    const double d1 = after[1.0].at("conv2d/kernel").data<float>()[i] - w0.data<float>()[i];
    const double d25 = after[2.5].at("conv2d/kernel").data<float>()[i] - w0.data<float>()[i];
    max_err = std::max(max_err, std::fabs(d25 - 2.5 * d1));
    max_delta = std::max(max_delta, std::fabs(d1));
  }
  EXPECT_GT(max_delta, 1e-4);
  EXPECT_LT(max_err, 1e-3 * max_delta + 1e-7);
  EXPECT_TRUE(SameBits(after[0.0].at("conv2d/kernel"), w0));
  EXPECT_TRUE(SameBits(after[0.0].at("dense/kernel"), after[1.0].at("dense/kernel")));
  // A negative multiplier is refused.
  auto model = SmallCnn();
  CompileOptions c = Compile("sgd", 0.05);
  c.optimizer_config.lr_multipliers = {{"dense", -1}};
  auto bad = Trainer::Create(model.get(), std::move(c));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("multiplier of 'dense'"), std::string::npos) << bad.status().ToString();
}

TEST(TransferTest, LayerIndexAcceptsNamesAndIndicesAndRejectsPastTheEnd) {
  auto model = SmallCnn();
  ASSERT_TRUE(model->Build().ok());
  EXPECT_EQ(*model->LayerIndex("dense"), 4);
  EXPECT_EQ(*model->LayerIndex("1"), 1);
  EXPECT_EQ(*model->LayerIndex("-1"), 4);
  auto past = model->LayerIndex("5");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("past the last layer"), std::string::npos) << past.status().ToString();
  EXPECT_NE(past.status().message().find("0..4"), std::string::npos);
  auto typo = model->LayerIndex("batch_normalisation");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'batch_normalization'"), std::string::npos);
}

class WeightsImportTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = StrCat(testing::TempDir(), "/weights_import_", getpid());
    ASSERT_TRUE(MakeDirs(dir_).ok());
    source_ = SmallCnn("source");
    ASSERT_TRUE(source_->Build(/*seed=*/11).ok());
    target_ = SmallCnn("target");
    ASSERT_TRUE(target_->Build(/*seed=*/22).ok());
    ASSERT_FALSE(SameBits(source_->weights().at("conv2d/kernel"), target_->weights().at("conv2d/kernel")));
  }
  std::string WriteSafetensors(const std::string& name, const std::map<std::string, Tensor>& w) {
    io::NamedTensors nt(w.begin(), w.end());
    const std::string p = JoinPath(dir_, name);
    EXPECT_TRUE(io::WriteSafetensors(p, nt).ok());
    return p;
  }
  void ExpectTargetUnchanged(const std::map<std::string, Tensor>& before) {
    for (const auto& [n, w] : target_->weights()) EXPECT_TRUE(SameBits(w, before.at(n))) << n;
  }
  void ExpectTargetEqualsSource(const std::vector<std::string>& except = {}) {
    for (const auto& [n, w] : target_->weights()) {
      bool skip = false;
      for (const auto& e : except) skip |= n.rfind(e, 0) == 0;
      EXPECT_EQ(SameBits(w, source_->weights().at(n)), !skip) << n;
    }
  }
  std::string dir_;
  std::unique_ptr<nn::Model> source_, target_;
};

TEST_F(WeightsImportTest, SafetensorsLoadsEveryWeightBitwise) {
  const std::string p = WriteSafetensors("w.safetensors", source_->weights());
  ASSERT_TRUE(nn::LoadWeights(*target_, p).ok());
  ExpectTargetEqualsSource();
}

TEST_F(WeightsImportTest, SkipPrefixKeepsTheNewHead) {
  const std::string p = WriteSafetensors("w.safetensors", source_->weights());
  const Tensor head = target_->weights().at("dense/kernel");
  ASSERT_TRUE(nn::LoadWeights(*target_, p, {.skip_prefixes = {"dense/"}}).ok());
  ExpectTargetEqualsSource({"dense/kernel"});  // (dense/bias is zeros in both)
  EXPECT_TRUE(SameBits(target_->weights().at("dense/kernel"), head));
}

TEST_F(WeightsImportTest, CheckpointDirectoryLoads) {
  TrainingState s;
  s.weights = source_->weights();
  const std::string ck = JoinPath(dir_, "ckpt");
  ASSERT_TRUE(WriteCheckpoint(ck, s, {.weights_only = true}).ok());
  Status st = nn::LoadWeights(*target_, ck);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectTargetEqualsSource();
}

TEST_F(WeightsImportTest, OnnxInitializersLoadByNameAndByMap) {
  auto m = source_->InferenceModel();
  ASSERT_TRUE(m.ok());
  const std::string p = JoinPath(dir_, "source.onnx");
  ASSERT_TRUE(onnx::SaveModel(*m, p).ok());
  ASSERT_TRUE(nn::LoadWeights(*target_, p).ok());
  ExpectTargetEqualsSource();
  // Renamed initializers and a name map back to the model's names.
  auto target2 = SmallCnn("t2");
  ASSERT_TRUE(target2->Build(33).ok());
  graph::Model renamed = *m;
  std::map<std::string, std::string> map;
  renamed.graph.initializers.clear();
  for (const auto& [n, t] : m->graph.initializers) {
    if (source_->weights().count(n)) {
      renamed.graph.initializers["onnx::" + n] = t;
      map["onnx::" + n] = n;
    } else {
      renamed.graph.initializers[n] = t;
    }
  }
  for (graph::Node& node : renamed.graph.nodes)
    for (std::string& in : node.inputs)
      if (map.count("onnx::" + in)) in = "onnx::" + in;
  const std::string p2 = JoinPath(dir_, "renamed.onnx");
  ASSERT_TRUE(onnx::SaveModel(renamed, p2).ok());
  Status st = nn::LoadWeights(*target2, p2, {.name_map = map});
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (const auto& [n, w] : target2->weights()) EXPECT_TRUE(SameBits(w, source_->weights().at(n))) << n;
}

TEST_F(WeightsImportTest, MismatchesAreAllNamedAndNothingChanges) {
  auto w = source_->weights();
  w.erase("dense/bias");                                                 // missing
  w["dense/kernel"] = Tensor::Zeros(DType::kFloat32, Shape{4, 5});       // another shape (a 5-class head)
  w["extra/kernel"] = Tensor::Zeros(DType::kFloat32, Shape{2});          // unexpected
  const std::string p = WriteSafetensors("bad.safetensors", w);
  const auto before = target_->weights();
  Status st = nn::LoadWeights(*target_, p);
  ASSERT_FALSE(st.ok());
  const std::string msg(st.message());
  EXPECT_NE(msg.find("1 missing: 'dense/bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'dense/kernel': the model has float32[4,3], the file float32[4,5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected (not in the model): 'extra/kernel'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nothing was loaded"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  ExpectTargetUnchanged(before);
}

TEST_F(WeightsImportTest, AnotherArchitectureIsNamedAsSuch) {
  auto mlp = nn::ZooModel("mlp", {8, 8, 1}, 3);
  ASSERT_TRUE(mlp.ok());
  ASSERT_TRUE((*mlp)->Build().ok());
  const std::string p = WriteSafetensors("mlp.safetensors", (*mlp)->weights());
  const auto before = target_->weights();
  Status st = nn::LoadWeights(*target_, p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("likely for another architecture"), std::string::npos) << st.ToString();
  ExpectTargetUnchanged(before);
}

TEST_F(WeightsImportTest, TruncatedHdf5AndGarbageGiveClearErrors) {
  const auto before = target_->weights();
  const std::string h5 = JoinPath(dir_, "model.weights.h5");
  ASSERT_TRUE(WriteFileAtomic(h5, std::string("\x89HDF\r\n\x1a\n\0\0\0", 11)).ok());
  Status st = nn::LoadWeights(*target_, h5);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_NE(st.message().find("HDF5"), std::string::npos);
  EXPECT_NE(st.message().find("model.weights.h5"), std::string::npos);
  const std::string fake = JoinPath(dir_, "fake.h5");
  ASSERT_TRUE(WriteFileAtomic(fake, "not hdf5 at all").ok());
  st = nn::LoadWeights(*target_, fake);
  EXPECT_NE(st.message().find("does not start with the HDF5 signature"), std::string::npos) << st.ToString();
  // A safetensors file cut in the middle of its data.
  const std::string p = WriteSafetensors("w.safetensors", source_->weights());
  auto bytes = ReadFile(p);
  ASSERT_TRUE(bytes.ok());
  const std::string cut = JoinPath(dir_, "cut.safetensors");
  ASSERT_TRUE(WriteFileAtomic(cut, bytes->substr(0, bytes->size() - 10)).ok());
  st = nn::LoadWeights(*target_, cut);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cut.safetensors"), std::string::npos) << st.ToString();
  st = nn::LoadWeights(*target_, JoinPath(dir_, "absent.safetensors"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  ExpectTargetUnchanged(before);
}

}  // namespace
}  // namespace strata::train
