// The batcher: requests are merged into batches, padded to allowed_batch_sizes, split when too large, rejected
// with RESOURCE_EXHAUSTED when the queue is full; each request gets exactly its rows back.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "serve/core/batcher.h"
#include "serve/metrics.h"
#include "serve_test_util.h"

namespace strata::serve {
namespace {

std::shared_ptr<const Servable> Iris() {
  auto session = graph::Session::Create(std::make_shared<graph::Model>(testing::IrisModel(0.5f)));
  STRATA_CHECK_OK(session.status());
  return Servable::FromSession("iris", 1, "/nowhere", std::move(session).value());
}

Tensor Rows(int n, float start) {
  std::vector<float> v(static_cast<size_t>(n) * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i) * 0.25f;
  return Tensor::FromVector<float>(v, Shape{n, 4});
}

std::vector<float> Direct(const Servable& s, const Tensor& x) {
  std::vector<Tensor> out;
  STRATA_CHECK_OK(s.Run({{"features", x}}, {"logits"}, &out));
  return out[0].ToVector<float>();
}

struct Result {
  Status status;
  std::vector<Tensor> outputs;
};

std::future<Result> Submit(BatchScheduler& b, std::shared_ptr<const Servable> s, Tensor x,
                           Deadline deadline = NoDeadline()) {
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  b.Schedule(std::move(s), {{"features", std::move(x)}}, {"logits"}, deadline,
             [promise](Status st, std::vector<Tensor> out) { promise->set_value({std::move(st), std::move(out)}); });
  return future;
}

TEST(BatcherTest, ConcurrentRequestsShareOneBatchAndGetTheirRows) {
  ServingMetrics metrics;
  BatchingOptions o;
  o.max_batch_size = 8;
  o.batch_timeout_micros = 200000;  // long enough for all eight to arrive; the batch runs when full
  o.num_batch_threads = 1;
  BatchScheduler b(o, &metrics);
  auto iris = Iris();
  std::vector<std::future<Result>> futures;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 8; ++i) inputs.push_back(Rows(1, static_cast<float>(i)));
  for (int i = 0; i < 8; ++i) futures.push_back(Submit(b, iris, inputs[i]));
  for (int i = 0; i < 8; ++i) {
    Result r = futures[i].get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].shape(), (Shape{1, 3}));
    EXPECT_EQ(r.outputs[0].ToVector<float>(), Direct(*iris, inputs[i])) << i;
  }
  EXPECT_EQ(metrics.wrapped_run_count.Get({}), 1);
  EXPECT_EQ(metrics.processed_batch_size.Count({}), 1);
  EXPECT_EQ(metrics.processed_batch_size.Sum({}), 8.0);
  EXPECT_EQ(metrics.queuing_latency.Count({"batch_threads"}), 8);
}

TEST(BatcherTest, LargeRequestsAreSplitAndJoined) {
  ServingMetrics metrics;
  BatchingOptions o;
  o.max_batch_size = 4;
  o.num_batch_threads = 2;
  BatchScheduler b(o, &metrics);
  auto iris = Iris();
  Tensor x = Rows(10, 1.0f);
  Result r = Submit(b, iris, x).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.outputs[0].shape(), (Shape{10, 3}));
  EXPECT_EQ(r.outputs[0].ToVector<float>(), Direct(*iris, x));
  EXPECT_EQ(metrics.wrapped_run_count.Get({}), 3);  // 4 + 4 + 2
}

TEST(BatcherTest, WithoutSplittingLargeRequestsAreRejectedAsTfServingDoes) {
  BatchingOptions o;
  o.max_batch_size = 4;
  o.enable_large_batch_splitting = false;
  BatchScheduler b(o, nullptr);
  Result r = Submit(b, Iris(), Rows(5, 0)).get();
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status.message(), "Task size 5 is larger than maximum input batch size 4");
}

TEST(BatcherTest, PaddingToAllowedBatchSizes) {
  ServingMetrics metrics;
  BatchingOptions o;
  o.max_batch_size = 8;
  o.allowed_batch_sizes = {4, 8};
  o.num_batch_threads = 1;
  BatchScheduler b(o, &metrics);
  auto iris = Iris();
  Tensor x = Rows(3, 2.0f);
  Result r = Submit(b, iris, x).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.outputs[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(r.outputs[0].ToVector<float>(), Direct(*iris, x));
  EXPECT_EQ(metrics.processed_batch_size.Sum({}), 4.0);
  EXPECT_EQ(metrics.padding_size.Sum({"4"}), 1.0);
}

// Requests of every size from 1 to max_batch_size run on the allowed sizes' plans only: the plan cache holds at most
// one plan per allowed size however many distinct sizes clients send.
TEST(BatcherTest, PaddedRequestsShareTheAllowedSizesPlans) {
  BatchingOptions o;
  o.max_batch_size = 8;
  o.allowed_batch_sizes = {4, 8};
  o.num_batch_threads = 1;
  o.batch_timeout_micros = 0;
  BatchScheduler b(o, nullptr);
  auto iris = Iris();
  for (int rows = 1; rows <= 8; ++rows) {
    Tensor x = Rows(rows, 0.5f * static_cast<float>(rows));
    Result r = Submit(b, iris, x).get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.outputs[0].ToVector<float>(), Direct(*iris, x)) << rows;
  }
  // Direct() compiled a plan per size (8) besides the batcher's two: count the batcher's through a fresh servable.
  auto fresh = Iris();
  for (int rows = 1; rows <= 8; ++rows) ASSERT_TRUE(Submit(b, fresh, Rows(rows, 1.0f)).get().status.ok());
  EXPECT_EQ(fresh->session().stats().plan_cache_misses, 2);
}

