// The trainer's pipeline end to end: TFRecord -> parse Example -> decode PNG -> float [28,28,1] / 255 -> cache ->
// shuffle(seed) -> batch -> prefetch; determinism, mid-epoch resumption and clean shutdown.
#include <algorithm>
#include <cmath>

#include "data_test_util.h"
#include "io/image_codec.h"
#include "io/tfrecord.h"

namespace strata::data {
namespace {

using testing::Collect;
using testing::Ints;
using testing::TempPath;

// Writes `shards` TFRecord files with `per_shard` Examples each (image/encoded PNG 28x28x1, label, id).
std::vector<std::string> WriteShards(const std::string& name, int shards, int per_shard) {
  std::vector<std::string> files;
  int id = 0;
  for (int s = 0; s < shards; ++s) {
    files.push_back(TempPath(StrCat(name, "-", s, ".tfrecord")));
    auto w = io::TfRecordWriter::Open(files.back());
    EXPECT_TRUE(w.ok());
    for (int i = 0; i < per_shard; ++i, ++id) {
      Tensor img = Tensor::Empty(DType::kUInt8, Shape{28, 28, 1});
      for (int p = 0; p < 784; ++p) img.data<uint8_t>()[p] = static_cast<uint8_t>((id * 7 + p * 3) % 256);
      io::Example ex;
      ex.features["image/encoded"] = io::Feature::Bytes({*io::EncodePng(img)});
      ex.features["label"] = io::Feature::Int64s({id % 10});
      ex.features["id"] = io::Feature::Int64s({id});
      EXPECT_TRUE((*w)->Write(io::SerializeExample(ex)).ok());
    }
    EXPECT_TRUE((*w)->Close().ok());
  }
  return files;
}

Dataset TrainerPipeline(const std::vector<std::string>& files, int64_t parallel, bool deterministic = true) {
  MapOptions parse;
  parse.num_parallel_calls = parallel;
  parse.deterministic = deterministic;
  parse.name = "parse";
  return Dataset::TfRecord(files)
      .Map(
          [](Element& e) -> Status {
            STRATA_RETURN_IF_ERROR(ParseExampleFn({io::FeatureSpec::FixedLen("image/encoded", DType::kString),
                                                   io::FeatureSpec::FixedLen("label", DType::kInt64),
                                                   io::FeatureSpec::FixedLen("id", DType::kInt64)})(e));
            STRATA_RETURN_IF_ERROR(image::DecodeFn("image/encoded", "image", 1)(e));
            return MapTensorFn("image", [](const Tensor& t) { return image::ToFloat(t); })(e);
          },
          parse)
      .Cache()
      .Shuffle(64, {.seed = 1234})
      .Batch(16)
      .Prefetch(2);
}

TEST(PipelineTest, TrainerPipelineProducesNormalisedBatches) {
  const auto files = WriteShards("trainer", 3, 40);
  auto batches = Collect(TrainerPipeline(files, 2));
  ASSERT_EQ(batches.size(), 8u);  // 120 / 16, last batch of 8
  const Element& b = batches[0];
  EXPECT_EQ(b.Get("image")->TypeString(), "float32[16,28,28,1]");
  EXPECT_EQ(b.Get("label")->TypeString(), "int64[16]");
  EXPECT_EQ(b.metadata.size(), 16u);
  // Pixel p of example `id` was (id * 7 + p * 3) % 256.
  const int64_t id = b.Get("id")->data<int64_t>()[3];
  EXPECT_FLOAT_EQ(b.Get("image")->data<float>()[3 * 784 + 10], static_cast<float>((id * 7 + 30) % 256) / 255.0f);
  EXPECT_EQ(b.Get("label")->data<int64_t>()[3], id % 10);
  // The metadata of each row still says where it came from.
  EXPECT_EQ(b.metadata[3].at(kMetaSource), files[static_cast<size_t>(id / 40)]);
  EXPECT_EQ(b.metadata[3].at(kMetaRecord), StrCat(id % 40));
  EXPECT_EQ(batches.back().Get("image")->dim(0), 8);
}

TEST(PipelineTest, DeterministicWithSeedGivesTheSameOrderTwiceAndNondeterministicTheSameMultiset) {
  const auto files = WriteShards("det", 4, 30);
  const auto a = Ints(Collect(TrainerPipeline(files, 3), 2), "id");
  const auto b = Ints(Collect(TrainerPipeline(files, 3), 2), "id");  // a fresh pipeline, as after a restart
  EXPECT_EQ(a, b);
  EXPECT_NE(a, Ints(Collect(TrainerPipeline(files, 3), 3), "id"));  // another epoch, another order
  // Without the shuffle, deterministic=false may reorder but never loses or repeats an element.
  MapOptions o;
  o.num_parallel_calls = 3;
  o.deterministic = false;
  auto ids = Ints(Collect(Dataset::TfRecord(files, {.num_parallel_reads = 2})
                              .Map(ParseExampleFn({io::FeatureSpec::FixedLen("id", DType::kInt64)}), o)),
                  "id");
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, testing::Iota(0, 120));
}

TEST(PipelineTest, ResumingMidEpochWithSkipSeesExactlyTheRemainingElements) {
  const auto files = WriteShards("resume", 3, 40);
  for (int64_t epoch : {0, 5}) {
    const auto full = Collect(TrainerPipeline(files, 2), epoch);
    for (int64_t done : {0, 1, 3, 7, 8, 20}) {
      // A new process: new Dataset objects, iterator for the same epoch, skip the batches already trained on.
      auto it = *TrainerPipeline(files, 2).MakeIterator({.epoch = epoch});
      const int64_t skipped = *it->Skip(done);
      EXPECT_EQ(skipped, std::min<int64_t>(done, full.size()));
      std::vector<int64_t> rest;
      Element e;
      while (*it->GetNext(&e))
        for (int64_t v : e.Get("id")->values<int64_t>()) rest.push_back(v);
      std::vector<int64_t> want;
      for (size_t i = static_cast<size_t>(skipped); i < full.size(); ++i)
        for (int64_t v : full[i].Get("id")->values<int64_t>()) want.push_back(v);
      EXPECT_EQ(rest, want) << "epoch " << epoch << ", resumed after " << done << " batches";
    }
  }
}

TEST(PipelineTest, DestroyingIteratorsMidStreamStopsEveryThread) {
  const auto files = WriteShards("stop", 2, 50);
  const int before = testing::ThreadCount();
  for (int round = 0; round < 10; ++round) {
    auto ds = Dataset::TfRecord(files, {.num_parallel_reads = 2})
                  .Map(ParseExampleFn({io::FeatureSpec::FixedLen("id", DType::kInt64)}), {.num_parallel_calls = 3})
                  .Repeat()
                  .Prefetch(4);
    auto it = *ds.MakeIterator();
    Element e;
    for (int i = 0; i < round * 7; ++i) ASSERT_TRUE(*it->GetNext(&e));
  }
  EXPECT_EQ(testing::ThreadCount(), before);
}

TEST(PipelineTest, ParseErrorsNameTheFeatureAndTheRecord) {
  const auto files = WriteShards("errs", 1, 3);
  auto ds = Dataset::TfRecord(files).Map(ParseExampleFn({io::FeatureSpec::FixedLen("weight", DType::kFloat32)}),
                                         {.name = "parse"});
  Element e;
  auto r = (*ds.MakeIterator())->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "parse on record 0 (offset 0) of '" + files[0] +
                                      "': feature 'weight' is required (FixedLen float32[], no default_value) but "
                                      "missing in this record");
  auto kind = Dataset::TfRecord(files).Map(ParseExampleFn({io::FeatureSpec::FixedLen("label", DType::kFloat32)}));
  auto it = *kind.MakeIterator();
  ASSERT_FALSE(it->GetNext(&e).ok());
  r = it->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("map on record 1 (offset "), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("feature 'label' in this record: spec expects float_list (dtype float32), found "
                                      "int64_list with 1 values"),
            std::string::npos)
      << r.status().message();
}

