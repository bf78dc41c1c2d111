// The session's plan cache: one compiled plan per distinct set of input shapes, bounded by count and by the bytes
// the plans hold, least recently used evicted first; under a memory limit, idle plans give their memory back when a
// new shape needs it (the reliability issue: an unbounded cache took a server to 24 GB, and with a memory limit every
// new batch size got 429 for ever once the cache was full).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "../address_space_limit.h"
#include "strata/graph.h"

namespace strata::graph {
namespace {

// y = Relu(x @ W + b) with x [batch, 16], W [16, 16]: every batch size is a new plan, and its arena grows with it.
std::shared_ptr<Model> DenseModel() {
  auto m = std::make_shared<Model>();
  m->opset_imports[""] = 17;
  m->graph.name = "dense";
  m->graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(16)})});
  m->graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(16)})});
  std::vector<float> w(16 * 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3.0f;
  m->graph.initializers["W"] = Tensor::FromVector<float>(w, Shape{16, 16});
  m->graph.initializers["b"] = Tensor::FromVector<float>(std::vector<float>(16, 0.5f), Shape{16});
  Node mm{.name = "mm", .op_type = "MatMul", .inputs = {"x", "W"}, .outputs = {"xw"}, .opset = 17};
  Node add{.name = "add", .op_type = "Add", .inputs = {"xw", "b"}, .outputs = {"z"}, .opset = 17};
  Node sq{.name = "sq", .op_type = "Mul", .inputs = {"z", "z"}, .outputs = {"zz"}, .opset = 17};
  Node relu{.name = "relu", .op_type = "Relu", .inputs = {"zz"}, .outputs = {"y"}, .opset = 17};
  m->graph.nodes = {mm, add, sq, relu};
  return m;
}

Tensor Rows(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n * 16));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5) * 0.25f;
  return Tensor::FromVector<float>(v, Shape{n, 16});
}

// y[row, col] computed directly from x and W (b = 0.5 everywhere; z*z is never negative, so Relu keeps it).
float Expected(const Tensor& x, int64_t row, int64_t col, const Tensor& w) {
  double z = 0.5;
  for (int64_t k = 0; k < 16; ++k) z += double(x.data<float>()[row * 16 + k]) * w.data<float>()[k * 16 + col];
  return static_cast<float>(z * z);
}

void RunAndCheck(Session& s, const Model& m, int64_t rows) {
  std::vector<Tensor> out;
  const Tensor x = Rows(rows);
  Status st = s.Run({{"x", x}}, &out);
  ASSERT_TRUE(st.ok()) << "batch " << rows << ": " << st.ToString();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{rows, 16}));
  const Tensor& w = m.graph.initializers.at("W");
  for (int64_t r : {int64_t{0}, rows - 1})
    for (int64_t c : {0, 7, 15}) ASSERT_NEAR(out[0].data<float>()[r * 16 + c], Expected(x, r, c, w), 1e-3) << r;
}

TEST(PlanCacheTest, CountBoundEvictsTheLeastRecentlyUsed) {
  auto model = DenseModel();
  SessionOptions o;
  o.plan_cache_max_plans = 4;
  o.plan_cache_max_bytes = 0;
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (int64_t b = 1; b <= 50; ++b) RunAndCheck(**s, *model, b);
  RunStats st = (*s)->stats();
  EXPECT_EQ(st.plans_cached, 4);
  EXPECT_EQ(st.plan_cache_misses, 50);
  EXPECT_EQ(st.plan_cache_evictions, 46);
  // The four newest (47..50) are cached: using them again compiles nothing. 46 was evicted: it compiles again.
  for (int64_t b = 47; b <= 50; ++b) RunAndCheck(**s, *model, b);
  EXPECT_EQ((*s)->stats().plan_cache_misses, 50);
  EXPECT_EQ((*s)->stats().plan_cache_hits, 4);
  // Use 47 again: the order, newest first, is 47 50 49 48; a new shape then evicts 48, not 47.
  RunAndCheck(**s, *model, 47);
  RunAndCheck(**s, *model, 46);
  EXPECT_EQ((*s)->stats().plan_cache_misses, 51);
  RunAndCheck(**s, *model, 47);
  EXPECT_EQ((*s)->stats().plan_cache_misses, 51);
  RunAndCheck(**s, *model, 48);
  EXPECT_EQ((*s)->stats().plan_cache_misses, 52);
}

TEST(PlanCacheTest, ByteBoundKeepsTheHeldBytesUnderIt) {
  auto model = DenseModel();
  SessionOptions o;
  o.plan_cache_max_plans = 1000;
  o.plan_cache_max_bytes = 256 << 10;
  o.optimize = false;  // keep the intermediates in the arena: about 3 x 64 bytes per row
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int64_t most = 0;
  for (int64_t b = 16; b <= 1600; b += 16) {
    RunAndCheck(**s, *model, b);
    const RunStats st = (*s)->stats();
    // The newest plan always stays; beyond it the bound holds.
    if (st.plans_cached > 1) {
      EXPECT_LE(st.plan_cache_bytes, int64_t{256} << 10) << "after batch " << b;
    }
    most = std::max(most, st.plans_cached);
  }
  const RunStats st = (*s)->stats();
  EXPECT_GT(st.plan_cache_evictions, 0);
  EXPECT_LT(most, 100);
  EXPECT_GE(st.plans_cached, 1);
}

