#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/file_util.h"
#include "core/json.h"
#include "core/logging.h"
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

// The setting holds on threads started before or after it (a server's workers), not only on the thread that made it:
// OpenMP keeps the count per thread.
TEST(ParallelTest, TheSettingReachesOtherThreads) {
  std::atomic<bool> go{false};
  int early_threads = 0, late_threads = 0, late_chunks = 0;
  std::thread early([&] {
    while (!go.load()) std::this_thread::yield();
    early_threads = IntraOpThreads();
  });
  SetIntraOpThreads(3);  // 3: not the core count (the OpenMP default) of the machines this runs on
  go = true;
  early.join();
  std::thread late([&] {
    late_threads = IntraOpThreads();
    std::mutex mu;
    ParallelFor(3000, 1, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(mu);
      ++late_chunks;
    });
  });
  late.join();
  EXPECT_EQ(early_threads, 3);
  EXPECT_EQ(late_threads, 3);
  EXPECT_EQ(late_chunks, 3);
  SetIntraOpThreads(1);
  int serial_chunks = 0;
  std::thread([&] { ParallelFor(3000, 1, [&](int64_t, int64_t) { ++serial_chunks; }); }).join();
  EXPECT_EQ(serial_chunks, 1);
  SetIntraOpThreads(0);
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

namespace strata {
namespace {

// --log_format json: one JSON object per line with time (UTC, ms), level, msg and the fields (numbers unquoted);
// quotes, newlines and bytes that are not UTF-8 in a message or a field cannot break the line.
TEST(LoggingTest, JsonLinesAreValidJsonWhateverTheMessage) {
  SetLogFormat(LogFormat::kJson);
  testing::internal::CaptureStderr();
  LogFields(LogLevel::kWarning, "bad \"name\"\nsecond line \xff\xfe end",
            {{"request_id", "r1"}, {"status", "404", true}, {"path", "/v1/models/\xc3\x28"}});
  LogInfo("plain");
  const std::string out = testing::internal::GetCapturedStderr();
  SetLogFormat(LogFormat::kText);
  const size_t nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;  // the message's newline is escaped
  auto first = Json::Parse(out.substr(0, nl));
  ASSERT_TRUE(first.ok()) << out;
  EXPECT_EQ(first->Find("level")->as_string(), "WARNING");
  EXPECT_EQ(first->Find("msg")->as_string(), "bad \"name\"\nsecond line \xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_EQ(first->Find("request_id")->as_string(), "r1");
  EXPECT_TRUE(first->Find("status")->is_int());
  EXPECT_EQ(first->Find("status")->as_int(), 404);
  EXPECT_EQ(first->Find("path")->as_string(), "/v1/models/\xEF\xBF\xBD(");
  const std::string time = first->Find("time")->as_string();
  ASSERT_EQ(time.size(), 24u) << time;  // 2026-12-05T00:41:02.123Z
  EXPECT_EQ(time[10], 'T');
  EXPECT_EQ(time.back(), 'Z');
  EXPECT_EQ(out.find('\xff'), std::string::npos);
  auto second = Json::Parse(out.substr(nl + 1, out.size() - nl - 2));
  ASSERT_TRUE(second.ok()) << out;
  EXPECT_EQ(second->Find("msg")->as_string(), "plain");
  EXPECT_EQ(second->Find("level")->as_string(), "INFO");
}

TEST(LoggingTest, TextFormatAppendsFieldsAndParseNamesTheChoices) {
  testing::internal::CaptureStderr();
  LogFields(LogLevel::kInfo, "request", {{"request_id", "abc"}, {"status", "200", true}});
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find(" I strata: request request_id=abc status=200\n"), std::string::npos) << out;
  EXPECT_TRUE(ParseLogFormat("json").ok());
  auto bad = ParseLogFormat("yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'text' or 'json'"), std::string::npos);
}

}  // namespace
}  // namespace strata
