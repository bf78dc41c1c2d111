// nn zoo: the layers added for the Keras applications (numerics against direct computations), the applications'
// parameter counts against the figures Keras 3.15 prints for the same arguments, and LoadKerasWeights on small HDF5
// files written here with libhdf5 in Keras 3's .weights.h5 layout (the full Keras comparison is the peer test
// tests/peer/keras_zoo.py).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "nn/zoo/zoo_internal.h"
#include "strata/nn.h"

namespace strata::nn {
namespace {

std::vector<float> RunModel(Model& m, const Tensor& x) {
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*m.InferenceModel()));
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({{m.input_names()[0], x}}, &out).ok());
  return out.empty() ? std::vector<float>{} : out[0].ToVector<float>();
}

TEST(ZooLayerTest, ZeroPaddingRescalingNormalizationGlobalMax) {
  auto in = Input({2, 2, 2}, "x");
  auto x = Rescaling(2.0, 1.0)(in);                      // 2x + 1
  x = Normalization({1.0f, 3.0f}, {4.0f, 0.25f})(x);     // (v - mean) / sqrt(var)
  x = ZeroPadding2D({1, 0, 0, 2})(x);                    // one row on top, two columns on the right
  auto pooled = GlobalMaxPooling2D("", true)(x);         // (1, 1, 1, 2)
  Model m(in, Flatten()(pooled));
  ASSERT_TRUE(m.Build().ok());
  Tensor t = Tensor::Empty(DType::kFloat32, Shape{1, 2, 2, 2});
  const float v[8] = {-3, 3, 0, 0.5f, -1, -2, -4, 0};  // (h, w, c)
  // Channel 0: (2v + 1 - 1) / 2 = v, all <= 0: the max is the padding's 0 where v = 0 too.
  // Channel 1: (2v + 1 - 3) / 0.5 = 4v - 4: values 8, -2, -12, -4 -> 8.
  std::copy(v, v + 8, t.data<float>());
  const std::vector<float> got = RunModel(m, t);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FLOAT_EQ(got[0], 0.0f);
  EXPECT_FLOAT_EQ(got[1], 8.0f);
  // Where the padding goes: a 1x1 image padded by one on every side.
  auto in2 = Input({1, 1, 2}, "x");
  auto y = ZeroPadding2D({1, 1, 1, 1})(Rescaling(2.0, 1.0)(in2));
  Model m2(in2, Flatten()(y));
  ASSERT_TRUE(m2.Build().ok());
  Tensor t2 = Tensor::FromVector<float>({3.0f, -1.0f}, Shape{1, 1, 1, 2});
  const std::vector<float> got2 = RunModel(m2, t2);
  ASSERT_EQ(got2.size(), 18u);  // (3, 3, 2), the value in the centre
  for (int i = 0; i < 18; ++i) EXPECT_FLOAT_EQ(got2[i], i == 8 ? 7.0f : i == 9 ? -1.0f : 0.0f) << i;
}

TEST(ZooLayerTest, HardSigmoidRelu6AndPerSampleDropoutAtInference) {
  auto in = Input({4}, "x");
  auto hs = Activation("hard_sigmoid")(in);
  auto r6 = Activation("relu6")(in);
  auto d = Dropout(0.5, "", {1})(in);  // identity at inference
  Model m({in}, {{"hs", hs}, {"r6", r6}, {"d", d}});
  ASSERT_TRUE(m.Build().ok());
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*m.InferenceModel()));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", Tensor::FromVector<float>({-4, -1, 2, 7}, Shape{1, 4})}}, &out).ok());
  const std::vector<float> want_hs{0, 2.0f / 6, 5.0f / 6, 1}, want_r6{0, 0, 2, 6};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(out[0].data<float>()[i], want_hs[i], 1e-6);
    EXPECT_FLOAT_EQ(out[1].data<float>()[i], want_r6[i]);
  }
  EXPECT_EQ(out[2].ToVector<float>(), (std::vector<float>{-4, -1, 2, 7}));
  auto y = Input({4}, "y");
  Model mb(y, Dropout(0.5, "", {2})(y));  // only all-ones noise shapes (one value per sample)
  EXPECT_EQ(mb.Build().code(), StatusCode::kUnimplemented);
}

