// Transformations checked against tf.data semantics (specs/tf-formats.md §4) and against their sequential forms.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

#include "core/random.h"
#include "data_test_util.h"

namespace strata::data {
namespace {

using testing::Collect;
using testing::Ints;
using testing::Iota;

Dataset Range(int64_t n) { return Dataset::Range(0, n); }

MapFn Square() {
  return [](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor v, e.Get("value"));
    const int64_t x = v.data<int64_t>()[0];
    e.Set("value", Tensor::Scalar<int64_t>(x * x));
    return Status::OK();
  };
}

// A map whose running time varies per element, so that parallel completion order differs from input order.
MapFn SlowSquare() {
  return [](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor v, e.Get("value"));
    const int64_t x = v.data<int64_t>()[0];
    std::this_thread::sleep_for(std::chrono::microseconds((x * 7919) % 5 * 200));
    e.Set("value", Tensor::Scalar<int64_t>(x * x));
    return Status::OK();
  };
}

std::vector<int64_t> Squares(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * i);
  return v;
}

TEST(MapTest, SequentialAndParallelDeterministicGiveInputOrder) {
  EXPECT_EQ(Ints(Collect(Range(50).Map(Square()))), Squares(50));
  for (int64_t p : {int64_t{1}, int64_t{3}, kAutotune}) {
    auto ds = Range(200).Map(SlowSquare(), {.num_parallel_calls = p, .deterministic = true});
    EXPECT_EQ(Ints(Collect(ds)), Squares(200)) << "parallel " << p;
    EXPECT_EQ(Ints(Collect(ds)), Squares(200)) << "second run, parallel " << p;
  }
}

TEST(MapTest, NondeterministicGivesTheSameMultiset) {
  auto ds = Range(300).Map(SlowSquare(), {.num_parallel_calls = 4, .deterministic = false});
  auto got = Ints(Collect(ds));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, Squares(300));
}

TEST(MapTest, ErrorsNameTheTransformationAndSourceAndTheIteratorContinues) {
  Tensor v = Tensor::FromVector<int64_t>({1, 2, 3, 4});
  std::vector<Metadata> meta;
  for (int i = 0; i < 4; ++i) meta.push_back({{kMetaSource, "train-00003.tfrecord"}, {kMetaRecord, StrCat(i)}});
  MapFn fail_on_3 = [](Element& e) -> Status {
    if (e.Get("v")->data<int64_t>()[0] == 3) return InvalidArgumentError("bad value 3");
    return Status::OK();
  };
  for (int64_t p : {0, 2}) {
    auto ds = Dataset::FromTensorSlices({{"v", v}}, meta).Map(fail_on_3, {.num_parallel_calls = p, .name = "parse"});
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it.ok());
    Element e;
    ASSERT_TRUE(*(*it)->GetNext(&e));
    ASSERT_TRUE(*(*it)->GetNext(&e));
    auto bad = (*it)->GetNext(&e);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), "parse on record 2 of 'train-00003.tfrecord': bad value 3");
    ASSERT_TRUE(*(*it)->GetNext(&e));  // the next element follows
    EXPECT_EQ(e.Get("v")->data<int64_t>()[0], 4);
    EXPECT_FALSE(*(*it)->GetNext(&e));
  }
}

TEST(MapTest, MapRandomIsReproducibleInParallelAndAcrossEpochs) {
  RandomMapFn noise = [](Element& e, Rng& rng) -> Status {
    e.Set("r", Tensor::Scalar<int64_t>(static_cast<int64_t>(rng.Below(1000000))));
    return Status::OK();
  };
  auto seq = Range(100).MapRandom(noise, {.seed = 5});
  auto par = Range(100).MapRandom(noise, {.num_parallel_calls = 3, .deterministic = false, .seed = 5});
  auto a = Collect(seq, 0), b = Collect(par, 0), c = Collect(seq, 1);
  std::map<int64_t, int64_t> by_value;
  for (const Element& e : b) by_value[e.Get("value")->data<int64_t>()[0]] = e.Get("r")->data<int64_t>()[0];
  for (const Element& e : a) EXPECT_EQ(by_value[e.Get("value")->data<int64_t>()[0]], e.Get("r")->data<int64_t>()[0]);
  EXPECT_NE(Ints(a, "r"), Ints(c, "r"));  // another epoch, other draws
}

