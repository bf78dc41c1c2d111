// Dataset::Take: at most `count` elements (-1: all).
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class TakeNode final : public internal::DatasetNode {
 public:
  TakeNode(Dataset input, int64_t count) : DatasetNode(StrCat("take(", count, ")"), {std::move(input)}), count_(count) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(std::move(input), count_));
  }

 private:
  class It final : public Iterator {
   public:
    It(std::unique_ptr<Iterator> input, int64_t count) : input_(std::move(input)), left_(count) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (left_ == 0) return false;
      STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
      if (!more) {
        left_ = 0;
        return false;
      }
      if (left_ > 0) --left_;
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      const int64_t want = left_ < 0 ? n : std::min(n, left_);
      STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(want));
      if (left_ > 0) left_ = k < want ? 0 : left_ - k;
      return k;
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t left_;  // -1: unlimited
  };

  int64_t count_;
};

}  // namespace

Dataset Dataset::Take(int64_t count) const {
  if (count < -1) return internal::ErrorDataset(InvalidArgumentError("take: count must be >= -1, got ", count));
  return internal::MakeDataset<TakeNode>(*this, count);
}

}  // namespace strata::data
