// Dataset::Map / MapRandom: applies a function to every element, sequentially or with num_parallel_calls worker
// threads. Deterministic mode emits in input order; otherwise results leave as soon as they are ready. At most
// num_parallel_calls elements are in flight or waiting, so memory is bounded.
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

class ParallelMap final : public Iterator {
 public:
  ParallelMap(const MapNode* node, std::unique_ptr<Iterator> input, int64_t epoch)
      : node_(node), input_(std::move(input)), epoch_(epoch), capacity_(node->parallel()) {}

  ~ParallelMap() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  StatusOr<bool> GetNext(Element* out) override {
    Start();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      auto it = slots_.begin();
      if (node_->options().deterministic) {
        if (it != slots_.end() && !(*it)->done) it = slots_.end();
      } else {
        while (it != slots_.end() && !(*it)->done) ++it;
      }
      if (it != slots_.end()) {
        std::shared_ptr<Slot> slot = std::move(*it);
        slots_.erase(it);
        --reserved_;
        lock.unlock();
        cv_.notify_all();
        if (!slot->status.ok()) return std::move(slot->status);
        *out = std::move(slot->element);
        return true;
      }
      if (slots_.empty() && input_done_) return false;
      cv_.wait(lock);
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
    for (int64_t i = 0; i < capacity_; ++i) workers_.emplace_back([this] { Work(); });
  }

  void Work() {
    for (;;) {
      std::shared_ptr<Slot> slot;
      int64_t index = 0;
      {
        // input_mu_ orders reads: slots enter the queue in input order.
        std::unique_lock<std::mutex> in_lock(input_mu_);
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return cancelled_ || input_done_ || reserved_ < capacity_; });
          if (cancelled_ || input_done_) return;
          ++reserved_;
        }
        slot = std::make_shared<Slot>();
        auto more = input_->GetNext(&slot->element);
        index = next_index_++;
        std::lock_guard<std::mutex> lock(mu_);
        if (more.ok() && !*more) {
          input_done_ = true;
          --reserved_;
          cv_.notify_all();
          return;
        }
        if (!more.ok()) {
          slot->status = std::move(more).status();
          slot->done = true;
        }
        slots_.push_back(slot);
      }
      if (slot->done) {
        cv_.notify_all();
        continue;
      }
      Status s = node_->Apply(slot->element, epoch_, index);
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot->status = std::move(s);
        slot->done = true;
      }
      cv_.notify_all();
    }
  }

  const MapNode* node_;
  std::unique_ptr<Iterator> input_;
  const int64_t epoch_;
  const int64_t capacity_;
  std::vector<std::thread> workers_;
  std::mutex input_mu_;  // guards input_ and next_index_ once workers run
  int64_t next_index_ = 0;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Slot>> slots_;
  int64_t reserved_ = 0;  // slots queued or being read
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
