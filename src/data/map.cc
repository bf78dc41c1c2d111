// Dataset::Map / MapRandom: applies a function to every element, sequentially or with num_parallel_calls worker
// threads. Deterministic mode emits in input order; otherwise results leave as soon as they are ready. At most
// 2 x num_parallel_calls elements are in flight or waiting, so memory is bounded.
#include <condition_variable>
#include <deque>
#include <thread>

#include "core/random.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class MapNode final : public internal::DatasetNode {
 public:
  MapNode(Dataset input, MapFn fn, RandomMapFn random_fn, MapOptions options)
      : DatasetNode(Describe(options), {std::move(input)}),
        fn_(std::move(fn)),
        random_fn_(std::move(random_fn)),
        options_(std::move(options)),
        seed_(options_.seed ? *options_.seed : internal::RandomSeed()),
        parallel_(internal::ResolveParallelism(options_.num_parallel_calls)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override;

  // Applies the function to element number `index` of epoch `epoch`, adding context to its error.
  Status Apply(Element& e, int64_t epoch, int64_t index) const {
    Status s;
    if (random_fn_) {
      Rng rng(internal::MixSeeds(seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)));
      s = random_fn_(e, rng);
    } else {
      s = fn_(e);
    }
    return internal::WithElementContext(std::move(s), options_.name, e);
  }

  const MapOptions& options() const { return options_; }
  int64_t parallel() const { return parallel_; }

 private:
  static std::string Describe(const MapOptions& o) {
    if (o.num_parallel_calls == 0) return o.name;
    return StrCat(o.name, "(parallel ", o.num_parallel_calls == kAutotune ? "autotune" : StrCat(o.num_parallel_calls),
                  o.deterministic ? "" : ", nondeterministic", ")");
  }

  MapFn fn_;
  RandomMapFn random_fn_;
  MapOptions options_;
  uint64_t seed_;
  int64_t parallel_;
};

class SequentialMap final : public Iterator {
 public:
  SequentialMap(const MapNode* node, std::unique_ptr<Iterator> input, int64_t epoch)
      : node_(node), input_(std::move(input)), epoch_(epoch) {}

  StatusOr<bool> GetNext(Element* out) override {
    STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
    if (!more) return false;
    STRATA_RETURN_IF_ERROR(node_->Apply(*out, epoch_, index_++));
    return true;
  }

  StatusOr<int64_t> Skip(int64_t n) override {
    STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    index_ += k;
    return k;
  }

 private:
  const MapNode* node_;
  std::unique_ptr<Iterator> input_;
  int64_t epoch_;
  int64_t index_ = 0;
};

// num_parallel_calls workers take input elements in order (one at a time, under input_mu_), apply the function
// outside any lock and mark their slot done. At most 2 x num_parallel_calls slots (running or finished) exist.
// Each side is woken only when the other side waits for it, which keeps the hand-off cheap on small elements.
class ParallelMap final : public Iterator {
 public:
  ParallelMap(const MapNode* node, std::unique_ptr<Iterator> input, int64_t epoch)
      : node_(node),
        input_(std::move(input)),
        epoch_(epoch),
        workers_wanted_(node->parallel()),
        capacity_(2 * node->parallel()),
        deterministic_(node->options().deterministic) {}

