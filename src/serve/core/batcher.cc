#include "serve/core/batcher.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/logging.h"
#include "serve/metrics.h"

namespace strata::serve {

using Clock = std::chrono::steady_clock;

struct BatchScheduler::Task {
  std::shared_ptr<const Servable> servable;
  NamedTensors feeds;  // sorted by name
  std::vector<std::string> fetch;
  int64_t size = 0;
  Deadline deadline = NoDeadline();
  Clock::time_point enqueued;
  Done done;
};

struct BatchScheduler::Batch {
  std::vector<std::shared_ptr<Task>> tasks;
  int64_t size = 0;
  Clock::time_point oldest;
  bool closed = false;
};

struct BatchScheduler::Queue {
  std::deque<std::shared_ptr<Batch>> batches;
};

// ---- tensor helpers ----

StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts, int64_t rows) {
  STRATA_CHECK(!parts.empty(), "ConcatRows of nothing");
  const Tensor& first = *parts[0];
  Shape shape = first.shape();
  const int64_t row_elems = shape.Product(1, shape.rank());
  for (const Tensor* p : parts) {
    if (p->dtype() != first.dtype() || p->rank() != first.rank() || p->shape().Product(1, p->rank()) != row_elems)
      return InvalidArgumentError("cannot batch ", p->TypeString(), " with ", first.TypeString());
  }
  shape[0] = rows;
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(first.dtype(), shape));
  if (first.dtype() == DType::kString) {
    std::string* dst = out.data<std::string>();
    int64_t r = 0;
    for (const Tensor* p : parts) {
      const std::string* src = p->data<std::string>();
      for (int64_t i = 0; i < p->num_elements(); ++i) dst[r * row_elems + i] = src[i];
      r += p->dim(0);
    }
    for (; r < rows; ++r)
      for (int64_t i = 0; i < row_elems; ++i) dst[r * row_elems + i] = dst[i];
    return out;
  }
  const size_t row_bytes = static_cast<size_t>(row_elems) * DTypeSize(first.dtype());
  char* dst = static_cast<char*>(out.raw_data());
  int64_t r = 0;
  for (const Tensor* p : parts) {
    if (p->byte_size()) std::memcpy(dst + r * row_bytes, p->raw_data(), p->byte_size());
    r += p->dim(0);
  }
  for (; r < rows && r > 0; ++r) std::memcpy(dst + r * row_bytes, dst, row_bytes);
  return out;
}

Tensor SliceRows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  const int64_t row_elems = s.Product(1, s.rank());
  s[0] = end - begin;
  char* base = static_cast<char*>(const_cast<void*>(t.raw_data()));
  return Tensor::Wrap(t.dtype(), s, base + begin * row_elems * DTypeSize(t.dtype()), t.buffer());
}

// ---- adaptive batch timeout ----

Clock::time_point AdaptiveBatchDeadline(Clock::time_point oldest, Clock::duration timeout, Clock::duration gap) {
  if (gap <= Clock::duration::zero()) return oldest + timeout;
  return gap >= timeout ? oldest : oldest + (timeout - gap);
}

Clock::duration NextArrivalGapEstimate(Clock::duration estimate, Clock::duration gap) {
  if (estimate <= Clock::duration::zero()) return gap;
  return estimate + (gap - estimate) / 4;
}

// ---- scheduler ----

BatchScheduler::BatchScheduler(const BatchingOptions& options, ServingMetrics* metrics)
    : options_(options), metrics_(metrics) {
  max_task_size_ = options_.enable_large_batch_splitting && options_.max_execution_batch_size > 0
                       ? options_.max_execution_batch_size
                       : options_.max_batch_size;
  int threads = static_cast<int>(options_.num_batch_threads);
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Worker(); });
}

BatchScheduler::~BatchScheduler() { Stop(); }

void BatchScheduler::Stop() {
  std::vector<std::shared_ptr<Task>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    for (auto& [key, q] : queues_)
      for (auto& b : q->batches)
        for (auto& t : b->tasks) dropped.push_back(t);
    queues_.clear();
    queued_ = 0;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  for (auto& t : dropped) t->done(UnavailableError("the server is shutting down"), {});
}

int64_t BatchScheduler::queued_tasks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

namespace {

// Joins the outputs of the pieces of a split request.
struct SplitJoin {
  std::mutex mu;
  std::vector<std::vector<Tensor>> parts;
  Status error;
  int remaining = 0;
  BatchScheduler::Done done;
};

}  // namespace