TEST(PlanCacheTest, TheNewestPlanStaysEvenWhenItAloneIsOverTheBound) {
  auto model = DenseModel();
  SessionOptions o;
  o.plan_cache_max_bytes = 1024;  // smaller than any plan's arena here
  o.optimize = false;
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok());
  RunAndCheck(**s, *model, 512);
  RunAndCheck(**s, *model, 512);
  EXPECT_EQ((*s)->stats().plan_cache_misses, 1);
  EXPECT_EQ((*s)->stats().plans_cached, 1);
  RunAndCheck(**s, *model, 256);
  EXPECT_EQ((*s)->stats().plans_cached, 1);
  EXPECT_EQ((*s)->stats().plan_cache_evictions, 1);
}

// With a memory limit that holds one large plan's arena but not two, each new size must still run: the idle plans
// give their memory back (before the fix, every new size got RESOURCE_EXHAUSTED once the cache held the memory).
TEST(PlanCacheTest, UnderAMemoryLimitIdlePlansGiveTheirMemoryBack) {
  auto model = DenseModel();
  SessionOptions o;
  o.optimize = false;
  o.memory_limit_bytes = 3 << 20;
  o.plan_cache_max_bytes = 0;  // only the memory limit bounds it
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok());
  // 4000 rows: x @ W, + b and the square are 256 KB each; the output 256 KB: about 1 MB a run with its arena.
  for (int64_t b = 4000; b < 4010; ++b) RunAndCheck(**s, *model, b);
  const RunStats st = (*s)->stats();
  EXPECT_EQ(st.plan_cache_misses, 10);
  EXPECT_GT(st.plan_cache_evictions, 0);
  // A run that alone is over the limit still fails, with the limit named.
  std::vector<Tensor> out;
  Status big = (*s)->Run({{"x", Rows(40000)}}, &out);
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted) << big.ToString();
  EXPECT_NE(big.message().find("memory limit"), std::string::npos) << big.message();
  RunAndCheck(**s, *model, 3);
}

// Plans evicted while other threads run them stay valid until those runs end.
TEST(PlanCacheTest, EvictionUnderConcurrentRunsIsSafe) {
  auto model = DenseModel();
  SessionOptions o;
  o.plan_cache_max_plans = 2;
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        const int64_t rows = 1 + (i * 7 + t * 3) % 9;
        std::vector<Tensor> out;
        if (!(*s)->Run({{"x", Rows(rows)}}, &out).ok() || out.size() != 1 || out[0].dim(0) != rows) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE((*s)->stats().plans_cached, 2);
  EXPECT_GT((*s)->stats().plan_cache_evictions, 0);
}

// Under an address-space limit that is nearly used up, compiling a plan is an error, not a crash inside oneDNN's
// primitive creation (which does not check its JIT buffer allocations: the reliability battery's segfault under
// prlimit --as). Run in a child process, whose limit is set just above what it already uses.
TEST(PlanCacheTest, CompilingWithoutAddressSpaceLeftIsAnErrorNotACrash) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: an RLIMIT_AS test cannot run under it";
#endif
  auto model = DenseModel();
  auto s = Session::Create(model, {});
  ASSERT_TRUE(s.ok());
  const int code = strata::testing::RunWithAddressSpaceHeadroom(16 << 20, [&] {
    std::vector<Tensor> out;
    const Status st = (*s)->Run({{"x", Rows(7)}}, &out);
    const bool explained = st.code() == StatusCode::kResourceExhausted &&
                           st.message().find("address space") != std::string::npos;
    return explained ? 0 : (st.ok() ? 1 : 2);
  });
  EXPECT_EQ(code, 0) << "1: compiled anyway, 2: another error, 3: could not set the limit, 4: threw, <0: signal";
  // Without the limit the same session compiles and runs.
  RunAndCheck(**s, *model, 7);
}

// Resident set size of this process, from /proc/self/statm.
int64_t RssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : -1;
}

// Issue 16's must-show: 1,000 distinct batch sizes keep memory bounded by the plan-cache limit (the session of each
// served model version has this cache). With the bounds set to 0 (none), the same loop kept 1,001 plans holding
// 123 MiB and RSS grew by 251 MiB (measured once, so this test can fail); with them, at most 8 plans and 4 MiB stay.
TEST(PlanCacheTest, AThousandDistinctBatchSizesKeepMemoryBoundedByTheCacheLimit) {
  auto model = DenseModel();
  SessionOptions o;
  o.optimize = false;  // three arena intermediates per row
  o.plan_cache_max_plans = 8;
  o.plan_cache_max_bytes = 4 << 20;
  auto s = Session::Create(model, o);
  ASSERT_TRUE(s.ok());
  RunAndCheck(**s, *model, 1);
  const int64_t rss_before = RssBytes();
  ASSERT_GT(rss_before, 0);
  int64_t peak_cached = 0, peak_bytes = 0;
  for (int64_t rows = 2; rows <= 2000; rows += 2) {
    RunAndCheck(**s, *model, rows);
    const RunStats st = (*s)->stats();
    peak_cached = std::max(peak_cached, st.plans_cached);
    if (st.plans_cached > 1) peak_bytes = std::max(peak_bytes, st.plan_cache_bytes);
  }
  const int64_t growth = RssBytes() - rss_before;
  const RunStats st = (*s)->stats();
  EXPECT_EQ(st.plan_cache_misses, 1001);
  EXPECT_LE(peak_cached, 8);
  EXPECT_LE(peak_bytes, int64_t{4} << 20);
  // Results, kernels and allocator caches come and go: the bound is a generous multiple of the 4 MiB limit, and a
  // sixth of the unbounded growth. Under AddressSanitizer freed memory waits in its quarantine, so RSS is not a
  // measure of what the cache holds there (the plan and byte counts above still are).
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(growth, int64_t{40} << 20) << "RSS grew by " << (growth >> 20) << " MiB over 1,000 batch sizes";
#else
  (void)growth;
#endif
}

}  // namespace
}  // namespace strata::graph
