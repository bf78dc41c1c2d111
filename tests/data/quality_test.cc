// Quality filters, ignore_errors and class rebalancing.
#include <cmath>

#include "data_test_util.h"

namespace strata::data {
namespace {

using testing::Collect;
using testing::Ints;

// Element k: a 4x4x1 uint8 image and a label, with defects planted at known positions.
Dataset Planted() {
  const int n = 40;
  Tensor images = Tensor::Empty(DType::kUInt8, Shape{n, 4, 4, 1});
  Tensor floats = Tensor::Empty(DType::kFloat32, Shape{n, 2});
  Tensor labels = Tensor::Empty(DType::kInt64, Shape{n});
  for (int k = 0; k < n; ++k) {
    for (int p = 0; p < 16; ++p) images.data<uint8_t>()[k * 16 + p] = static_cast<uint8_t>((k * 31 + p * 17) % 256);
    floats.data<float>()[2 * k] = static_cast<float>(k);
    floats.data<float>()[2 * k + 1] = 0.5f;
    labels.data<int64_t>()[k] = k % 10;
  }
  for (int p = 0; p < 16; ++p) {
    images.data<uint8_t>()[3 * 16 + p] = 0;                                  // 3: blank
    images.data<uint8_t>()[5 * 16 + p] = static_cast<uint8_t>(100 + p % 2);  // 5: near-constant (stddev 0.5)
    images.data<uint8_t>()[9 * 16 + p] = images.data<uint8_t>()[8 * 16 + p];  // 9: duplicate image of 8
    images.data<uint8_t>()[31 * 16 + p] = images.data<uint8_t>()[2 * 16 + p];  // 31: duplicate image of 2
  }
  labels.data<int64_t>()[12] = 10;   // out of range
  labels.data<int64_t>()[13] = -1;   // out of range
  floats.data<float>()[2 * 20] = std::nanf("");
  floats.data<float>()[2 * 21 + 1] = INFINITY;
  return Dataset::FromTensorSlices({{"image", images}, {"aux", floats}, {"label", labels}}).Enumerate(0, "k");
}

TEST(QualityFilterTest, DropsPlantedDefectsAndCountsThemPerEpoch) {
  auto stats = std::make_shared<QualityStats>();
  auto ds = Planted().QualityFilter({QualityCheck::BlankImage("image"), QualityCheck::LabelRange("label", 10),
                                     QualityCheck::NonFinite(), QualityCheck::Duplicate("image")},
                                    stats);
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto kept = Ints(Collect(ds, epoch), "k");
    for (int64_t bad : {3, 5, 9, 12, 13, 20, 21, 31})
      EXPECT_EQ(std::count(kept.begin(), kept.end(), bad), 0) << "element " << bad << " was kept";
    EXPECT_EQ(kept.size(), 32u);
    const auto counts = stats->ForEpoch(epoch);
    EXPECT_EQ(counts.examined, 40);
    EXPECT_EQ(counts.dropped.at("blank_image"), 2);
    EXPECT_EQ(counts.dropped.at("label_out_of_range"), 2);
    EXPECT_EQ(counts.dropped.at("non_finite"), 2);
    EXPECT_EQ(counts.dropped.at("duplicate"), 2);
  }
  EXPECT_EQ(stats->TotalDropped(), 16);
  EXPECT_NE(stats->Report().find("epoch 1: examined 40, dropped 8 (blank_image 2, duplicate 2, label_out_of_range 2, "
                                 "non_finite 2)"),
            std::string::npos)
      << stats->Report();
  // A check on a missing tensor is an error naming it.
  auto missing = Planted().QualityFilter({QualityCheck::LabelRange("class", 3)}, stats);
  Element e;
  auto r = (*missing.MakeIterator())->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no tensor 'class'"), std::string::npos);
  EXPECT_FALSE(Planted().QualityFilter({}, nullptr).MakeIterator().ok());
}

TEST(IgnoreErrorsTest, DropsFailedElementsAndCountsByCode) {
  auto stats = std::make_shared<QualityStats>();
  auto ds = Dataset::Range(0, 10)
                .Map([](Element& e) -> Status {
                  const int64_t v = e.Get("value")->data<int64_t>()[0];
                  if (v % 4 == 1) return InvalidArgumentError("bad");
                  if (v == 6) return DataLossError("worse");
                  return Status::OK();
                })
                .IgnoreErrors(stats);
  EXPECT_EQ(Ints(Collect(ds, 2)), (std::vector<int64_t>{0, 2, 3, 4, 7, 8}));
  EXPECT_EQ(stats->ForEpoch(2).dropped.at("error: INVALID_ARGUMENT"), 3);
  EXPECT_EQ(stats->ForEpoch(2).dropped.at("error: DATA_LOSS"), 1);
}

Dataset LongTail(int64_t n, uint64_t seed) {
  // Class 0: 90%, class 1: 9%, class 2: 1%, in a fixed pseudo-random order.
  Tensor labels = Tensor::Empty(DType::kInt64, Shape{n});
  uint64_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(x >> 11) / 9007199254740992.0;
    labels.data<int64_t>()[i] = u < 0.9 ? 0 : (u < 0.99 ? 1 : 2);
  }
  return Dataset::FromTensorSlices({{"label", labels}});
}