TEST(MapTest, DestroyingAParallelMapMidStreamJoinsItsThreads) {
  const int before = testing::ThreadCount();
  for (int round = 0; round < 20; ++round) {
    auto it = Range(1000000).Map(SlowSquare(), {.num_parallel_calls = 4}).Prefetch(8).MakeIterator();
    ASSERT_TRUE(it.ok());
    Element e;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(*(*it)->GetNext(&e));
  }
  EXPECT_EQ(testing::ThreadCount(), before);
}

TEST(FilterTest, KeepsOrderAndReportsPredicateErrors) {
  auto even = Range(20).Filter([](const Element& e) -> StatusOr<bool> { return e.Get("value")->data<int64_t>()[0] % 2 == 0; });
  EXPECT_EQ(Ints(Collect(even)), (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
  auto broken = Range(3).Filter([](const Element& e) -> StatusOr<bool> { return e.Get("missing").status(); }, "keep_good");
  auto it = broken.MakeIterator();
  Element e;
  auto r = (*it)->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("keep_good on element: element has no tensor 'missing'"), std::string::npos)
      << r.status().message();
}

InterleaveOptions Cycle(int64_t cycle, int64_t block, int64_t parallel = 0, bool deterministic = true) {
  InterleaveOptions o;
  o.cycle_length = cycle;
  o.block_length = block;
  o.num_parallel_calls = parallel;
  o.deterministic = deterministic;
  return o;
}

// range(1,6).interleave(lambda x: from_tensors(x).repeat(6), cycle_length=2, block_length=4)
Dataset SpecInterleave(InterleaveOptions o) {
  return Dataset::Range(1, 6).Interleave(
      [](const Element& e) -> StatusOr<Dataset> {
        return Dataset::FromTensorSlices({{"value", Tensor::FromVector<int64_t>(std::vector<int64_t>(6, e.Get("value")->data<int64_t>()[0]))}});
      },
      o);
}

TEST(InterleaveTest, MatchesTheSpecReferenceSequentialAndParallel) {
  const std::vector<int64_t> expect = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(Ints(Collect(SpecInterleave(Cycle(2, 4)))), expect);
  for (int64_t p : {1, 2, 4}) EXPECT_EQ(Ints(Collect(SpecInterleave(Cycle(2, 4, p)))), expect) << "parallel " << p;
  auto any = Ints(Collect(SpecInterleave(Cycle(2, 4, 2, false))));
  std::sort(any.begin(), any.end());
  auto sorted = expect;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(any, sorted);
  // cycle_length 1 is flat_map.
  EXPECT_EQ(Ints(Collect(Dataset::Range(1, 4).FlatMap([](const Element& e) -> StatusOr<Dataset> {
              return Dataset::Range(0, e.Get("value")->data<int64_t>()[0]);
            }))),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
}

TEST(InterleaveTest, ParallelDeterministicEqualsSequentialOnUnevenInputsAndSkipAgrees) {
  auto inner = [](const Element& e) -> StatusOr<Dataset> {
    const int64_t k = e.Get("value")->data<int64_t>()[0];
    return Dataset::Range(k * 100, k * 100 + (k * 37) % 11).Map(SlowSquare());
  };
  auto seq = Range(30).Interleave(inner, Cycle(4, 3));
  auto par = Range(30).Interleave(inner, Cycle(4, 3, 3));
  const auto want = Ints(Collect(seq));
  EXPECT_EQ(Ints(Collect(par)), want);
  auto nondet = Ints(Collect(Range(30).Interleave(inner, Cycle(4, 3, 3, false))));
  auto sorted = want;
  std::sort(sorted.begin(), sorted.end());
  std::sort(nondet.begin(), nondet.end());
  EXPECT_EQ(nondet, sorted);
  for (int64_t skip : {0, 1, 5, 17, 40}) {
    auto it = *seq.MakeIterator();
    ASSERT_EQ(*it->Skip(skip), std::min<int64_t>(skip, want.size()));
    std::vector<int64_t> rest;
    Element e;
    while (*it->GetNext(&e)) rest.push_back(e.Get("value")->data<int64_t>()[0]);
    EXPECT_EQ(rest, std::vector<int64_t>(want.begin() + std::min<size_t>(skip, want.size()), want.end())) << skip;
  }
}

TEST(InterleaveTest, ErrorsOpeningAnInputNameItAndIterationContinues) {
  auto ds = Range(4).Interleave(
      [](const Element& e) -> StatusOr<Dataset> {
        if (e.Get("value")->data<int64_t>()[0] == 1) return NotFoundError("no such shard");
        return Dataset::Range(0, 2);
      },
      Cycle(1, 1));
  auto it = *ds.MakeIterator();
  Element e;
  std::vector<int64_t> got;
  int errors = 0;
  for (int i = 0; i < 20; ++i) {
    auto more = it->GetNext(&e);
    if (!more.ok()) {
      ++errors;
      EXPECT_NE(more.status().message().find("interleave on element: no such shard"), std::string::npos);
      continue;
    }
    if (!*more) break;
    got.push_back(e.Get("value")->data<int64_t>()[0]);
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
}

TEST(ShuffleTest, SeededOrderIsAPureFunctionOfSeedAndEpoch) {
  auto ds = Range(100).Shuffle(100, {.seed = 42});
  const auto e0 = Ints(Collect(ds, 0));
  EXPECT_EQ(Ints(Collect(ds, 0)), e0);
  EXPECT_EQ(Ints(Collect(Range(100).Shuffle(100, {.seed = 42}), 0)), e0);  // a new Dataset object, same seed
  const auto e1 = Ints(Collect(ds, 1));
  EXPECT_NE(e0, e1);
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Iota(0, 100));
  EXPECT_NE(e0, Iota(0, 100));
  auto fixed = Range(100).Shuffle(100, {.seed = 42, .reshuffle_each_iteration = false});
  EXPECT_EQ(Ints(Collect(fixed, 0)), Ints(Collect(fixed, 7)));
  EXPECT_EQ(Ints(Collect(Range(50).Shuffle(1, {.seed = 3}))), Iota(0, 50));  // buffer 1 is the identity
  // Unseeded: two runs differ (with overwhelming probability).
  EXPECT_NE(Ints(Collect(Range(100).Shuffle(100))), Ints(Collect(Range(100).Shuffle(100))));
}

TEST(ShuffleTest, SmallBufferOnlyMovesElementsLocally) {
  // With buffer k, output position i can only hold input elements <= i + k - 1.
  const auto out = Ints(Collect(Range(1000).Shuffle(10, {.seed = 1})));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_LE(out[i], static_cast<int64_t>(i) + 9);
  auto sorted = out;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Iota(0, 1000));
}

TEST(RepeatTest, CountsEpochsAndEndsOnEmptyInput) {
  EXPECT_EQ(Ints(Collect(Range(3).Repeat(2))), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(Collect(Range(3).Repeat(0)).empty());
  EXPECT_TRUE(Collect(Range(0).Repeat()).empty());  // infinite repeat of nothing ends at once
  EXPECT_EQ(Ints(Collect(Range(4).Repeat().Take(10))), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  // Each repetition is epoch base + k: repeat's k-th pass equals MakeIterator({.epoch = k}) of the input.
  auto shuffled = Range(20).Shuffle(20, {.seed = 9});
  const auto all = Ints(Collect(shuffled.Repeat(3)));
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(std::vector<int64_t>(all.begin() + 20 * k, all.begin() + 20 * (k + 1)), Ints(Collect(shuffled, k)));
}

TEST(BatchTest, StacksKeepsMetadataAndHandlesRemainder) {
  Tensor img = Tensor::Empty(DType::kFloat32, Shape{5, 2, 2});
  for (int i = 0; i < 20; ++i) img.data<float>()[i] = static_cast<float>(i);
  Tensor names = Tensor::Empty(DType::kString, Shape{5});
  for (int i = 0; i < 5; ++i) names.data<std::string>()[i] = StrCat("n", i);
  std::vector<Metadata> meta;
  for (int i = 0; i < 5; ++i) meta.push_back({{kMetaSource, "f"}, {kMetaRecord, StrCat(i)}});
  auto ds = Dataset::FromTensorSlices({{"img", img}, {"name", names}}, meta);
  auto b = Collect(ds.Batch(2));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].Get("img")->TypeString(), "float32[2,2,2]");
  EXPECT_EQ(b[1].Get("img")->ToVector<float>(), (std::vector<float>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(b[2].Get("img")->TypeString(), "float32[1,2,2]");
  EXPECT_EQ(b[1].Get("name")->ToVector<std::string>(), (std::vector<std::string>{"n2", "n3"}));
  ASSERT_EQ(b[1].metadata.size(), 2u);
  EXPECT_EQ(b[1].metadata[1].at(kMetaRecord), "3");
  EXPECT_EQ(Collect(ds.Batch(2, true)).size(), 2u);
  // Shapes that differ are an error naming the tensor and element.
  auto ragged = Range(3).FlatMap([](const Element& e) -> StatusOr<Dataset> {
    const int64_t n = e.Get("value")->data<int64_t>()[0];
    return Dataset::FromTensorSlices({{"x", Tensor::Zeros(DType::kInt64, Shape{1, n + 1})}});
  });
  auto it = *ragged.Batch(3).MakeIterator();
  Element e;
  auto r = it->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("batch: tensor 'x' of element 1"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("is int64[2] but element 0 has int64[1]"), std::string::npos);
}

// Large batch buffers are reused once the consumer frees them (BatchBufferPool), with the right contents, and a batch
// held past its iterator stays valid (the pool outlives the iterator until the last buffer comes back).
TEST(BatchTest, ReusesFreedLargeBuffersAndOutlivesItsIterator) {
  const int64_t rows = 8, row_floats = 64 * 1024;  // 8 x 256 KiB: above the pool's 256 KiB floor
  Tensor big = Tensor::Empty(DType::kFloat32, Shape{rows, row_floats});
  for (int64_t i = 0; i < rows * row_floats; ++i) big.data<float>()[i] = static_cast<float>(i % 1000003);
  auto ds = Dataset::FromTensorSlices({{"x", big}}).Batch(2);
  Element held;
  {
    auto it = *ds.MakeIterator();
    Element e;
    ASSERT_TRUE(*it->GetNext(&e));
    const void* first = e.Get("x")->raw_data();
    e = Element();  // the consumer frees batch 0
    ASSERT_TRUE(*it->GetNext(&e));
    EXPECT_EQ(e.Get("x")->raw_data(), first) << "batch 1 should reuse batch 0's freed buffer";
    for (int64_t i = 0; i < 2 * row_floats; ++i)
      ASSERT_EQ(e.Get("x")->data<float>()[i], static_cast<float>((2 * row_floats + i) % 1000003)) << i;
    ASSERT_TRUE(*it->GetNext(&held));  // batch 2 is kept while batch 1 is still held: a different buffer
    EXPECT_NE(held.Get("x")->raw_data(), e.Get("x")->raw_data());
  }
  for (int64_t i = 0; i < 2 * row_floats; ++i)
    ASSERT_EQ(held.Get("x")->data<float>()[i], static_cast<float>((4 * row_floats + i) % 1000003)) << i;
}

TEST(BatchTest, SkipCountsBatches) {
  auto it = *Range(10).Batch(3).MakeIterator();
  EXPECT_EQ(*it->Skip(2), 2);
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("value")->ToVector<int64_t>(), (std::vector<int64_t>{6, 7, 8}));
  EXPECT_EQ(*it->Skip(5), 1);  // only the remainder batch [9] was left
  auto dropped = *Range(10).Batch(3, true).MakeIterator();
  EXPECT_EQ(*dropped->Skip(5), 3);
}

TEST(PaddedBatchTest, PadsToBatchMaximumOrFixedShape) {
  auto ds = Dataset::Range(1, 4).Map([](Element& e) -> Status {
    const int64_t n = e.Get("value")->data<int64_t>()[0];
    e.Set("seq", Tensor::FromVector<int64_t>(std::vector<int64_t>(static_cast<size_t>(n), n)));
    e.Set("tag", Tensor::FromVector<std::string>(std::vector<std::string>(static_cast<size_t>(n), "t")));
    return Status::OK();
  });
  auto b = Collect(ds.PaddedBatch(3));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].Get("seq")->TypeString(), "int64[3,3]");
  EXPECT_EQ(b[0].Get("seq")->ToVector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 2, 2, 0, 3, 3, 3}));
  EXPECT_EQ(b[0].Get("tag")->ToVector<std::string>(), (std::vector<std::string>{"t", "", "", "t", "t", "", "t", "t", "t"}));
  PaddedBatchOptions o;
  o.padded_shapes["seq"] = {5};
  o.padding_values["seq"] = Tensor::Scalar<int64_t>(-1);
  auto f = Collect(ds.PaddedBatch(2, o));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].Get("seq")->ToVector<int64_t>(), (std::vector<int64_t>{3, 3, 3, -1, -1}));
  o.padded_shapes["seq"] = {2};
  auto it = *ds.PaddedBatch(3, o).MakeIterator();
  Element e;
  auto r = it->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than its padded shape"), std::string::npos);
  // Two-dimensional padding.
  auto grid = Dataset::Range(1, 3).Map([](Element& e) -> Status {
    const int64_t n = e.Get("value")->data<int64_t>()[0];
    Tensor t = Tensor::Empty(DType::kFloat32, Shape{n, n});
    for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = static_cast<float>(10 * n + i);
    e.Set("g", t);
    return Status::OK();
  });
  auto g = Collect(grid.PaddedBatch(2));
  EXPECT_EQ(g[0].Get("g")->ToVector<float>(), (std::vector<float>{10, 0, 0, 0, 20, 21, 22, 23}));
}

