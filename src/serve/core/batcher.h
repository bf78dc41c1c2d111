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
  bool stop_ = false;
  int64_t queued_ = 0;
  std::vector<std::thread> threads_;
};

// Concatenates same-typed tensors along dimension 0 into a tensor of `rows` rows (rows beyond the inputs repeat the
// first row: padding). Trailing dimensions must agree.
StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts, int64_t rows);
// Rows [begin, end) of `t` as a tensor that shares t's buffer.
Tensor SliceRows(const Tensor& t, int64_t begin, int64_t end);

}  // namespace strata::serve
