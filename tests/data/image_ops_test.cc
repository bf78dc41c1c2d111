// Image ops checked against numpy implementations of the tf.image formulas and against simple properties.
#include <cmath>
#include <fstream>
#include <set>

#include "core/file_util.h"
#include "core/random.h"
#include "data_test_util.h"
#include "io/image_codec.h"

namespace strata::data::image {
namespace {

using data::testing::RunPython;
using data::testing::TempPath;

Tensor Ramp(int64_t h, int64_t w, int64_t c) {
  Tensor t = Tensor::Empty(DType::kUInt8, Shape{h, w, c});
  for (int64_t i = 0; i < h * w * c; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>((i * 53 + i / 7) % 256);
  return t;
}

void WriteRaw(const std::string& path, const Tensor& t) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.byte_size()));
}

TEST(ImageOpsTest, BilinearResizeMatchesNumpyReference) {
  const Tensor src = Ramp(13, 17, 3);
  const std::string in = TempPath("resize_in.raw"), out = TempPath("resize_ref.raw");
  WriteRaw(in, src);
  // TF2 tf.image.resize(method='bilinear', antialias=False): half-pixel centres, neighbours clamped to the edge.
  ASSERT_EQ(RunPython("import numpy as np\n"
                      "img = np.fromfile('" + in + "', dtype=np.uint8).reshape(13, 17, 3).astype(np.float64)\n"
                      "def axis(n_out, n_in):\n"
                      "    src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5\n"
                      "    f = np.floor(src)\n"
                      "    return np.clip(f, 0, n_in - 1).astype(int), np.clip(f + 1, 0, n_in - 1).astype(int), src - f\n"
                      "res = []\n"
                      "for (h, w) in [(7, 5), (30, 40), (13, 17)]:\n"
                      "    y0, y1, fy = axis(h, 13); x0, x1, fx = axis(w, 17)\n"
                      "    top = img[y0][:, x0] + (img[y0][:, x1] - img[y0][:, x0]) * fx[None, :, None]\n"
                      "    bot = img[y1][:, x0] + (img[y1][:, x1] - img[y1][:, x0]) * fx[None, :, None]\n"
                      "    res.append((top + (bot - top) * fy[:, None, None]).astype(np.float32).ravel())\n"
                      "np.concatenate(res).tofile('" + out + "')\n"),
            0);
  const std::string ref = *ReadFile(out);
  const float* expect = reinterpret_cast<const float*>(ref.data());
  size_t at = 0;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{7, 5}, {30, 40}, {13, 17}}) {
    auto r = Resize(src, h, w);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->TypeString(), StrCat("float32[", h, ",", w, ",3]"));
    float worst = 0;
    for (int64_t i = 0; i < r->num_elements(); ++i) worst = std::max(worst, std::abs(r->data<float>()[i] - expect[at + i]));
    EXPECT_LT(worst, 1e-3f) << h << "x" << w;
    at += static_cast<size_t>(r->num_elements());
  }
  // Same size is the identity.
  auto same = *Resize(src, 13, 17);
  for (int64_t i = 0; i < src.num_elements(); ++i) ASSERT_EQ(same.data<float>()[i], src.data<uint8_t>()[i]);
}

TEST(ImageOpsTest, NearestKeepsDtypeAndDuplicatesPixels) {
  const Tensor src = Ramp(3, 4, 1);
  auto up = *Resize(src, 6, 8, ResizeMethod::kNearest);
  EXPECT_EQ(up.TypeString(), "uint8[6,8,1]");
  for (int64_t y = 0; y < 6; ++y)
    for (int64_t x = 0; x < 8; ++x) EXPECT_EQ(up.data<uint8_t>()[y * 8 + x], src.data<uint8_t>()[(y / 2) * 4 + x / 2]);
  auto down = *Resize(Ramp(8, 8, 1), 4, 4, ResizeMethod::kNearest);
  EXPECT_EQ(down.data<uint8_t>()[0], Ramp(8, 8, 1).data<uint8_t>()[1 * 8 + 1]);  // floor((0 + 0.5) * 2) = 1
  EXPECT_FALSE(Resize(Tensor::Zeros(DType::kUInt8, Shape{4, 4}), 2, 2).ok());  // needs [H, W, C]
}