// Parameter counts keras.applications.<name>(weights=None, input_shape=(96, 96, 3), classes=10).count_params()
// printed with Keras 3.15.
TEST(ApplicationTest, ParameterCountsMatchKeras) {
  const std::pair<const char*, int64_t> kCounts[] = {{"ResNet50V2", 23585290}, {"ResNet50", 23608202},
                                                     {"MobileNetV3Small", 1540218}, {"MobileNetV3Large", 4239242},
                                                     {"EfficientNetV2B0", 5932122}};
  for (const auto& [name, count] : kCounts) {
    ApplicationOptions o;
    o.input_shape = {96, 96, 3};
    o.classes = 10;
    auto m = Application(name, o);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().message();
    EXPECT_EQ((*m)->CountParams(), count) << name;
  }
  ApplicationOptions o;
  o.input_shape = {16, 16, 3};
  EXPECT_FALSE(Application("ResNet50V2", o).ok());  // below Keras's 32x32 minimum
  EXPECT_FALSE(Application("ResNet18V2").ok());
  o.input_shape = {64, 64, 3};
  o.include_top = false;
  o.pooling = "mean";
  EXPECT_FALSE(Application("MobileNetV3Small", o).ok());
}

// ZooModel (what the strata train CLI builds; its pipelines feed pixels / 255) builds MobileNetV3 and EfficientNetV2
// with input_pixel_scale 1/255, which their preprocessing divides out: fed pixels / 255 it gives what Keras's
// arguments (the Application, same seed, so the same weights) give on raw 0..255 pixels. Before, the CLI fed pixels /
// 255 into Rescaling(1/127.5, -1): inputs in [-1, -0.992] instead of [-1, 1]. A non-positive scale is refused.
TEST(ApplicationTest, ZooModelDividesTheCliPixelScaleOut) {
  for (const char* name : {"MobileNetV3Small", "EfficientNetV2B0"}) {
    ApplicationOptions keras;
    keras.input_shape = {32, 32, 3};
    keras.classes = 5;
    keras.classifier_activation = "linear";
    keras.output_name = "logits";
    auto a = Application(name, keras, 7);
    ASSERT_TRUE(a.ok()) << name << ": " << a.status().message();
    auto zoo = ZooModel(name, {32, 32, 3}, 5);
    ASSERT_TRUE(zoo.ok()) << name << ": " << zoo.status().message();
    ASSERT_TRUE((*zoo)->Build(7).ok());
    Tensor pixels = Tensor::Empty(DType::kFloat32, Shape{2, 32, 32, 3});
    Tensor unit = Tensor::Empty(DType::kFloat32, Shape{2, 32, 32, 3});
    for (int64_t i = 0; i < pixels.num_elements(); ++i) {
      pixels.mutable_values<float>()[i] = float((i * 37) % 256);
      unit.mutable_values<float>()[i] = pixels.mutable_values<float>()[i] / 255.0f;
    }
    const std::vector<float> want = RunModel(**a, pixels), got = RunModel(**zoo, unit);
    ASSERT_EQ(want.size(), 10u) << name;
    ASSERT_EQ(got.size(), want.size()) << name;
    float scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    ASSERT_GT(scale, 0) << name;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * scale) << name << " [" << i << "]";
    // The same weights fed pixels / 255 without the scale (what the CLI computed before): another function.
    const std::vector<float> unscaled = RunModel(**a, unit);
    float diff = 0;
    for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::fabs(unscaled[i] - want[i]));
    EXPECT_GT(diff, 1e-3 * scale) << name;
  }
  ApplicationOptions o;
  o.input_shape = {32, 32, 3};
  Status s = zoo::BuildApplication("MobileNetV3Small", o, 0.0).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input_pixel_scale must be positive, got 0"), std::string::npos) << s.message();
}