std::vector<double> Shares(const std::vector<int64_t>& labels, int classes) {
  std::vector<double> s(classes, 0);
  for (int64_t l : labels) s[l] += 1.0 / static_cast<double>(labels.size());
  return s;
}

TEST(RebalanceTest, UndersampleAndOversampleReachTheTarget) {
  const auto input = LongTail(60000, 11);
  const auto in_shares = Shares(Ints(Collect(input), "label"), 3);
  EXPECT_NEAR(in_shares[2], 0.01, 0.003);
  RebalanceOptions o;
  o.num_classes = 3;
  o.target = {0.5, 0.3, 0.2};
  o.initial = {0.9, 0.09, 0.01};
  o.seed = 3;
  const auto under = Ints(Collect(input.RebalanceClasses(o)), "label");
  auto s = Shares(under, 3);
  EXPECT_NEAR(s[0], 0.5, 0.04);
  EXPECT_NEAR(s[1], 0.3, 0.04);
  EXPECT_NEAR(s[2], 0.2, 0.04);
  EXPECT_LT(under.size(), 60000u);
  o.mode = RebalanceOptions::Mode::kOversample;
  const auto over = Ints(Collect(input.RebalanceClasses(o)), "label");
  s = Shares(over, 3);
  EXPECT_NEAR(s[0], 0.5, 0.04);
  EXPECT_NEAR(s[2], 0.2, 0.04);
  EXPECT_GT(over.size(), 60000u);
  // Without the initial distribution it is estimated on the fly (uniform target here).
  RebalanceOptions est;
  est.num_classes = 3;
  est.seed = 8;
  s = Shares(Ints(Collect(input.RebalanceClasses(est)), "label"), 3);
  for (double x : s) EXPECT_NEAR(x, 1.0 / 3, 0.06);
  // Reproducible per (seed, epoch).
  EXPECT_EQ(Ints(Collect(input.RebalanceClasses(est), 1), "label"), Ints(Collect(input.RebalanceClasses(est), 1), "label"));
  RebalanceOptions bad = est;
  bad.target = {0.5, 0.5};
  EXPECT_NE(input.RebalanceClasses(bad).MakeIterator().status().message().find("target has 2 entries for 3 classes"),
            std::string::npos);
  RebalanceOptions small = est;
  small.num_classes = 2;
  Element e;
  auto it = *input.RebalanceClasses(small).MakeIterator();
  Status first_error;
  for (int i = 0; i < 1000 && first_error.ok(); ++i) {
    auto more = it->GetNext(&e);
    if (!more.ok()) first_error = more.status();
  }
  EXPECT_NE(first_error.message().find("label 2 is outside [0, 2)"), std::string::npos) << first_error.message();
}

}  // namespace
}  // namespace strata::data
