// Memory and file caches: completion, partial caches, lockfiles, and the element encoding behind the file cache.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "core/file_util.h"
#include "data/dataset_impl.h"
#include "data_test_util.h"

namespace strata::data {
namespace {

using testing::Collect;
using testing::Ints;
using testing::Iota;
using testing::TempPath;

// Range(n) whose map counts how often upstream work runs.
Dataset Counted(int64_t n, std::shared_ptr<std::atomic<int>> calls) {
  return Dataset::Range(0, n).Map([calls](Element& e) -> Status {
    ++*calls;
    e.meta()["note"] = "from upstream";
    return Status::OK();
  });
}

TEST(MemoryCacheTest, FirstCompletePassIsReplayedAndPartialPassesAreDropped) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto cached = Counted(10, calls).Cache();
  {
    auto it = *cached.MakeIterator();
    Element e;
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(*it->GetNext(&e));
  }  // destroyed before the end: the partial cache is thrown away
  EXPECT_EQ(calls->load(), 4);
  EXPECT_EQ(Ints(Collect(cached)), Iota(0, 10));  // recomputed and now complete
  EXPECT_EQ(calls->load(), 14);
  auto again = Collect(cached.Repeat(3));
  EXPECT_EQ(again.size(), 30u);
  EXPECT_EQ(calls->load(), 14);  // replayed, upstream not run
  EXPECT_EQ(again[29].meta().at("note"), "from upstream");
  // take(k) after cache never completes it; take before cache does.
  auto partial_calls = std::make_shared<std::atomic<int>>(0);
  auto bad_order = Counted(10, partial_calls).Cache().Take(3).Repeat(2);
  EXPECT_EQ(Collect(bad_order).size(), 6u);
  EXPECT_EQ(partial_calls->load(), 6);
  auto good_calls = std::make_shared<std::atomic<int>>(0);
  EXPECT_EQ(Collect(Counted(10, good_calls).Take(3).Cache().Repeat(2)).size(), 6u);
  EXPECT_EQ(good_calls->load(), 3);
  // Skip on a complete cache jumps.
  auto it = *cached.MakeIterator();
  EXPECT_EQ(*it->Skip(8), 8);
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("value")->data<int64_t>()[0], 8);
}

TEST(FileCacheTest, WritesOnceThenReadsWithoutUpstream) {
  const std::string path = TempPath("fc/cache");
  ASSERT_TRUE(MakeDirs(Dirname(path)).ok());
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto cached = Counted(25, calls).Map([](Element& e) -> Status {
    e.Set("s", Tensor::FromVector<std::string>({"a", "bb"}));
    return Status::OK();
  }).Cache(path);
  auto first = Collect(cached);
  EXPECT_EQ(calls->load(), 25);
  EXPECT_TRUE(FileExists(path + ".index"));
  EXPECT_TRUE(FileExists(path + ".data-00000-of-00001"));
  EXPECT_FALSE(FileExists(path + "_0.lockfile"));
  // A different pipeline over the same path reads the file and ignores its upstream, as TF does.
  auto other_calls = std::make_shared<std::atomic<int>>(0);
  auto second = Collect(Counted(3, other_calls).Cache(path));
  EXPECT_EQ(other_calls->load(), 0);
  ASSERT_EQ(second.size(), 25u);
  EXPECT_EQ(Ints(second), Iota(0, 25));
  EXPECT_EQ(second[7].Get("s")->ToVector<std::string>(), (std::vector<std::string>{"a", "bb"}));
  EXPECT_EQ(second[7].meta().at("note"), "from upstream");
  auto it = *Counted(3, other_calls).Cache(path).MakeIterator();
  EXPECT_EQ(*it->Skip(20), 20);
  Element e;
  ASSERT_TRUE(*it->GetNext(&e));
  EXPECT_EQ(e.Get("value")->data<int64_t>()[0], 20);
}