TEST(ImageOpsTest, CropsAndFlips) {
  const Tensor src = Ramp(5, 6, 2);
  auto at = [&](const Tensor& t, int64_t y, int64_t x, int64_t c) {
    return t.data<uint8_t>()[(y * t.dim(1) + x) * t.dim(2) + c];
  };
  auto crop = *Crop(src, 1, 2, 3, 4);
  EXPECT_EQ(crop.TypeString(), "uint8[3,4,2]");
  EXPECT_EQ(at(crop, 2, 3, 1), at(src, 3, 5, 1));
  auto center = *CenterCrop(src, 3, 2);
  EXPECT_EQ(at(center, 0, 0, 0), at(src, 1, 2, 0));
  EXPECT_FALSE(Crop(src, 3, 0, 3, 1).ok());
  auto lr = *FlipLeftRight(src);
  auto ud = *FlipUpDown(src);
  for (int64_t y = 0; y < 5; ++y)
    for (int64_t x = 0; x < 6; ++x) {
      EXPECT_EQ(at(lr, y, x, 1), at(src, y, 5 - x, 1));
      EXPECT_EQ(at(ud, y, x, 0), at(src, 4 - y, x, 0));
    }
  Rng rng(3);
  std::set<uint8_t> corners;
  for (int i = 0; i < 50; ++i) {
    auto rc = *RandomCrop(src, 2, 2, rng);
    EXPECT_EQ(rc.TypeString(), "uint8[2,2,2]");
    corners.insert(rc.data<uint8_t>()[0]);
  }
  EXPECT_GT(corners.size(), 5u);  // different windows were chosen
}

TEST(ImageOpsTest, BrightnessContrastNormalizeAndFloat) {
  Tensor img = Tensor::FromVector<uint8_t>({0, 100, 200, 250, 10, 20}, Shape{1, 3, 2});
  auto bright = *AdjustBrightness(img, 0.1f);  // +25.5 grey levels, saturating
  EXPECT_EQ(bright.ToVector<uint8_t>(), (std::vector<uint8_t>{26, 126, 226, 255, 36, 46}));
  // Contrast: channel means are 70 and 123.33; (x - m) * 2 + m, saturated.
  auto contrast = *AdjustContrast(img, 2.0f);
  EXPECT_EQ(contrast.ToVector<uint8_t>(), (std::vector<uint8_t>{0, 77, 255, 255, 0, 0}));
  auto f = *ToFloat(img);
  EXPECT_FLOAT_EQ(f.data<float>()[2], 200.0f / 255.0f);
  auto fc = *AdjustContrast(f, 0.5f);
  EXPECT_NEAR(fc.data<float>()[0], (0 - 70.0f / 255) * 0.5f + 70.0f / 255, 1e-6);
  auto n = *Normalize(img, {100.0f, 0.0f}, {50.0f, 10.0f});
  EXPECT_EQ(n.ToVector<float>(), (std::vector<float>{-2.0f, 10.0f, 2.0f, 25.0f, -1.8f, 2.0f}));
  EXPECT_FALSE(Normalize(img, {1, 2, 3}, {1}).ok());
  EXPECT_EQ(ToFloat(f)->raw_data(), f.raw_data());  // float passes through
}

TEST(ImageOpsTest, DecodeResizeInAPipeline) {
  Tensor img = Ramp(20, 30, 3);
  auto png = io::EncodePng(img);
  ASSERT_TRUE(png.ok());
  Tensor bytes = Tensor::Empty(DType::kString, Shape{2});
  bytes.data<std::string>()[0] = *png;
  bytes.data<std::string>()[1] = "not an image";
  auto stats = std::make_shared<QualityStats>();
  auto ds = Dataset::FromTensorSlices({{"image/encoded", bytes}})
                .Map(DecodeFn())
                .Map(MapTensorFn("image", [](const Tensor& t) { return Resize(t, 10, 15); }))
                .IgnoreErrors(stats);
  auto out = data::testing::Collect(ds);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].Get("image")->TypeString(), "float32[10,15,3]");
  EXPECT_EQ(stats->TotalDropped("error: INVALID_ARGUMENT"), 1);
}

}  // namespace
}  // namespace strata::data::image
