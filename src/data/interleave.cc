// Dataset::Interleave: opens fn(element) for input elements in cycle_length slots and takes block_length elements
// from each slot in turn (specs/tf-formats.md §4). The parallel version reads ahead from the open slots and from up
// to cycle_length "future" inputs (opened in input order) in worker threads; with deterministic = true it emits
// exactly the sequential order, otherwise it moves on to a slot that has data when the current one would block.
#include <condition_variable>
#include <deque>
#include <thread>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class InterleaveNode final : public internal::DatasetNode {
 public:
  InterleaveNode(Dataset input, Dataset::InterleaveFn fn, InterleaveOptions options)
      : DatasetNode(StrCat(options.name, "(cycle ", options.cycle_length == kAutotune ? "autotune" : StrCat(options.cycle_length),
                           ", block ", options.block_length,
                           options.num_parallel_calls == 0 ? "" : StrCat(", parallel ", options.num_parallel_calls), ")"),
                    {std::move(input)}),
        fn_(std::move(fn)),
        options_(std::move(options)),
        cycle_(internal::ResolveParallelism(options_.cycle_length)),
        parallel_(options_.num_parallel_calls == 0 ? 0 : internal::ResolveParallelism(options_.num_parallel_calls)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override;

  // The iterator of fn(e), with errors naming the transformation and the element.
  StatusOr<std::unique_ptr<Iterator>> OpenInner(const Element& e, const IteratorOptions& options) const {
    auto ds = fn_(e);
    if (!ds.ok()) return internal::WithElementContext(std::move(ds).status(), options_.name, e);
    auto it = ds->MakeIterator(options);
    if (!it.ok()) return internal::WithElementContext(std::move(it).status(), options_.name, e);
    return std::move(it).value();
  }

  int64_t cycle() const { return cycle_; }
  int64_t block() const { return options_.block_length; }
  int64_t parallel() const { return parallel_; }
  bool deterministic() const { return options_.deterministic; }

 private:
  Dataset::InterleaveFn fn_;
  InterleaveOptions options_;
  int64_t cycle_;
  int64_t parallel_;
};

class SequentialInterleave final : public Iterator {
 public:
  SequentialInterleave(const InterleaveNode* node, std::unique_ptr<Iterator> input, IteratorOptions options)
      : node_(node), input_(std::move(input)), options_(options), slots_(static_cast<size_t>(node->cycle())) {}

  StatusOr<bool> GetNext(Element* out) override {
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(Iterator * slot, Current());
      if (!slot) return false;
      STRATA_ASSIGN_OR_RETURN(bool more, slot->GetNext(out));
      if (!more) {
        Close();
        continue;
      }
      if (++in_block_ >= node_->block()) Advance();
      return true;
    }
  }

  StatusOr<int64_t> Skip(int64_t n) override {
    int64_t done = 0;
    while (done < n) {
      STRATA_ASSIGN_OR_RETURN(Iterator * slot, Current());
      if (!slot) break;
      const int64_t want = std::min(n - done, node_->block() - in_block_);
      STRATA_ASSIGN_OR_RETURN(int64_t k, slot->Skip(want));
      done += k;
      in_block_ += k;
      if (k < want) {
        Close();
      } else if (in_block_ >= node_->block()) {
        Advance();
      }
    }
    return done;
  }

 private:
  // The iterator at the cursor, opening the next input there if the slot is empty; null when everything is done.
  StatusOr<Iterator*> Current() {
    for (int64_t visited = 0;; ++visited) {
      auto& slot = slots_[cursor_];
      if (!slot && !input_done_) {
        Element e;
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
        if (more) {
          STRATA_ASSIGN_OR_RETURN(slot, node_->OpenInner(e, options_));
          ++active_;
        } else {
          input_done_ = true;
        }
      }
      if (slot) return slot.get();
      if (input_done_ && active_ == 0) return static_cast<Iterator*>(nullptr);
      Advance();
    }
  }
  void Close() {
    slots_[cursor_].reset();
    --active_;
    Advance();
  }
  void Advance() {
    cursor_ = (cursor_ + 1) % slots_.size();
    in_block_ = 0;
  }

  const InterleaveNode* node_;
  std::unique_ptr<Iterator> input_;
  IteratorOptions options_;
  std::vector<std::unique_ptr<Iterator>> slots_;
  size_t cursor_ = 0;
  int64_t in_block_ = 0;
  int64_t active_ = 0;
  bool input_done_ = false;
};

class ParallelInterleave final : public Iterator {
 public:
  ParallelInterleave(const InterleaveNode* node, std::unique_ptr<Iterator> input, IteratorOptions options)
      : node_(node),
        input_(std::move(input)),
        options_(options),
        slots_(static_cast<size_t>(node->cycle())),
        per_source_(std::max<int64_t>(node->block(), 2)) {}

  ~ParallelInterleave() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  StatusOr<bool> GetNext(Element* out) override {
    if (workers_.empty())
      for (int64_t i = 0; i < node_->parallel(); ++i) workers_.emplace_back([this] { Work(); });
    for (;;) {
      TopUp();
      std::unique_lock<std::mutex> lock(mu_);
      auto& slot = slots_[cursor_];
      if (!slot) {
        if (!futures_.empty()) {
          slot = std::move(futures_.front());
          futures_.pop_front();
          cv_.notify_all();
        } else if (input_done_) {
          if (std::none_of(slots_.begin(), slots_.end(), [](const auto& s) { return s != nullptr; })) return false;
          Advance();
          continue;
        } else {
          continue;  // TopUp reads more input
        }
      }
      std::shared_ptr<Source> src = slot;
      cv_.wait(lock, [&] {
        if (!src->buffer.empty() || src->end) return true;
        if (!node_->deterministic()) TrySwitch(&src);  // take whatever is ready elsewhere
        return !src->buffer.empty();
      });
      if (src->buffer.empty()) {  // exhausted
        slots_[cursor_].reset();
        Advance();
        continue;
      }
      Entry e = std::move(src->buffer.front());
      src->buffer.pop_front();
      if (e.status.ok() && ++in_block_ >= node_->block()) Advance();
      lock.unlock();
      cv_.notify_all();
      if (!e.status.ok()) return std::move(e.status);
      *out = std::move(e.element);
      return true;
    }
  }

