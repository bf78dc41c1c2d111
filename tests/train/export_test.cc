// Export: the serving signature (input_image with baked-in /255, logits + probabilities), onnx's checker (inside
// ExportModel), a reload through the ONNX importer giving strata's own outputs, assets/labels.json and metadata;
// and, when the peers venv is installed (scripts/install-deps.sh --peers; the test carries the `peer` label), the
// same outputs in ONNX Runtime through ../shared/peers/ort/run_model.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::train {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Tensor RawPixels(int n) {
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 28, 28, 1});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = float((i * 37 + i / 28) % 256);
  return x;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = *nn::ZooModel("cnn_small", {28, 28, 1}, 10);
    ASSERT_TRUE(model_->Build(5).ok());
    dir_ = ::testing::TempDir() + "/export_test";
    ExportOptions o;
    o.input_scale = 1.0f / 255.0f;
    o.labels = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    auto path = ExportModel(*model_, dir_, "fashion", 3, o);
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    path_ = *path;
  }
  // strata's logits for raw pixels: the nn inference graph on x/255.
  Tensor Expected(const Tensor& raw) {
    auto gm = *model_->InferenceModel();
    auto s = *graph::Session::Create(std::make_shared<graph::Model>(gm));
    Tensor scaled = raw.Clone();
    for (float& v : scaled.mutable_values<float>()) v = v * (1.0f / 255.0f);
    std::vector<Tensor> out;
    EXPECT_TRUE(s->Run({{"input_image", scaled}}, &out).ok());
    return out[0];
  }
  std::unique_ptr<nn::Model> model_;
  std::string dir_, path_;
};

TEST_F(ExportTest, LayoutSignatureLabelsAndMetadata) {
  EXPECT_EQ(path_, dir_ + "/fashion/3/model.onnx");
  EXPECT_EQ(Slurp(dir_ + "/fashion/3/assets/labels.json").substr(0, 9), "[\n  \"a\",\n");
  auto m = onnx::LoadModel(path_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->graph.inputs.size(), 1u);
  EXPECT_EQ(m->graph.inputs[0].name, "input_image");
  EXPECT_EQ(m->graph.inputs[0].shape.ToString(), "[batch,28,28,1]");
  ASSERT_EQ(m->graph.outputs.size(), 2u);
  EXPECT_EQ(m->graph.outputs[0].name, "logits");
  EXPECT_EQ(m->graph.outputs[1].name, "probabilities");
  bool has_sig = false, has_labels = false;
  for (const auto& [k, v] : m->metadata) has_sig |= k == "strata.signature", has_labels |= k == "labels";
  EXPECT_TRUE(has_sig && has_labels);
  // The exported file gives strata's outputs.
  auto s = *graph::Session::Create(std::make_shared<graph::Model>(std::move(*m)));
  Tensor raw = RawPixels(2);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({{"input_image", raw}}, &out).ok());
  const Tensor want = Expected(raw);
  for (int64_t i = 0; i < want.num_elements(); ++i) EXPECT_NEAR(out[0].data<float>()[i], want.data<float>()[i], 1e-5);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int j = 0; j < 10; ++j) sum += out[1].data<float>()[r * 10 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  EXPECT_FALSE(ExportModel(*model_, dir_, "bad/name", 1).ok());
  EXPECT_FALSE(ExportModel(*model_, dir_, "fashion", 0).ok());
}

// The export carries the model config: the model rebuilt from it has the same weights by name and shape.
TEST_F(ExportTest, CarriesTheModelConfig) {
  const std::string text = Slurp(dir_ + "/fashion/3/model_config.json");
  EXPECT_EQ(text, *model_->GetConfig() + "\n");
  auto rebuilt = nn::ModelFromConfig(text);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_TRUE(CheckWeightsMatch(**rebuilt, model_->weights(), "export").ok());
}

TEST_F(ExportTest, OnnxRuntimeGivesTheSameLogits) {
  const char* python = std::getenv("STRATA_PEERS_PYTHON");
  const std::string runner = std::string(STRATA_TEST_SOURCE_DIR) + "/../shared/peers/ort/run_model.py";
  if (python == nullptr || !FileExists(python) || !FileExists(runner))
    GTEST_SKIP() << "ONNX Runtime peer not installed: run scripts/install-deps.sh --peers (it makes the peers venv; "
                 << "STRATA_PEERS_PYTHON=" << (python ? python : "unset") << ", runner " << runner << ")";
  Tensor raw = RawPixels(4);
  const std::string in = dir_ + "/input.bin", out = dir_ + "/ort_logits.bin";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(static_cast<const char*>(raw.raw_data()), static_cast<std::streamsize>(raw.byte_size()));
  }
  const std::string cmd = std::string(python) + " " + runner + " " + path_ + " " + in + " 4,28,28,1 " + out +
                          " --threads 2 --iters 1 --warmup 0 > " + dir_ + "/ort.json";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string bytes = Slurp(out);
  const Tensor want = Expected(raw);
  ASSERT_EQ(bytes.size(), want.byte_size());
  const float* got = reinterpret_cast<const float*>(bytes.data());
  for (int64_t i = 0; i < want.num_elements(); ++i)
    EXPECT_NEAR(got[i], want.data<float>()[i], 1e-4 + 1e-4 * std::abs(want.data<float>()[i])) << i;
}

}  // namespace
}  // namespace strata::train