TEST(PrefetchTest, KeepsOrderBoundsTheBufferAndSkipsUpstreamBeforeStarting) {
  std::atomic<int64_t> produced{0};
  auto counted = Range(1000).Map([&](Element& e) -> Status {
    ++produced;
    return Status::OK();
  });
  auto it = *counted.Prefetch(4).MakeIterator();
  EXPECT_EQ(*it->Skip(10), 10);
  EXPECT_EQ(produced.load(), 0);  // skipped before the producer started: the map never ran
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("value")->data<int64_t>()[0], 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LE(produced.load(), 1 + 4 + 1);  // one consumed, at most 4 buffered, one in flight
  EXPECT_EQ(Ints(Collect(Range(500).Prefetch())), Iota(0, 500));
  EXPECT_EQ(Ints(Collect(Range(50).Prefetch(1, /*max_bytes=*/1))), Iota(0, 50));
}

TEST(ShardTakeSkipTest, Positions) {
  EXPECT_EQ(Ints(Collect(Range(10).Shard(3, 1))), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(Ints(Collect(Range(10).Shard(3, 0))), (std::vector<int64_t>{0, 3, 6, 9}));
  auto it = *Range(100).Shard(4, 2).MakeIterator();
  EXPECT_EQ(*it->Skip(3), 3);
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("value")->data<int64_t>()[0], 14);
  EXPECT_EQ(*it->Skip(100), 21);  // 18, 22, ..., 98
  // Skipping "everything" (CountBatches' huge count) saturates instead of overflowing: 10 of 0..39 have k % 4 == 1,
  // also below a Batch (the count of a multi-worker shard).
  EXPECT_EQ(*(*Range(40).Shard(4, 1).MakeIterator())->Skip(std::numeric_limits<int64_t>::max() / 2), 10);
  EXPECT_EQ(*(*Range(40).Shard(2, 1).Batch(8, true).MakeIterator())->Skip(std::numeric_limits<int64_t>::max() / 2), 2);
  EXPECT_FALSE(Range(3).Shard(0, 0).MakeIterator().ok());
  EXPECT_NE(Range(3).Shard(2, 2).MakeIterator().status().message().find("index must be in [0, 2), got 2"),
            std::string::npos);
  EXPECT_EQ(Ints(Collect(Range(10).Take(3))), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(Collect(Range(3).Take(-1))), Iota(0, 3));
  EXPECT_EQ(Ints(Collect(Range(3).Take(10))), Iota(0, 3));
  EXPECT_EQ(Ints(Collect(Range(10).Skip(7))), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_TRUE(Collect(Range(10).Skip(-1)).empty());
  EXPECT_TRUE(Collect(Range(10).Skip(20)).empty());
}

TEST(ZipEnumerateTest, SideBySide) {
  auto names = Range(5).Map([](Element& e) -> Status {
    const int64_t v = e.Get("value")->data<int64_t>()[0];
    e.Erase("value");
    e.Set("name", Tensor::Scalar<std::string>(StrCat("item", v)));
    return Status::OK();
  });
  auto z = Collect(Dataset::Zip({Range(3), names}).Enumerate(10, "i"));
  ASSERT_EQ(z.size(), 3u);
  EXPECT_EQ(z[2].Get("name")->data<std::string>()[0], "item2");
  EXPECT_EQ(Ints(z, "i"), (std::vector<int64_t>{10, 11, 12}));
  auto clash = Dataset::Zip({Range(3), Range(3)}).MakeIterator();
  Element e;
  auto r = (*clash)->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("zip: tensor 'value' of input 1 clashes"), std::string::npos);
}

