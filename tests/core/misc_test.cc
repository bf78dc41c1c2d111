#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <vector>

#include "core/file_util.h"
#include "core/parallel.h"
#include "core/random.h"

namespace strata {
namespace {

TEST(RngTest, ReproducibleAndRestorable) {
  Rng a(42), b(42), c(43);
  std::vector<uint32_t> va, vb, vc;
  for (int i = 0; i < 8; ++i) {
    va.push_back(a.NextU32());
    vb.push_back(b.NextU32());
    vc.push_back(c.NextU32());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  Rng saved = a;
  const uint32_t next = a.NextU32();
  Rng restored;
  restored.Restore(saved.state(), saved.inc());
  EXPECT_EQ(restored.NextU32(), next);
}

TEST(RngTest, BelowIsInRangeAndCoversValues) {
  Rng r(1);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t v = r.Below(7);
    ASSERT_LT(v, 7u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) sum += r.Uniform();
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(ParallelTest, CoversEveryIndexOnce) {
  SetIntraOpThreads(2);
  std::vector<std::atomic<int>> hits(1000);
  ParallelFor(1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  int calls = 0;
  ParallelFor(0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(FileUtilTest, AtomicWriteReadAndPathChecks) {
  const std::string dir = ::testing::TempDir() + "/strata_file_util";
  ASSERT_TRUE(MakeDirs(dir + "/sub").ok());
  const std::string path = dir + "/sub/a.txt";
  ASSERT_TRUE(WriteFileAtomic(path, "hello").ok());
  auto r = ReadFile(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "hello");
  EXPECT_EQ(ReadFile(dir + "/missing").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(PathIsInside(dir + "/sub/a.txt", dir));
  EXPECT_FALSE(PathIsInside(dir + "/sub/../../x", dir));
  EXPECT_FALSE(PathIsInside("/etc/passwd", dir));
  auto g = Glob(dir + "/sub/*.txt");
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 1u);
  EXPECT_EQ(Basename((*g)[0]), "a.txt");
  EXPECT_EQ(Dirname("/a/b/c"), "/a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
}

}  // namespace
}  // namespace strata
