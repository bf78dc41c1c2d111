// Dataset::Filter: keeps the elements for which the predicate returns true, in order.
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class FilterNode final : public internal::DatasetNode {
 public:
  FilterNode(Dataset input, Predicate pred, std::string name)
      : DatasetNode(name, {std::move(input)}), pred_(std::move(pred)), name_(std::move(name)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const FilterNode* node, std::unique_ptr<Iterator> input) : node_(node), input_(std::move(input)) {}
    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
        if (!more) return false;
        auto keep = node_->pred_(*out);
        if (!keep.ok()) return internal::WithElementContext(std::move(keep).status(), node_->name_, *out);
        if (*keep) return true;
      }
    }

   private:
    const FilterNode* node_;
    std::unique_ptr<Iterator> input_;
  };

  Predicate pred_;
  std::string name_;
};

}  // namespace

Dataset Dataset::Filter(Predicate pred, std::string name) const {
  if (!pred) return internal::ErrorDataset(InvalidArgumentError(name, ": no predicate given"));
  return internal::MakeDataset<FilterNode>(*this, std::move(pred), std::move(name));
}

}  // namespace strata::data
