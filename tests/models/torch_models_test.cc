// Models exported by PyTorch (tools/torch_models.py, run by the ctest fixture) give PyTorch's outputs within 1e-4
// relative to the output's scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/file_util.h"
#include "io/npy.h"
#include "strata/graph.h"
#include "strata/onnx.h"

namespace strata {
namespace {

std::string ModelsDir() {
  const char* d = std::getenv("STRATA_TORCH_MODELS");
  return d ? d : "";
}

class TorchModelTest : public ::testing::TestWithParam<std::string> {};

// max |got - want| / max |want|
double RelativeError(const Tensor& got, const Tensor& want) {
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(want.data<float>()[i])));
  }
  return max_diff / std::max(max_ref, 1e-12);
}

TEST_P(TorchModelTest, MatchesPyTorch) {
  const std::string dir = JoinPath(ModelsDir(), GetParam());
  ASSERT_FALSE(ModelsDir().empty()) << "STRATA_TORCH_MODELS is not set (the ctest fixture exports the models)";
  auto model = onnx::LoadModel(JoinPath(dir, "model.onnx"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto input = io::ReadNpy(JoinPath(dir, "input.npy"));
  auto expected = io::ReadNpy(JoinPath(dir, "output.npy"));
  ASSERT_TRUE(input.ok() && expected.ok());
  auto session = graph::Session::Create(std::make_shared<graph::Model>(std::move(model).value()));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const std::string in_name = (*session)->inputs()[0].name;
  std::vector<Tensor> out;
  Status s = (*session)->Run({{in_name, *input}}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), expected->shape());
  const double rel = RelativeError(out[0], *expected);
  EXPECT_LE(rel, 1e-4) << GetParam() << ": max abs difference relative to the output's scale";
  RecordProperty("relative_error", std::to_string(rel));
  std::printf("%s: relative error %.3g\n", GetParam().c_str(), rel);

  // Batch 1 (a second plan from the cache) gives the first row of batch 2.
  Tensor row = Tensor::Empty(DType::kFloat32, [&] {
    Shape sh = input->shape();
    sh[0] = 1;
    return sh;
  }());
  std::memcpy(row.raw_data(), input->raw_data(), row.byte_size());
  std::vector<Tensor> out1;
  s = (*session)->Run({{in_name, row}}, &out1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const int64_t per_row = expected->num_elements() / expected->dim(0);
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < per_row; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(out1[0].data<float>()[i] - expected->data<float>()[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(expected->data<float>()[i])));
  }
  EXPECT_LE(max_diff / max_ref, 1e-4) << "batch 1";
  EXPECT_EQ((*session)->stats().plan_cache_misses, 2);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, TorchModelTest,
                         ::testing::Values("mlp", "cnn", "transformer", "squeezenet1_1", "mobilenet_v2", "resnet18",
                                           "resnet50"));

}  // namespace
}  // namespace strata