void BatchScheduler::Schedule(std::shared_ptr<const Servable> servable, NamedTensors feeds,
                              std::vector<std::string> fetch, Deadline deadline, Done done) {
  std::sort(feeds.begin(), feeds.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t size = -1;
  for (const auto& [name, t] : feeds) {
    if (t.rank() == 0) {
      size = -2;
      break;
    }
    if (size >= 0 && t.dim(0) != size)
      return done(InvalidArgumentError("batching needs every input to have the same size in dimension 0; input '",
                                       name, "' has ", t.dim(0), " rows, another input has ", size),
                  {});
    size = t.dim(0);
  }
  if (size <= 0) {  // scalars, empty batches or no inputs: nothing to batch, run as is
    std::vector<Tensor> outs;
    Status s = servable->Run(feeds, fetch, &outs);
    return done(std::move(s), std::move(outs));
  }
  if (metrics_) metrics_->input_batch_size.Observe({}, static_cast<double>(size));
  if (size <= max_task_size_) {
    auto task = std::make_shared<Task>();
    task->servable = std::move(servable);
    task->feeds = std::move(feeds);
    task->fetch = std::move(fetch);
    task->size = size;
    task->deadline = deadline;
    task->done = std::move(done);
    return Enqueue(std::move(task));
  }
  if (!options_.enable_large_batch_splitting)
    return done(InvalidArgumentError("Task size ", size, " is larger than maximum input batch size ",
                                     options_.max_batch_size),
                {});
  // Split into pieces of at most max_task_size_ rows; join the outputs in order.
  auto join = std::make_shared<SplitJoin>();
  const int pieces = static_cast<int>((size + max_task_size_ - 1) / max_task_size_);
  join->parts.resize(pieces);
  join->remaining = pieces;
  join->done = std::move(done);
  for (int p = 0; p < pieces; ++p) {
    const int64_t begin = p * max_task_size_, end = std::min(size, begin + max_task_size_);
    auto task = std::make_shared<Task>();
    task->servable = servable;
    for (const auto& [name, t] : feeds) task->feeds.emplace_back(name, SliceRows(t, begin, end));
    task->fetch = fetch;
    task->size = end - begin;
    task->deadline = deadline;
    task->done = [join, p](Status s, std::vector<Tensor> outs) {
      std::unique_lock<std::mutex> lock(join->mu);
      if (!s.ok() && join->error.ok()) join->error = s;
      join->parts[p] = std::move(outs);
      if (--join->remaining > 0) return;
      lock.unlock();
      if (!join->error.ok()) return join->done(join->error, {});
      std::vector<Tensor> joined;
      for (size_t o = 0; o < join->parts[0].size(); ++o) {
        std::vector<const Tensor*> cols;
        int64_t rows = 0;
        for (auto& part : join->parts) {
          cols.push_back(&part[o]);
          rows += part[o].rank() ? part[o].dim(0) : 0;
        }
        auto t = ConcatRows(cols, rows);
        if (!t.ok()) return join->done(t.status(), {});
        joined.push_back(std::move(t).value());
      }
      join->done(Status::OK(), std::move(joined));
    };
    Enqueue(std::move(task));
  }
}

void BatchScheduler::Enqueue(std::shared_ptr<Task> task) {
  std::string key = StrCat(reinterpret_cast<uintptr_t>(task->servable.get()), "|", StrJoin(task->fetch, ","));
  for (const auto& [name, t] : task->feeds) {
    key += StrCat("|", name, ":", static_cast<int>(t.dtype()), ":");
    for (int i = 1; i < t.rank(); ++i) key += StrCat(t.dim(i), ",");
  }
  task->enqueued = Clock::now();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) {
      lock.unlock();
      return task->done(UnavailableError("the server is shutting down"), {});
    }
    if (options_.adaptive_batch_timeout) {
      if (arrivals_.size() > kMaxArrivalKeys) arrivals_.clear();
      auto [a, first] = arrivals_.try_emplace(key);
      if (!first) a->second.gap = NextArrivalGapEstimate(a->second.gap, task->enqueued - a->second.last);
      a->second.last = task->enqueued;
    }
    auto& q = queues_[key];
    if (!q) q = std::make_unique<Queue>();
    std::shared_ptr<Batch> batch;
    if (!q->batches.empty() && !q->batches.back()->closed && q->batches.back()->size + task->size <= max_task_size_) {
      batch = q->batches.back();
    } else {
      // As TF's shared batch scheduler: a task that does not fit needs a new batch, and a queue that already holds
      // max_enqueued_batches refuses it (leaving the open batch open).
      if (static_cast<int64_t>(q->batches.size()) >= options_.max_enqueued_batches) {
        if (q->batches.empty()) queues_.erase(key);
        lock.unlock();
        return task->done(ResourceExhaustedError("The batch scheduling queue to which this task was submitted is full "
                                                 "(max_enqueued_batches ", options_.max_enqueued_batches,
                                                 " of up to ", max_task_size_, " rows each)"),
                          {});
      }
      if (!q->batches.empty()) q->batches.back()->closed = true;
      batch = std::make_shared<Batch>();
      batch->oldest = task->enqueued;
      q->batches.push_back(batch);
    }
    batch->size += task->size;
    batch->tasks.push_back(std::move(task));
    if (batch->size >= max_task_size_) batch->closed = true;
    ++queued_;
  }
  cv_.notify_one();
}