TEST(BatcherTest, FullQueueIsResourceExhausted) {
  BatchingOptions o;
  o.max_batch_size = 8;
  o.batch_timeout_micros = 30000000;  // the open batch waits
  o.max_enqueued_batches = 1;
  o.num_batch_threads = 1;
  auto b = std::make_unique<BatchScheduler>(o, nullptr);
  auto iris = Iris();
  auto first = Submit(*b, iris, Rows(3, 0));   // opens the only batch (3 of 8 rows)
  Result second = Submit(*b, iris, Rows(6, 0)).get();  // does not fit; a second batch is not allowed
  EXPECT_EQ(second.status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(second.status.message().rfind("The batch scheduling queue to which this task was submitted is full", 0), 0u);
  b->Stop();  // queued work fails cleanly on shutdown
  EXPECT_EQ(first.get().status.code(), StatusCode::kUnavailable);
}

TEST(BatcherTest, BadInputsAndExpiredDeadlines) {
  BatchingOptions o;
  o.max_batch_size = 8;
  o.batch_timeout_micros = 20000;
  BatchScheduler b(o, nullptr);
  auto iris = Iris();
  auto promise = std::make_shared<std::promise<Status>>();
  b.Schedule(iris, {{"a", Rows(2, 0)}, {"b", Rows(3, 0)}}, {}, NoDeadline(),
             [promise](Status s, std::vector<Tensor>) { promise->set_value(s); });
  Status s = promise->get_future().get();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("same size in dimension 0"), std::string::npos);
  Result late = Submit(b, iris, Rows(1, 0), std::chrono::steady_clock::now() + std::chrono::microseconds(1)).get();
  EXPECT_EQ(late.status.code(), StatusCode::kDeadlineExceeded);
}

// --adaptive_batch_timeout's rule: the timeout brought forward by one estimated arrival gap; at once when the gap is
// as long as the timeout; the plain timeout without an estimate.
TEST(BatcherTest, AdaptiveBatchDeadline) {
  using std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(AdaptiveBatchDeadline(t0, milliseconds(10), milliseconds(0)), t0 + milliseconds(10));
  EXPECT_EQ(AdaptiveBatchDeadline(t0, milliseconds(10), milliseconds(3)), t0 + milliseconds(7));
  EXPECT_EQ(AdaptiveBatchDeadline(t0, milliseconds(10), milliseconds(10)), t0);
  EXPECT_EQ(AdaptiveBatchDeadline(t0, milliseconds(10), milliseconds(50)), t0);
  EXPECT_EQ(NextArrivalGapEstimate(milliseconds(0), milliseconds(8)), milliseconds(8));
  EXPECT_EQ(NextArrivalGapEstimate(milliseconds(8), milliseconds(4)), milliseconds(7));
  EXPECT_EQ(NextArrivalGapEstimate(milliseconds(8), milliseconds(24)), milliseconds(12));
}

// Requests that arrive more slowly than the timeout: with the fixed timeout, the second of two requests sent 100 ms
// apart (after a 1.5 s pause) waits and shares a batch with the third; with the adaptive timeout, the long gaps seen
// so far make each run on its own at once. (Margins of seconds against 100 ms: no timing is measured.)
TEST(BatcherTest, AdaptiveTimeoutRunsSlowArrivalsAtOnce) {
  for (const bool adaptive : {false, true}) {
    SCOPED_TRACE(adaptive ? "adaptive" : "fixed");
    ServingMetrics metrics;
    BatchingOptions o;
    o.max_batch_size = 8;
    o.batch_timeout_micros = 1000000;
    o.num_batch_threads = 1;
    o.adaptive_batch_timeout = adaptive;
    BatchScheduler b(o, &metrics);
    auto iris = Iris();
    ASSERT_TRUE(Submit(b, iris, Rows(1, 0.f)).get().status.ok());  // no estimate yet: waits its timeout (1 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto second = Submit(b, iris, Rows(1, 1.f));  // 1.5 s after the first
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto third = Submit(b, iris, Rows(1, 2.f));
    ASSERT_TRUE(second.get().status.ok());
    ASSERT_TRUE(third.get().status.ok());
    // Fixed: {1}, {2, 3}. Adaptive: {1}, {2}, {3} (the estimated gap, 1.5 s then about 1.1 s, exceeds the timeout).
    EXPECT_EQ(metrics.wrapped_run_count.Get({}), adaptive ? 3 : 2);
    EXPECT_EQ(metrics.processed_batch_size.Sum({}), 3.0);
  }
}

TEST(BatcherTest, ConcatAndSliceRows) {
  Tensor a = Tensor::FromVector<int64_t>({1, 2}, Shape{1, 2});
  Tensor b = Tensor::FromVector<int64_t>({3, 4, 5, 6}, Shape{2, 2});
  auto c = ConcatRows({&a, &b}, 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 1, 2}));  // last row pads with row 0
  EXPECT_EQ(SliceRows(*c, 1, 3).ToVector<int64_t>(), (std::vector<int64_t>{3, 4, 5, 6}));
  Tensor s1 = Tensor::FromVector<std::string>({"x"}), s2 = Tensor::FromVector<std::string>({"y", "z"});
  EXPECT_EQ(ConcatRows({&s1, &s2}, 3)->ToVector<std::string>(), (std::vector<std::string>{"x", "y", "z"}));
  Tensor f = Tensor::FromVector<float>({1, 2}, Shape{1, 2});
  EXPECT_EQ(ConcatRows({&a, &f}, 2).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::serve
