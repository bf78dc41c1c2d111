// Dataset::FromTensorSlices: element i holds row i of every tensor (zero-copy views).
#include <algorithm>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class SlicesNode final : public internal::DatasetNode {
 public:
  SlicesNode(io::NamedTensors tensors, std::vector<Metadata> metadata, int64_t rows)
      : DatasetNode(StrCat("from_tensor_slices(", rows, " rows)"), {}),
        tensors_(std::move(tensors)),
        metadata_(std::move(metadata)),
        rows_(rows) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    return std::unique_ptr<Iterator>(new It(this));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(const SlicesNode* node) : node_(node) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (next_ >= node_->rows_) return false;
      out->tensors.clear();
      out->metadata.clear();
      for (const auto& [name, t] : node_->tensors_) out->tensors.emplace_back(name, internal::SliceRow(t, next_));
      if (!node_->metadata_.empty()) out->metadata.push_back(node_->metadata_[static_cast<size_t>(next_)]);
      ++next_;
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      const int64_t k = std::clamp<int64_t>(n, 0, node_->rows_ - next_);
      next_ += k;
      return k;
    }

   private:
    const SlicesNode* node_;
    int64_t next_ = 0;
  };

  io::NamedTensors tensors_;
  std::vector<Metadata> metadata_;
  int64_t rows_;
};

}  // namespace

Dataset Dataset::FromTensorSlices(io::NamedTensors tensors, std::vector<Metadata> metadata) {
  if (tensors.empty()) return internal::ErrorDataset(InvalidArgumentError("from_tensor_slices needs at least one tensor"));
  int64_t rows = -1;
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || t.rank() == 0)
      return internal::ErrorDataset(InvalidArgumentError("from_tensor_slices: tensor '", name,
                                                         "' must have rank >= 1 to be sliced, got ", t.TypeString()));
    if (rows >= 0 && t.dim(0) != rows)
      return internal::ErrorDataset(InvalidArgumentError("from_tensor_slices: tensor '", name, "' has ", t.dim(0),
                                                         " rows, the first tensor has ", rows));
    rows = t.dim(0);
  }
  if (!metadata.empty() && static_cast<int64_t>(metadata.size()) != rows)
    return internal::ErrorDataset(InvalidArgumentError("from_tensor_slices: ", metadata.size(),
                                                       " metadata maps for ", rows, " rows"));
  return internal::MakeDataset<SlicesNode>(std::move(tensors), std::move(metadata), rows);
}

}  // namespace strata::data
