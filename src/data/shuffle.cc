// Dataset::Shuffle: a buffer of buffer_size elements; each request emits a uniformly chosen one and refills. Nothing
// is emitted until the buffer is full or the input ends (specs/tf-formats.md §4). With a seed the order is a pure
// function of (seed, epoch), or of the seed alone when reshuffle_each_iteration is false.
#include <chrono>

#include "core/logging.h"
#include "core/random.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class ShuffleNode final : public internal::DatasetNode {
 public:
  ShuffleNode(Dataset input, int64_t buffer_size, ShuffleOptions options)
      : DatasetNode(StrCat("shuffle(", buffer_size, options.seed ? StrCat(", seed ", *options.seed) : "", ")"),
                    {std::move(input)}),
        buffer_size_(buffer_size),
        options_(options),
        fixed_seed_(options.seed ? *options.seed : internal::RandomSeed()) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    uint64_t seed = fixed_seed_;  // reshuffle off: the same order every epoch
    if (options_.reshuffle_each_iteration)
      seed = options_.seed ? internal::MixSeeds(*options_.seed, static_cast<uint64_t>(options.epoch)) : internal::RandomSeed();
    return std::unique_ptr<Iterator>(new It(this, std::move(input), seed));
  }

 private:
  class It final : public Iterator {
   public:
    It(const ShuffleNode* node, std::unique_ptr<Iterator> input, uint64_t seed)
        : node_(node), input_(std::move(input)), rng_(seed) {}

    StatusOr<bool> GetNext(Element* out) override {
      STRATA_RETURN_IF_ERROR(Fill());
      if (buffer_.empty()) {
        buffer_.shrink_to_fit();  // release the buffer's memory at the end of the epoch
        return false;
      }
      const size_t i = rng_.Below(buffer_.size());
      *out = std::move(buffer_[i]);
      if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
      return true;
    }

   private:
    Status Fill() {
      const auto start = std::chrono::steady_clock::now();
      auto last_log = start;
      while (!input_done_ && static_cast<int64_t>(buffer_.size()) < node_->buffer_size_) {
        Element e;
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
        if (!more) {
          input_done_ = true;
          break;
        }
        buffer_.push_back(std::move(e));
        if ((buffer_.size() & 1023) == 0) {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_log > std::chrono::seconds(10)) {
            LogInfo("Filling up shuffle buffer (this may take a while): ", buffer_.size(), " of ", node_->buffer_size_);
            last_log = now;
          }
        }
      }
      return Status::OK();
    }

    const ShuffleNode* node_;
    std::unique_ptr<Iterator> input_;
    Rng rng_;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };

  int64_t buffer_size_;
  ShuffleOptions options_;
  uint64_t fixed_seed_;
};

}  // namespace

Dataset Dataset::Shuffle(int64_t buffer_size, ShuffleOptions options) const {
  if (buffer_size <= 0)
    return internal::ErrorDataset(InvalidArgumentError("shuffle: buffer_size must be > 0, got ", buffer_size));
  return internal::MakeDataset<ShuffleNode>(*this, buffer_size, options);
}

}  // namespace strata::data
