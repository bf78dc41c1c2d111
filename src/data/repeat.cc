// Dataset::Repeat: re-creates the input iterator for each repetition, with epoch = base epoch + repetition, so that
// upstream shuffles draw a new order each time. An empty input ends at once instead of spinning.
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class RepeatNode final : public internal::DatasetNode {
 public:
  RepeatNode(Dataset input, int64_t count)
      : DatasetNode(count < 0 ? "repeat" : StrCat("repeat(", count, ")"), {std::move(input)}), count_(count) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    return std::unique_ptr<Iterator>(new It(this, options));
  }

 private:
  class It final : public Iterator {
   public:
    It(const RepeatNode* node, IteratorOptions options) : node_(node), options_(options) {}

    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(bool open, Open());
        if (!open) return false;
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
        if (more) {
          fresh_ = false;
          return true;
        }
        if (Finish()) return false;
      }
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      int64_t done = 0;
      while (done < n) {
        STRATA_ASSIGN_OR_RETURN(bool open, Open());
        if (!open) break;
        STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n - done));
        done += k;
        if (k > 0) fresh_ = false;
        if (done < n && Finish()) break;
      }
      return done;
    }

   private:
    // Makes sure an input iterator exists; false when all repetitions are done.
    StatusOr<bool> Open() {
      if (done_) return false;
      if (input_) return true;
      if (node_->count_ >= 0 && repetition_ >= node_->count_) {
        done_ = true;
        return false;
      }
      IteratorOptions o = options_;
      o.epoch = options_.epoch + repetition_;
      STRATA_ASSIGN_OR_RETURN(input_, node_->MakeInputIterator(0, o));
      fresh_ = true;
      return true;
    }

    // The current repetition ended; returns true when the whole repeat is over (an empty repetition ends it).
    bool Finish() {
      input_.reset();
      ++repetition_;
      if (fresh_) done_ = true;
      return done_;
    }

    const RepeatNode* node_;
    IteratorOptions options_;
    std::unique_ptr<Iterator> input_;
    int64_t repetition_ = 0;
    bool fresh_ = true;  // nothing read yet from the current input iterator
    bool done_ = false;
  };

  int64_t count_;
};

}  // namespace

Dataset Dataset::Repeat(int64_t count) const {
  if (count < -1) return internal::ErrorDataset(InvalidArgumentError("repeat: count must be >= -1, got ", count));
  return internal::MakeDataset<RepeatNode>(*this, count);
}

}  // namespace strata::data
