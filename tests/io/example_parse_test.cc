#include <gtest/gtest.h>

#include "strata/example.h"

namespace strata::io {
namespace {

const Tensor* Find(const NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts)
    if (n == name) return &t;
  return nullptr;
}

std::string Record(std::map<std::string, Feature> f) {
  Example e;
  e.features = std::move(f);
  return SerializeExample(e);
}

TEST(ExampleParseTest, FixedLenValuesDefaultsAndVarLen) {
  const std::string rec = Record({{"image", Feature::Floats({1, 2, 3, 4, 5, 6})},
                                  {"label", Feature::Int64s({4})},
                                  {"tags", Feature::Bytes({"a", "bb", "ccc"})}});
  std::vector<FeatureSpec> specs = {
      FeatureSpec::FixedLen("image", DType::kFloat32, {2, 3}),
      FeatureSpec::FixedLen("label", DType::kInt64),
      FeatureSpec::FixedLen("weight", DType::kFloat32, {2}, Tensor::Scalar<float>(0.5f)),
      FeatureSpec::FixedLen("name", DType::kString, {}, Tensor::Scalar<std::string>("anon")),
      FeatureSpec::VarLen("tags", DType::kString),
      FeatureSpec::VarLen("boxes", DType::kFloat32),
  };
  specs[1].output = "y";
  auto out = ParseSingleExample(rec, specs, "record 3 of 'x.tfrecord'");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 6u);
  EXPECT_EQ(Find(*out, "image")->TypeString(), "float32[2,3]");
  EXPECT_EQ(Find(*out, "image")->ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Find(*out, "y")->TypeString(), "int64[]");
  EXPECT_EQ(Find(*out, "y")->ToVector<int64_t>(), std::vector<int64_t>{4});
  EXPECT_EQ(Find(*out, "weight")->ToVector<float>(), (std::vector<float>{0.5f, 0.5f}));  // broadcast default
  EXPECT_EQ(Find(*out, "name")->ToVector<std::string>(), std::vector<std::string>{"anon"});
  EXPECT_EQ(Find(*out, "tags")->ToVector<std::string>(), (std::vector<std::string>{"a", "bb", "ccc"}));
  EXPECT_EQ(Find(*out, "boxes")->TypeString(), "float32[0]");
}

TEST(ExampleParseTest, ErrorsNameTheFeatureAndTheRecord) {
  const std::string rec = Record({{"label", Feature::Floats({1.0f})}, {"image", Feature::Floats({1, 2, 3})}});
  const std::string where = "record 17 of 'train-00000-of-00004.tfrecord'";
  auto missing = ParseSingleExample(rec, {FeatureSpec::FixedLen("id", DType::kInt64)}, where);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("feature 'id' is required"), std::string::npos);
  EXPECT_NE(missing.status().message().find(where), std::string::npos) << missing.status().message();

  auto kind = ParseSingleExample(rec, {FeatureSpec::FixedLen("label", DType::kInt64)}, where);
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("feature 'label' in " + where + ": spec expects int64_list"),
            std::string::npos)
      << kind.status().message();
  EXPECT_NE(kind.status().message().find("found float_list with 1 values"), std::string::npos);

  auto count = ParseSingleExample(rec, {FeatureSpec::FixedLen("image", DType::kFloat32, {2, 2})}, where);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("needs 4 values, found 3"), std::string::npos) << count.status().message();

  auto garbage = ParseSingleExample("\xff\xff\xff", {FeatureSpec::FixedLen("x", DType::kFloat32)}, where);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find(where), std::string::npos);

  auto bad_spec = ParseSingleExample(rec, {FeatureSpec::FixedLen("x", DType::kUInt8)}, where);
  EXPECT_NE(bad_spec.status().message().find("dtype must be float32, int64 or string"), std::string::npos);
  auto bad_default =
      ParseSingleExample(rec, {FeatureSpec::FixedLen("x", DType::kFloat32, {3}, Tensor::FromVector<float>({1, 2}))});
  EXPECT_NE(bad_default.status().message().find("default_value must be float32 with 3 values"), std::string::npos);
}

TEST(ExampleParseTest, BatchPaddedAndRagged) {
  std::vector<std::string> recs = {
      Record({{"ids", Feature::Int64s({1, 2, 3})}, {"label", Feature::Int64s({0})}}),
      Record({{"ids", Feature::Int64s({})}, {"label", Feature::Int64s({1})}}),
      Record({{"ids", Feature::Int64s({7})}}),
  };
  std::vector<std::string_view> views(recs.begin(), recs.end());
  FeatureSpec padded = FeatureSpec::VarLen("ids", DType::kInt64);
  padded.padding_value = Tensor::Scalar<int64_t>(-1);
  FeatureSpec ragged = FeatureSpec::VarLen("ids", DType::kInt64, /*ragged=*/true);
  ragged.output = "rids";
  auto out = ParseExampleBatch(
      views, {padded, ragged, FeatureSpec::FixedLen("label", DType::kInt64, {}, Tensor::Scalar<int64_t>(9))});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Find(*out, "ids")->TypeString(), "int64[3,3]");
  EXPECT_EQ(Find(*out, "ids")->ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, -1, -1, -1, 7, -1, -1}));
  EXPECT_EQ(Find(*out, "ids/length")->ToVector<int64_t>(), (std::vector<int64_t>{3, 0, 1}));
  EXPECT_EQ(Find(*out, "rids")->ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 7}));
  EXPECT_EQ(Find(*out, "rids/row_splits")->ToVector<int64_t>(), (std::vector<int64_t>{0, 3, 3, 4}));
  EXPECT_EQ(Find(*out, "label")->ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 9}));
  // An error in row 2 names that row.
  auto bad = ParseExampleBatch(views, {FeatureSpec::FixedLen("label", DType::kInt64)}, {"r0", "r1", "r2 of 'f'"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("missing in r2 of 'f'"), std::string::npos) << bad.status().message();
}

TEST(ExampleParseTest, SequenceExampleContextAndFeatureLists) {
  SequenceExample s;
  s.context["id"] = Feature::Int64s({5});
  s.feature_lists["tok"] = {Feature::Int64s({1, 2}), Feature::Int64s({3})};
  s.feature_lists["xy"] = {Feature::Floats({1, 2}), Feature::Floats({3, 4}), Feature::Floats({5, 6})};
  const std::string bytes = SerializeSequenceExample(s);
  auto out = ParseSingleSequenceExample(bytes, {FeatureSpec::FixedLen("id", DType::kInt64)},
                                        {FeatureSpec::VarLen("tok", DType::kInt64),
                                         FeatureSpec::FixedLen("xy", DType::kFloat32, {2}),
                                         FeatureSpec::FixedLen("none", DType::kFloat32, {4}, Tensor::Scalar<float>(0))});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Find(*out, "id")->ToVector<int64_t>(), std::vector<int64_t>{5});
  EXPECT_EQ(Find(*out, "tok")->ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Find(*out, "tok/row_splits")->ToVector<int64_t>(), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(Find(*out, "xy")->TypeString(), "float32[3,2]");
  EXPECT_EQ(Find(*out, "xy")->ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Find(*out, "none")->TypeString(), "float32[0,4]");
  auto bad = ParseSingleSequenceExample(bytes, {}, {FeatureSpec::FixedLen("tok", DType::kInt64, {2})}, "seq 4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step 1 of the feature list of seq 4"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace strata::io