// A Keras 3 .weights.h5 with one layer group: layers/<key>/vars/{0,1} and the layer name in vars' "name" attribute.
void WriteKeras3File(const std::string& path, const std::string& layer, const std::vector<hsize_t>& kernel_dims) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t layers = H5Gcreate2(f, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(layers, "dense", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t vars = H5Gcreate2(g, "vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, H5T_VARIABLE);
  H5Tset_cset(str, H5T_CSET_UTF8);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(vars, "name", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
  const char* name = layer.c_str();
  H5Awrite(attr, str, &name);
  auto write = [&](const char* ds_name, const std::vector<hsize_t>& dims, float base) {
    hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    hid_t ds = H5Dcreate2(vars, ds_name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 1;
    for (hsize_t d : dims) n *= d;
    std::vector<float> v(n);
    for (hsize_t i = 0; i < n; ++i) v[i] = base + float(i);
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(ds);
    H5Sclose(space);
  };
  write("0", kernel_dims, 1.0f);
  write("1", {2}, 100.0f);
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Tclose(str);
  H5Gclose(vars);
  H5Gclose(g);
  H5Gclose(layers);
  H5Fclose(f);
}

std::unique_ptr<Model> DenseModel() {
  auto in = Input({3}, "x");
  auto m = std::make_unique<Model>(in, Dense(2, {.name = "head"})(in));
  EXPECT_TRUE(m->Build().ok());
  return m;
}

TEST(LoadKerasWeightsTest, LoadsKeras3LayoutAndReportsProblemsWithoutChanges) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/good.weights.h5", shaped = dir + "/shaped.weights.h5",
                    other = dir + "/other.weights.h5";
  WriteKeras3File(good, "head", {3, 2});
  WriteKeras3File(shaped, "head", {4, 2});
  WriteKeras3File(other, "dense_7", {3, 2});
  auto m = DenseModel();
  ASSERT_TRUE(LoadKerasWeights(*m, good).ok());
  EXPECT_EQ(m->GetWeight("head/kernel")->ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m->GetWeight("head/bias")->ToVector<float>(), (std::vector<float>{100, 101}));

  auto fresh = DenseModel();
  const std::vector<float> before = fresh->GetWeight("head/kernel")->ToVector<float>();
  Status s = LoadKerasWeights(*fresh, shaped);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'head/kernel' expects float [3,2], file has float [4,2]"), std::string::npos)
      << s.message();
  s = LoadKerasWeights(*fresh, other);
  EXPECT_NE(s.message().find("missing 'head/kernel'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("unexpected '/layers/dense/vars/0' [3,2] (no layer 'dense_7')"), std::string::npos)
      << s.message();
  EXPECT_EQ(fresh->GetWeight("head/kernel")->ToVector<float>(), before);

  // Truncated, not HDF5, missing: errors naming the file; nothing changes.
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = dir + "/truncated.weights.h5";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  s = LoadKerasWeights(*fresh, truncated);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  const std::string text = dir + "/text.h5";
  std::ofstream(text) << "not hdf5";
  s = LoadKerasWeights(*fresh, text);
  EXPECT_NE(s.message().find("is not an HDF5 file"), std::string::npos) << s.message();
  EXPECT_EQ(LoadKerasWeights(*fresh, dir + "/absent.h5").code(), StatusCode::kNotFound);
  EXPECT_EQ(fresh->GetWeight("head/kernel")->ToVector<float>(), before);
}

// nn::LoadWeights (what `strata train --weights` uses) on Keras files: by layer name and order, as LoadKerasWeights;
// a mis-shaped or foreign file is reported by AssignWeights and changes nothing.
TEST(LoadKerasWeightsTest, LoadWeightsReadsKerasFilesThroughTheSameMatching) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/lw_good.weights.h5", shaped = dir + "/lw_shaped.weights.h5";
  WriteKeras3File(good, "head", {3, 2});
  WriteKeras3File(shaped, "head", {4, 2});
  auto m = DenseModel();
  ASSERT_TRUE(LoadWeights(*m, good).ok());
  EXPECT_EQ(m->GetWeight("head/kernel")->ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m->GetWeight("head/bias")->ToVector<float>(), (std::vector<float>{100, 101}));
  auto fresh = DenseModel();
  const std::vector<float> before = fresh->GetWeight("head/kernel")->ToVector<float>();
  Status s = LoadWeights(*fresh, shaped);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("head/kernel"), std::string::npos) << s.message();
  EXPECT_EQ(fresh->GetWeight("head/kernel")->ToVector<float>(), before);
  // Without the model an HDF5 file cannot be matched.
  EXPECT_EQ(ReadWeightsFile(good).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::nn
