// Server-side batching with TF Serving's BatchingParameters semantics: one scheduler (one pool of
// num_batch_threads threads) shared by every model, one queue per (servable, outputs, input dtypes and trailing
// shapes), served round-robin. A batch runs when it is full or its oldest task has waited batch_timeout_micros.
// Batches are padded up to the next allowed_batch_sizes entry; requests larger than the execution batch size are
// split and their outputs joined back; a queue already holding max_enqueued_batches batches rejects new work with
// RESOURCE_EXHAUSTED (HTTP 429).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/api/request.h"
#include "serve/core/config.h"
#include "serve/core/servable.h"

namespace strata::serve {

class ServingMetrics;

class BatchScheduler {
 public:
  using Done = std::function<void(Status, std::vector<Tensor>)>;

  BatchScheduler(const BatchingOptions& options, ServingMetrics* metrics);
  ~BatchScheduler();
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Runs `feeds` (graph input names) through `servable` as part of a batch; `done` gets the fetched outputs (graph
  // output names in `fetch`, empty = all) for this request's rows. `done` runs exactly once, on a batch thread or,
  // for requests rejected up front, inline.
  void Schedule(std::shared_ptr<const Servable> servable, NamedTensors feeds, std::vector<std::string> fetch,
                Deadline deadline, Done done);

  // Fails queued work with UNAVAILABLE and stops the threads after the running batches finish.
  void Stop();

  const BatchingOptions& options() const { return options_; }
  int64_t queued_tasks() const;

  struct Task;
  struct Batch;
  struct Queue;

 private:
  void Enqueue(std::shared_ptr<Task> task);
  void Worker();
  std::shared_ptr<Batch> NextBatch(std::unique_lock<std::mutex>& lock);
  void Execute(Queue* queue, Batch& batch);

  BatchingOptions options_;
  ServingMetrics* metrics_;
  int64_t max_task_size_;  // execution batch size: tasks above it are split (or rejected)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Queue>> queues_;
  std::string rr_cursor_;  // round robin over queues
  // --adaptive_batch_timeout: per queue key, the last arrival and the estimated gap between arrivals. Kept while a
  // queue is empty (queues_ drops empty queues); cleared when it holds more than kMaxArrivalKeys keys.
  struct Arrivals {
    std::chrono::steady_clock::time_point last;
    std::chrono::steady_clock::duration gap{0};
  };
  static constexpr size_t kMaxArrivalKeys = 4096;
  std::map<std::string, Arrivals> arrivals_;
  bool stop_ = false;
  int64_t queued_ = 0;
  std::vector<std::thread> threads_;
};

// --adaptive_batch_timeout. When an open batch (its oldest task arrived at `oldest`) runs: at oldest + timeout,
// brought forward by `gap`, the estimated time between arrivals to its queue, since a batch that would wait less
// than one more gap is not expected to grow. So requests that arrive more slowly than the timeout (a lone client,
// a quiet period) run at once instead of waiting it out, while under load (gap far below the timeout) batches form
// as before. A gap of zero or less (no estimate yet: fewer than two arrivals) leaves the plain timeout.
std::chrono::steady_clock::time_point AdaptiveBatchDeadline(std::chrono::steady_clock::time_point oldest,
                                                            std::chrono::steady_clock::duration timeout,
                                                            std::chrono::steady_clock::duration gap);
// The arrival-gap estimate after one more gap: an exponentially weighted mean (weight 1/4 for the new gap); the
// first gap when there is no estimate yet (`estimate` zero or less).
std::chrono::steady_clock::duration NextArrivalGapEstimate(std::chrono::steady_clock::duration estimate,
                                                           std::chrono::steady_clock::duration gap);

// Concatenates same-typed tensors along dimension 0 into a tensor of `rows` rows (rows beyond the inputs repeat the
// first row: padding). Trailing dimensions must agree.
StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts, int64_t rows);
// Rows [begin, end) of `t` as a tensor that shares t's buffer.
Tensor SliceRows(const Tensor& t, int64_t begin, int64_t end);

}  // namespace strata::serve