  ~ParallelMap() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    space_cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  StatusOr<bool> GetNext(Element* out) override {
    Start();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      auto it = slots_.begin();
      if (deterministic_) {
        if (it != slots_.end() && !(*it)->done) it = slots_.end();
      } else {
        while (it != slots_.end() && !(*it)->done) ++it;
      }
      if (it != slots_.end()) {
        std::shared_ptr<Slot> slot = std::move(*it);
        slots_.erase(it);
        --reserved_;
        const bool wake = waiting_for_space_;
        lock.unlock();
        if (wake) space_cv_.notify_one();
        if (!slot->status.ok()) return std::move(slot->status);
        *out = std::move(slot->element);
        return true;
      }
      if (slots_.empty() && input_done_) return false;
      consumer_waiting_ = true;
      ready_cv_.wait(lock);
      consumer_waiting_ = false;
    }
  }

  StatusOr<int64_t> Skip(int64_t n) override {
    if (!workers_.empty()) return internal::SkipByGetNext(this, n);
    STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    next_index_ += k;
    return k;
  }

 private:
  struct Slot {
    Element element;
    Status status;
    bool done = false;
  };

  void Start() {
    if (!workers_.empty()) return;
    for (int64_t i = 0; i < workers_wanted_; ++i) workers_.emplace_back([this] { Work(); });
  }

  // Under mu_: whether the consumer is waiting for `slot` (the front in deterministic mode, any slot otherwise).
  bool ConsumerWants(const Slot* slot) const {
    return consumer_waiting_ && (!deterministic_ || (!slots_.empty() && slots_.front().get() == slot));
  }

  void Work() {
    for (;;) {
      std::shared_ptr<Slot> slot;
      int64_t index = 0;
      {
        // input_mu_ orders reads: slots enter the queue in input order. Only its holder waits for space.
        std::unique_lock<std::mutex> in_lock(input_mu_);
        {
          std::unique_lock<std::mutex> lock(mu_);
          waiting_for_space_ = true;
          space_cv_.wait(lock, [&] { return cancelled_ || input_done_ || reserved_ < capacity_; });
          waiting_for_space_ = false;
          if (cancelled_ || input_done_) return;
          ++reserved_;
        }
        slot = std::make_shared<Slot>();
        auto more = input_->GetNext(&slot->element);
        index = next_index_++;
        bool wake = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (more.ok() && !*more) {
            input_done_ = true;
            --reserved_;
            wake = consumer_waiting_;
          } else {
            if (!more.ok()) {
              slot->status = std::move(more).status();
              slot->done = true;
            }
            slots_.push_back(slot);
            wake = slot->done && ConsumerWants(slot.get());
          }
        }
        if (wake) ready_cv_.notify_one();
        if (more.ok() && !*more) return;
      }
      if (slot->done) continue;
      Status s = node_->Apply(slot->element, epoch_, index);
      bool wake = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot->status = std::move(s);
        slot->done = true;
        wake = ConsumerWants(slot.get());
      }
      if (wake) ready_cv_.notify_one();
    }
  }

  const MapNode* node_;
  std::unique_ptr<Iterator> input_;
  const int64_t epoch_;
  const int64_t workers_wanted_;
  const int64_t capacity_;
  const bool deterministic_;
  std::vector<std::thread> workers_;
  std::mutex input_mu_;  // guards input_ and next_index_ once workers run
  int64_t next_index_ = 0;
  std::mutex mu_;  // guards everything below
  std::condition_variable ready_cv_;  // the consumer waits here for a finished slot
  std::condition_variable space_cv_;  // the worker holding input_mu_ waits here for a free slot
  std::deque<std::shared_ptr<Slot>> slots_;
  int64_t reserved_ = 0;  // slots queued or being read
  bool consumer_waiting_ = false;
  bool waiting_for_space_ = false;
  bool input_done_ = false;
  bool cancelled_ = false;
};

StatusOr<std::unique_ptr<Iterator>> MapNode::MakeIterator(const IteratorOptions& options) const {
  STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
  if (options_.num_parallel_calls == 0)
    return std::unique_ptr<Iterator>(new SequentialMap(this, std::move(input), options.epoch));
  return std::unique_ptr<Iterator>(new ParallelMap(this, std::move(input), options.epoch));
}

Dataset MakeMap(const Dataset& input, MapFn fn, RandomMapFn random_fn, MapOptions options) {
  if (!fn && !random_fn) return internal::ErrorDataset(InvalidArgumentError(options.name, ": no function given"));
  if (options.num_parallel_calls < 0 && options.num_parallel_calls != kAutotune)
    return internal::ErrorDataset(InvalidArgumentError(options.name, ": num_parallel_calls must be >= 0 or kAutotune, got ",
                                                       options.num_parallel_calls));
  return internal::MakeDataset<MapNode>(input, std::move(fn), std::move(random_fn), std::move(options));
}

}  // namespace

Dataset Dataset::Map(MapFn fn, MapOptions options) const { return MakeMap(*this, std::move(fn), nullptr, std::move(options)); }

Dataset Dataset::MapRandom(RandomMapFn fn, MapOptions options) const {
  return MakeMap(*this, nullptr, std::move(fn), std::move(options));
}

}  // namespace strata::data