std::shared_ptr<BatchScheduler::Batch> BatchScheduler::NextBatch(std::unique_lock<std::mutex>& lock) {
  const auto timeout = std::chrono::microseconds(options_.batch_timeout_micros);
  while (!stop_) {
    const auto now = Clock::now();
    Clock::time_point wake = Clock::time_point::max();
    // Round robin: start after the queue served last.
    auto it = queues_.upper_bound(rr_cursor_);
    for (size_t n = 0; n < queues_.size(); ++n, ++it) {
      if (it == queues_.end()) it = queues_.begin();
      Queue& q = *it->second;
      if (q.batches.empty()) continue;
      std::shared_ptr<Batch> front = q.batches.front();
      Clock::time_point due = front->oldest + timeout;
      if (options_.adaptive_batch_timeout) {
        auto a = arrivals_.find(it->first);
        if (a != arrivals_.end()) due = AdaptiveBatchDeadline(front->oldest, timeout, a->second.gap);
      }
      if (front->closed || now >= due) {
        q.batches.pop_front();
        rr_cursor_ = it->first;
        queued_ -= static_cast<int64_t>(front->tasks.size());
        if (q.batches.empty()) queues_.erase(it);
        return front;
      }
      wake = std::min(wake, due);
    }
    if (wake == Clock::time_point::max())
      cv_.wait(lock);
    else
      cv_.wait_until(lock, wake);
  }
  return nullptr;
}

void BatchScheduler::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::shared_ptr<Batch> batch = NextBatch(lock);
    if (!batch) return;
    lock.unlock();
    Execute(nullptr, *batch);
    lock.lock();
  }
}

void BatchScheduler::Execute(Queue*, Batch& batch) {
  const auto now = Clock::now();
  std::vector<std::shared_ptr<Task>> tasks;
  int64_t rows = 0;
  for (auto& t : batch.tasks) {
    if (t->deadline != NoDeadline() && now >= t->deadline) {
      t->done(DeadlineExceededError("the request's deadline passed while it waited in the batching queue"), {});
      continue;
    }
    if (metrics_)
      metrics_->queuing_latency.Observe(
          {options_.thread_pool_name},
          static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(now - t->enqueued).count()));
    rows += t->size;
    tasks.push_back(t);
  }
  if (tasks.empty()) return;
  int64_t padded = rows;
  for (int64_t allowed : options_.allowed_batch_sizes) {
    if (allowed >= rows) {
      padded = allowed;
      break;
    }
  }
  const Task& first = *tasks[0];
  auto fail_all = [&](const Status& s) {
    for (auto& t : tasks) t->done(s, {});
  };
  NamedTensors feeds;
  for (size_t i = 0; i < first.feeds.size(); ++i) {
    std::vector<const Tensor*> parts;
    for (auto& t : tasks) parts.push_back(&t->feeds[i].second);
    auto joined = parts.size() == 1 && padded == rows ? StatusOr<Tensor>(*parts[0]) : ConcatRows(parts, padded);
    if (!joined.ok()) return fail_all(joined.status());
    feeds.emplace_back(first.feeds[i].first, std::move(joined).value());
  }
  if (metrics_) {
    metrics_->processed_batch_size.Observe({}, static_cast<double>(padded));
    metrics_->padding_size.Observe({std::to_string(padded)}, static_cast<double>(padded - rows));
    metrics_->wrapped_run_count.Add({});
  }
  std::vector<Tensor> outs;
  Status s = first.servable->Run(feeds, first.fetch, &outs);
  if (!s.ok()) return fail_all(s);
  for (size_t o = 0; o < outs.size(); ++o) {
    if (outs[o].rank() == 0 || outs[o].dim(0) != padded) {
      const std::string name = o < first.fetch.size() ? first.fetch[o] : StrCat("#", o);
      return fail_all(InvalidArgumentError(
          "batching needs every output to have the batch size in dimension 0, but output '", name, "' of model '",
          first.servable->name(), "' is ", outs[o].TypeString(), " for a batch of ", padded,
          " rows; disable batching for this model or send single requests"));
    }
  }
  int64_t offset = 0;
  for (auto& t : tasks) {
    std::vector<Tensor> mine;
    mine.reserve(outs.size());
    for (const Tensor& out : outs) mine.push_back(tasks.size() == 1 && padded == rows ? out
                                                                                     : SliceRows(out, offset, offset + t->size));
    offset += t->size;
    t->done(Status::OK(), std::move(mine));
  }
}

}  // namespace strata::serve