 private:
  struct Entry {
    Element element;
    Status status;
  };
  // One opened fn(element) iterator with its read-ahead buffer.
  struct Source {
    std::unique_ptr<Iterator> it;
    std::deque<Entry> buffer;
    bool end = false;   // `it` is exhausted (the buffer may still hold elements)
    bool busy = false;  // a worker is reading from `it`
  };

  // Opens inputs (in order) until cycle_length futures wait; runs in the consumer thread, outside the lock.
  void TopUp() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (input_done_ || static_cast<int64_t>(futures_.size()) >= node_->cycle()) return;
      }
      auto src = std::make_shared<Source>();
      Element e;
      auto more = input_->GetNext(&e);
      if (more.ok() && !*more) {
        std::lock_guard<std::mutex> lock(mu_);
        input_done_ = true;
        return;
      }
      auto it = more.ok() ? node_->OpenInner(e, options_) : StatusOr<std::unique_ptr<Iterator>>(more.status());
      if (it.ok()) {
        src->it = std::move(it).value();
      } else {  // the error takes this input's place in the order
        src->buffer.push_back(Entry{Element(), std::move(it).status()});
        src->end = true;
      }
      std::lock_guard<std::mutex> lock(mu_);
      futures_.push_back(std::move(src));
      cv_.notify_all();
    }
  }

  // Non-deterministic: if another open slot has data, continue there instead of waiting.
  void TrySwitch(std::shared_ptr<Source>* src) {
    for (size_t k = 1; k < slots_.size(); ++k) {
      const size_t i = (cursor_ + k) % slots_.size();
      if (slots_[i] && !slots_[i]->buffer.empty()) {
        cursor_ = i;
        in_block_ = 0;
        *src = slots_[i];
        return;
      }
    }
  }

  // Worker: reads one element at a time from the source that will be needed soonest.
  void Work() {
    for (;;) {
      std::shared_ptr<Source> src;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return cancelled_ || (src = PickWork()) != nullptr; });
        if (cancelled_) return;
        src->busy = true;
      }
      Entry e;
      auto more = src->it->GetNext(&e.element);
      std::unique_ptr<Iterator> finished;
      {
        std::lock_guard<std::mutex> lock(mu_);
        src->busy = false;
        if (more.ok() && !*more) {
          src->end = true;
          finished = std::move(src->it);  // destroyed outside the lock
        } else {
          if (!more.ok()) e.status = std::move(more).status();
          src->buffer.push_back(std::move(e));
        }
      }
      cv_.notify_all();
    }
  }

  std::shared_ptr<Source> PickWork() {
    auto wants = [&](const std::shared_ptr<Source>& s) {
      return s && !s->busy && !s->end && static_cast<int64_t>(s->buffer.size()) < per_source_;
    };
    for (size_t k = 0; k < slots_.size(); ++k)
      if (wants(slots_[(cursor_ + k) % slots_.size()])) return slots_[(cursor_ + k) % slots_.size()];
    for (const auto& s : futures_)
      if (wants(s)) return s;
    return nullptr;
  }

  void Advance() {
    cursor_ = (cursor_ + 1) % slots_.size();
    in_block_ = 0;
  }

  const InterleaveNode* node_;
  std::unique_ptr<Iterator> input_;  // consumer thread only
  IteratorOptions options_;
  std::vector<std::thread> workers_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Source>> slots_;
  std::deque<std::shared_ptr<Source>> futures_;
  const int64_t per_source_;
  size_t cursor_ = 0;
  int64_t in_block_ = 0;
  bool input_done_ = false;
  bool cancelled_ = false;
};

StatusOr<std::unique_ptr<Iterator>> InterleaveNode::MakeIterator(const IteratorOptions& options) const {
  STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
  if (parallel_ == 0) return std::unique_ptr<Iterator>(new SequentialInterleave(this, std::move(input), options));
  return std::unique_ptr<Iterator>(new ParallelInterleave(this, std::move(input), options));
}

}  // namespace

Dataset Dataset::Interleave(InterleaveFn fn, InterleaveOptions options) const {
  if (!fn) return internal::ErrorDataset(InvalidArgumentError(options.name, ": no function given"));
  if (options.cycle_length <= 0 && options.cycle_length != kAutotune)
    return internal::ErrorDataset(
        InvalidArgumentError(options.name, ": cycle_length must be > 0 or kAutotune, got ", options.cycle_length));
  if (options.block_length <= 0)
    return internal::ErrorDataset(InvalidArgumentError(options.name, ": block_length must be > 0, got ", options.block_length));
  if (options.num_parallel_calls < 0 && options.num_parallel_calls != kAutotune)
    return internal::ErrorDataset(InvalidArgumentError(options.name, ": num_parallel_calls must be >= 0 or kAutotune, got ",
                                                       options.num_parallel_calls));
  return internal::MakeDataset<InterleaveNode>(*this, std::move(fn), std::move(options));
}

Dataset Dataset::FlatMap(InterleaveFn fn) const {
  InterleaveOptions o;
  o.cycle_length = 1;
  o.name = "flat_map";
  return Interleave(std::move(fn), std::move(o));
}

}  // namespace strata::data
