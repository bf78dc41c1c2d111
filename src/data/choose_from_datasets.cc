// Dataset::ChooseFromDatasets: each int64 scalar of the choice dataset selects the input that supplies the next
// element.
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class ChooseNode final : public internal::DatasetNode {
 public:
  ChooseNode(std::vector<Dataset> inputs, bool stop_on_empty)
      : DatasetNode(StrCat("choose_from_datasets(", inputs.size() - 1, " inputs)"), std::move(inputs)),
        stop_on_empty_(stop_on_empty) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    std::vector<std::unique_ptr<Iterator>> its;  // the last one is the choice dataset
    for (const Dataset& d : inputs()) {
      STRATA_ASSIGN_OR_RETURN(auto it, d.node()->MakeIterator(options));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<Iterator>(new It(this, std::move(its)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const ChooseNode* node, std::vector<std::unique_ptr<Iterator>> its)
        : node_(node), choice_(std::move(its.back())), exhausted_(its.size() - 1, false) {
      its.pop_back();
      inputs_ = std::move(its);
    }

    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        if (done_) return false;
        Element c;
        STRATA_ASSIGN_OR_RETURN(bool more, choice_->GetNext(&c));
        if (!more) {
          done_ = true;
          return false;
        }
        const Tensor* v = c.tensors.empty() ? nullptr : &c.tensors.front().second;
        if (!v || v->dtype() != DType::kInt64 || v->num_elements() != 1)
          return InvalidArgumentError("choose_from_datasets: the choice dataset must yield int64 scalars, got ",
                                      v ? v->TypeString() : std::string("no tensor"));
        const int64_t i = v->data<int64_t>()[0];
        if (i < 0 || i >= static_cast<int64_t>(inputs_.size()))
          return InvalidArgumentError("choose_from_datasets: choice ", i, " is outside [0, ", inputs_.size(), ")");
        if (exhausted_[i]) continue;
        STRATA_ASSIGN_OR_RETURN(more, inputs_[i]->GetNext(out));
        if (more) return true;
        exhausted_[i] = true;
        if (node_->stop_on_empty_) done_ = true;
      }
    }

   private:
    const ChooseNode* node_;
    std::unique_ptr<Iterator> choice_;
    std::vector<std::unique_ptr<Iterator>> inputs_;
    std::vector<bool> exhausted_;
    bool done_ = false;
  };

  bool stop_on_empty_;
};

}  // namespace

Dataset Dataset::ChooseFromDatasets(std::vector<Dataset> datasets, Dataset choice, bool stop_on_empty_dataset) {
  if (datasets.empty()) return internal::ErrorDataset(InvalidArgumentError("choose_from_datasets: no datasets given"));
  datasets.push_back(std::move(choice));
  return internal::MakeDataset<ChooseNode>(std::move(datasets), stop_on_empty_dataset);
}

}  // namespace strata::data
