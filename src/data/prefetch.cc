// Dataset::Prefetch: a background thread keeps up to buffer_size elements (and max_bytes bytes) ready. With
// kAutotune the buffer starts at 2 elements and grows, up to 16, each time the consumer finds it empty.
#include <condition_variable>
#include <deque>
#include <thread>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

constexpr int64_t kAutotuneStart = 2;
constexpr int64_t kAutotuneMax = 16;
constexpr size_t kDefaultMaxBytes = size_t{256} << 20;

class PrefetchNode final : public internal::DatasetNode {
 public:
  PrefetchNode(Dataset input, int64_t buffer_size, size_t max_bytes)
      : DatasetNode(StrCat("prefetch(", buffer_size == kAutotune ? "autotune" : StrCat(buffer_size), ")"),
                    {std::move(input)}),
        buffer_size_(buffer_size),
        max_bytes_(max_bytes == 0 ? kDefaultMaxBytes : max_bytes) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const PrefetchNode* node, std::unique_ptr<Iterator> input)
        : node_(node),
          input_(std::move(input)),
          capacity_(node->buffer_size_ == kAutotune ? kAutotuneStart : node->buffer_size_) {}

    ~It() override {
      {
        std::lock_guard<std::mutex> lock(mu_);
        cancelled_ = true;
      }
      space_cv_.notify_all();
      if (producer_.joinable()) producer_.join();
    }

    StatusOr<bool> GetNext(Element* out) override {
      if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
      std::unique_lock<std::mutex> lock(mu_);
      if (buffer_.empty() && !done_ && node_->buffer_size_ == kAutotune && capacity_ < kAutotuneMax) {
        ++capacity_;  // the consumer is waiting: a deeper buffer would have helped
        if (producer_waiting_) space_cv_.notify_one();
      }
      consumer_waiting_ = true;
      ready_cv_.wait(lock, [&] { return !buffer_.empty() || done_; });
      consumer_waiting_ = false;
      if (buffer_.empty()) return false;
      Entry e = std::move(buffer_.front());
      buffer_.pop_front();
      bytes_ -= e.bytes;
      const bool wake = producer_waiting_;
      lock.unlock();
      if (wake) space_cv_.notify_one();
      if (!e.status.ok()) return std::move(e.status);
      *out = std::move(e.element);
      return true;
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      if (producer_.joinable()) return internal::SkipByGetNext(this, n);
      return input_->Skip(n);  // not started: skip upstream directly
    }

   private:
    struct Entry {
      Element element;
      Status status;
      size_t bytes = 0;
    };

    void Produce() {
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          producer_waiting_ = true;
          space_cv_.wait(lock, [&] {
            return cancelled_ ||
                   (static_cast<int64_t>(buffer_.size()) < capacity_ && (buffer_.empty() || bytes_ < node_->max_bytes_));
          });
          producer_waiting_ = false;
          if (cancelled_) return;
        }
        Entry e;
        auto more = input_->GetNext(&e.element);
        bool wake = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (more.ok() && !*more) {
            done_ = true;
          } else {
            if (!more.ok()) e.status = std::move(more).status();
            e.bytes = e.element.ByteSize();
            bytes_ += e.bytes;
            buffer_.push_back(std::move(e));
          }
          wake = consumer_waiting_;
        }
        if (wake) ready_cv_.notify_one();
        if (more.ok() && !*more) return;
      }
    }

    const PrefetchNode* node_;
    std::unique_ptr<Iterator> input_;  // used only by the producer once it runs
    std::thread producer_;
    std::mutex mu_;
    std::condition_variable ready_cv_;  // the consumer waits for an element
    std::condition_variable space_cv_;  // the producer waits for room
    std::deque<Entry> buffer_;
    size_t bytes_ = 0;
    int64_t capacity_;
    bool consumer_waiting_ = false;
    bool producer_waiting_ = false;
    bool done_ = false;
    bool cancelled_ = false;
  };

  int64_t buffer_size_;
  size_t max_bytes_;
};

}  // namespace

Dataset Dataset::Prefetch(int64_t buffer_size, size_t max_bytes) const {
  if (buffer_size <= 0 && buffer_size != kAutotune)
    return internal::ErrorDataset(InvalidArgumentError("prefetch: buffer_size must be > 0 or kAutotune, got ", buffer_size));
  return internal::MakeDataset<PrefetchNode>(*this, buffer_size, max_bytes);
}

}  // namespace strata::data