TEST(SampleChooseTest, WeightsSeedsAndChoices) {
  auto zeros = Dataset::Range(0, 1).Repeat(), ones = Dataset::Range(1, 2).Repeat();
  auto mix = Dataset::SampleFromDatasets({zeros, ones}, {.weights = {0.8, 0.2}, .seed = 4}).Take(5000);
  const auto a = Ints(Collect(mix, 0));
  const double ones_share = std::count(a.begin(), a.end(), 1) / 5000.0;
  EXPECT_NEAR(ones_share, 0.2, 0.03);
  EXPECT_EQ(Ints(Collect(mix, 3)), a);  // same choices every epoch unless rerandomized
  auto rerand = Dataset::SampleFromDatasets({zeros, ones}, {.seed = 4, .rerandomize_each_iteration = true}).Take(200);
  EXPECT_NE(Ints(Collect(rerand, 0)), Ints(Collect(rerand, 1)));
  // Exhausted inputs: skipped by default, or the end with stop_on_empty_dataset.
  auto finite = Dataset::SampleFromDatasets({Dataset::Range(0, 10), Dataset::Range(100, 103)}, {.seed = 1});
  auto all = Ints(Collect(finite));
  EXPECT_EQ(all.size(), 13u);
  std::vector<int64_t> small;
  for (int64_t v : all)
    if (v < 100) small.push_back(v);
  EXPECT_EQ(small, Iota(0, 10));  // each input is consumed in order
  auto stop = Dataset::SampleFromDatasets({Dataset::Range(0, 10), Dataset::Range(100, 103)},
                                          {.seed = 1, .stop_on_empty_dataset = true});
  EXPECT_LT(Collect(stop).size(), 13u);

  auto choice = Dataset::FromTensorSlices({{"value", Tensor::FromVector<int64_t>({0, 1, 1, 0, 2})}});
  auto chosen = Dataset::ChooseFromDatasets({Dataset::Range(0, 5), Dataset::Range(10, 15), Dataset::Range(20, 21)}, choice);
  EXPECT_EQ(Ints(Collect(chosen)), (std::vector<int64_t>{0, 10, 11, 1, 20}));
  auto bad = Dataset::ChooseFromDatasets({Range(3)}, Dataset::FromTensorSlices({{"value", Tensor::FromVector<int64_t>({3})}}));
  Element e;
  auto r = (*bad.MakeIterator())->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("choice 3 is outside [0, 1)"), std::string::npos);
}

}  // namespace
}  // namespace strata::data
