// Dataset::Zip: the i-th elements of every input side by side; ends with the shortest input. Tensor names must
// differ; metadata rows are merged (the first input wins on equal keys).
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class ZipNode final : public internal::DatasetNode {
 public:
  explicit ZipNode(std::vector<Dataset> inputs) : DatasetNode("zip", std::move(inputs)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    std::vector<std::unique_ptr<Iterator>> its;
    for (const Dataset& d : inputs()) {
      STRATA_ASSIGN_OR_RETURN(auto it, d.node()->MakeIterator(options));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<Iterator>(new It(std::move(its)));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(std::vector<std::unique_ptr<Iterator>> inputs) : inputs_(std::move(inputs)) {}

    StatusOr<bool> GetNext(Element* out) override {
      if (done_) return false;
      out->tensors.clear();
      out->metadata.clear();
      Status first_error;
      for (size_t i = 0; i < inputs_.size(); ++i) {
        Element e;
        auto more = inputs_[i]->GetNext(&e);  // every input advances, even after an error, to stay aligned
        if (!more.ok()) {
          if (first_error.ok()) first_error = std::move(more).status().WithContext(StrCat("zip input ", i));
          continue;
        }
        if (!*more) done_ = true;
        if (done_ || !first_error.ok()) continue;
        STRATA_RETURN_IF_ERROR(Merge(std::move(e), i, out));
      }
      if (!first_error.ok()) return first_error;
      return !done_;
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      int64_t least = n;
      for (auto& in : inputs_) {
        STRATA_ASSIGN_OR_RETURN(int64_t k, in->Skip(n));
        least = std::min(least, k);
      }
      if (least < n) done_ = true;
      return least;
    }

   private:
    static Status Merge(Element e, size_t input, Element* out) {
      for (auto& [name, t] : e.tensors) {
        if (out->Find(name))
          return InvalidArgumentError("zip: tensor '", name, "' of input ", input,
                                      " clashes with an earlier input; rename it with a Map first");
        out->tensors.emplace_back(std::move(name), std::move(t));
      }
      if (out->metadata.empty()) {
        out->metadata = std::move(e.metadata);
      } else if (out->metadata.size() == e.metadata.size()) {
        for (size_t r = 0; r < e.metadata.size(); ++r) out->metadata[r].merge(e.metadata[r]);
      }
      return Status::OK();
    }

    std::vector<std::unique_ptr<Iterator>> inputs_;
    bool done_ = false;
  };
};

}  // namespace

Dataset Dataset::Zip(std::vector<Dataset> datasets) {
  if (datasets.empty()) return internal::ErrorDataset(InvalidArgumentError("zip: no datasets given"));
  return internal::MakeDataset<ZipNode>(std::move(datasets));
}

}  // namespace strata::data
