// Dataset::Shard: keeps the elements at positions k with k % num_shards == index, skipping the others through the
// input's Skip (cheap for sources).
#include <limits>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class ShardNode final : public internal::DatasetNode {
 public:
  ShardNode(Dataset input, int64_t num_shards, int64_t index)
      : DatasetNode(StrCat("shard(", num_shards, ", ", index, ")"), {std::move(input)}), n_(num_shards), index_(index) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const ShardNode* node, std::unique_ptr<Iterator> input)
        : node_(node), input_(std::move(input)), to_skip_(node->index_) {}

    StatusOr<bool> GetNext(Element* out) override {
      if (done_) return false;
      if (to_skip_ > 0) {
        STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(to_skip_));
        if (k < to_skip_) return Done();
        to_skip_ = 0;
      }
      to_skip_ = node_->n_ - 1;  // the element read now, failed or not, uses up this position
      STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
      if (!more) return Done();
      return true;
    }

    StatusOr<int64_t> Skip(int64_t m) override {
      if (done_ || m <= 0) return 0;
      // Positions up to and including the m-th kept one, saturated (CountBatches skips "everything" with a huge m).
      const int64_t max = std::numeric_limits<int64_t>::max();
      const bool saturated = m - 1 > (max - to_skip_ - 1) / node_->n_;
      const int64_t total = saturated ? max : to_skip_ + 1 + (m - 1) * node_->n_;
      STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(total));
      const int64_t kept = k <= to_skip_ ? 0 : 1 + (k - to_skip_ - 1) / node_->n_;
      if (k < total || saturated) {
        done_ = true;
      } else {
        to_skip_ = node_->n_ - 1;
      }
      return kept;
    }

   private:
    bool Done() {
      done_ = true;
      return false;
    }
    const ShardNode* node_;
    std::unique_ptr<Iterator> input_;
    int64_t to_skip_;
    bool done_ = false;
  };

  int64_t n_, index_;
};

}  // namespace

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  if (num_shards <= 0)
    return internal::ErrorDataset(InvalidArgumentError("shard: num_shards must be > 0, got ", num_shards));
  if (index < 0 || index >= num_shards)
    return internal::ErrorDataset(
        InvalidArgumentError("shard: index must be in [0, ", num_shards, "), got ", index));
  return internal::MakeDataset<ShardNode>(*this, num_shards, index);
}

}  // namespace strata::data