TEST(FileCacheTest, PartialWriteIsDeletedAndLockfilesAreRespected) {
  const std::string path = TempPath("fc2/cache");
  ASSERT_TRUE(MakeDirs(Dirname(path)).ok());
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto cached = Counted(10, calls).Cache(path);
  {
    auto it = *cached.MakeIterator();
    Element e;
    ASSERT_TRUE(*it->GetNext(&e));
    EXPECT_TRUE(FileExists(path + "_0.lockfile"));
    EXPECT_NE(ReadFile(path + "_0.lockfile")->find("Created at: "), std::string::npos);
    // A second writer while the first runs: the concurrent-iterator error.
    auto second = *cached.MakeIterator();
    auto r = second->GetNext(&e);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
    EXPECT_NE(r.status().message().find("There appears to be a concurrent caching iterator running"),
              std::string::npos);
  }
  EXPECT_FALSE(FileExists(path + "_0.lockfile"));
  EXPECT_FALSE(FileExists(path + "_0.data-00000-of-00001"));
  EXPECT_FALSE(FileExists(path + ".index"));

  // A lockfile left by a crashed process on this host is detected as stale and replaced.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::ofstream(path + "_0.lockfile") << "Created at: 1\npid: " << child << "\nhost: " << [] {
    char h[256] = {};
    ::gethostname(h, sizeof(h) - 1);
    return std::string(h);
  }() << "\n";
  EXPECT_EQ(Collect(cached).size(), 10u);
  EXPECT_TRUE(FileExists(path + ".index"));

  // A lockfile from another host is never guessed stale.
  const std::string other = TempPath("fc3/cache");
  ASSERT_TRUE(MakeDirs(Dirname(other)).ok());
  std::ofstream(other + "_0.lockfile") << "Created at: 1\npid: 1\nhost: some-other-machine\n";
  auto blocked = *Counted(3, calls).Cache(other).MakeIterator();
  Element e;
  EXPECT_EQ(blocked->GetNext(&e).status().code(), StatusCode::kAlreadyExists);
  // Left-over shard files from an earlier run: AlreadyExists asking to delete them.
  ::unlink((other + "_0.lockfile").c_str());
  std::ofstream(other + "_0.index") << "x";
  auto leftover = *Counted(3, calls).Cache(other).MakeIterator();
  auto r = leftover->GetNext(&e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("To continue delete the above files."), std::string::npos);
}

TEST(ElementCodecTest, RoundTripAndDamage) {
  Element e;
  e.Set("f", Tensor::FromVector<float>({1.5f, -2, 3, 4}, Shape{2, 2}));
  e.Set("s", Tensor::FromVector<std::string>({"", std::string("a\0b", 3)}));
  e.Set("u", Tensor::Scalar<uint8_t>(7));
  e.Set("empty", Tensor::Zeros(DType::kInt64, Shape{0, 3}));
  e.metadata = {{{"source", "x"}, {"record", "1"}}, {}};
  std::string bytes;
  internal::SerializeElement(e, &bytes);
  Element back;
  ASSERT_TRUE(internal::DeserializeElement(bytes, &back).ok());
  ASSERT_EQ(back.tensors.size(), 4u);
  EXPECT_EQ(back.Get("f")->TypeString(), "float32[2,2]");
  EXPECT_EQ(back.Get("f")->ToVector<float>(), (std::vector<float>{1.5f, -2, 3, 4}));
  EXPECT_EQ(back.Get("s")->ToVector<std::string>()[1], std::string("a\0b", 3));
  EXPECT_EQ(back.Get("empty")->TypeString(), "int64[0,3]");
  EXPECT_EQ(back.metadata, e.metadata);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    Element x;
    EXPECT_EQ(internal::DeserializeElement(bytes.substr(0, cut), &x).code(), StatusCode::kDataLoss) << cut;
  }
  std::string huge = bytes;
  huge[4 + 8 + 1 + 1 + 2] = '\x7f';  // a dimension of tensor "f" becomes enormous
  Element x;
  EXPECT_FALSE(internal::DeserializeElement(huge, &x).ok());
}

}  // namespace
}  // namespace strata::data