TEST(PipelineTest, BatchThenParseGivesTheSameTensors) {
  const auto files = WriteShards("vec", 1, 10);
  std::vector<io::FeatureSpec> specs = {io::FeatureSpec::FixedLen("label", DType::kInt64),
                                        io::FeatureSpec::VarLen("id", DType::kInt64, /*ragged=*/true)};
  auto per_element = Collect(Dataset::TfRecord(files).Map(ParseExampleFn({specs[0]})).Batch(4));
  auto vectorised = Collect(Dataset::TfRecord(files).Batch(4).Map(ParseExampleBatchFn(specs)));
  ASSERT_EQ(per_element.size(), vectorised.size());
  for (size_t i = 0; i < vectorised.size(); ++i) {
    EXPECT_EQ(vectorised[i].Get("label")->ToVector<int64_t>(), per_element[i].Get("label")->ToVector<int64_t>());
    EXPECT_EQ(vectorised[i].Get("id/row_splits")->dim(0), per_element[i].Get("label")->dim(0) + 1);
  }
}

}  // namespace
}  // namespace strata::data

namespace strata::data {
namespace {

TEST(DecodeRawTest, ScalarsAndBatchesWithInferredDimension) {
  Tensor one = Tensor::Scalar<std::string>(std::string("\x01\x00\x02\x00\x03\x00\xff\xff", 8));
  auto a = DecodeRaw(one, DType::kInt16, {2, -1});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->TypeString(), "int16[2,2]");
  EXPECT_EQ(a->ToVector<int16_t>(), (std::vector<int16_t>{1, 2, 3, -1}));
  Tensor batch = Tensor::FromVector<std::string>({"abcd", "efgh", "ijkl"});
  auto b = DecodeRaw(batch, DType::kUInt8, {2, 2, 1});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->TypeString(), "uint8[3,2,2,1]");
  EXPECT_EQ(b->data<uint8_t>()[4], 'e');
  EXPECT_NE(DecodeRaw(Tensor::FromVector<std::string>({"ab", "abc"}), DType::kUInt8, {-1}).status().message().find(
                "string 1 has 3 bytes, string 0 has 2"),
            std::string::npos);
  EXPECT_NE(DecodeRaw(one, DType::kFloat32, {3}).status().message().find("do not fit shape [3]"), std::string::npos);
  EXPECT_FALSE(DecodeRaw(one, DType::kInt16, {-1, -1}).ok());
  EXPECT_FALSE(DecodeRaw(Tensor::Scalar<float>(1), DType::kUInt8, {-1}).ok());
}

}  // namespace
}  // namespace strata::data
