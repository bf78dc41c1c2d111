// Dataset::Skip: drops the first `count` elements (-1: all of them) through the input's cheap Skip.
#include <limits>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class SkipNode final : public internal::DatasetNode {
 public:
  SkipNode(Dataset input, int64_t count) : DatasetNode(StrCat("skip(", count, ")"), {std::move(input)}), count_(count) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(std::move(input), count_));
  }

 private:
  class It final : public Iterator {
   public:
    It(std::unique_ptr<Iterator> input, int64_t count)
        : input_(std::move(input)), to_skip_(count < 0 ? std::numeric_limits<int64_t>::max() : count) {}
    StatusOr<bool> GetNext(Element* out) override {
      STRATA_RETURN_IF_ERROR(SkipPrefix());
      return input_->GetNext(out);
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      STRATA_RETURN_IF_ERROR(SkipPrefix());
      return input_->Skip(n);
    }

   private:
    Status SkipPrefix() {
      while (to_skip_ > 0) {
        STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(to_skip_));
        if (k == 0) {
          to_skip_ = 0;
          break;
        }
        to_skip_ -= k;
      }
      return Status::OK();
    }
    std::unique_ptr<Iterator> input_;
    int64_t to_skip_;
  };

  int64_t count_;
};

}  // namespace

Dataset Dataset::Skip(int64_t count) const {
  if (count < -1) return internal::ErrorDataset(InvalidArgumentError("skip: count must be >= -1, got ", count));
  return internal::MakeDataset<SkipNode>(*this, count);
}

}  // namespace strata::data
