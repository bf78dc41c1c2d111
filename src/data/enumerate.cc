// Dataset::Enumerate: adds an int64 scalar with the element's position.
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class EnumerateNode final : public internal::DatasetNode {
 public:
  EnumerateNode(Dataset input, int64_t start, std::string name)
      : DatasetNode(StrCat("enumerate(", name, ")"), {std::move(input)}), start_(start), name_(std::move(name)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input)));
  }

 private:
  class It final : public Iterator {
   public:
    It(const EnumerateNode* node, std::unique_ptr<Iterator> input)
        : node_(node), input_(std::move(input)), next_(node->start_) {}
    StatusOr<bool> GetNext(Element* out) override {
      auto more = input_->GetNext(out);
      const int64_t position = next_++;  // a failed element still takes its position
      STRATA_RETURN_IF_ERROR(more.status());
      if (!*more) return false;
      if (out->Find(node_->name_))
        return InvalidArgumentError("enumerate: the element already has a tensor '", node_->name_, "'");
      out->tensors.emplace_back(node_->name_, internal::Int64Scalar(position));
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
      next_ += k;
      return k;
    }

   private:
    const EnumerateNode* node_;
    std::unique_ptr<Iterator> input_;
    int64_t next_;
  };

  int64_t start_;
  std::string name_;
};

}  // namespace

Dataset Dataset::Enumerate(int64_t start, std::string name) const {
  return internal::MakeDataset<EnumerateNode>(*this, start, std::move(name));
}

}  // namespace strata::data
