// Dataset::Range and Dataset::FromGenerator: sources that need no files.
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class RangeNode final : public internal::DatasetNode {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step)
      : DatasetNode(StrCat("range(", start, ", ", stop, ", ", step, ")"), {}), start_(start), stop_(stop), step_(step) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    return std::unique_ptr<Iterator>(new It(this));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(const RangeNode* node) : node_(node), next_(node->start_) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (!InRange()) return false;
      out->tensors.clear();
      out->metadata.clear();
      out->tensors.emplace_back("value", internal::Int64Scalar(next_));
      next_ += node_->step_;
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      int64_t k = 0;
      while (k < n && InRange()) {  // bounded by n; no overflow arithmetic on the range
        next_ += node_->step_;
        ++k;
      }
      return k;
    }

   private:
    bool InRange() const { return node_->step_ > 0 ? next_ < node_->stop_ : next_ > node_->stop_; }
    const RangeNode* node_;
    int64_t next_;
  };

  int64_t start_, stop_, step_;
};

class GeneratorNode final : public internal::DatasetNode {
 public:
  explicit GeneratorNode(std::function<Dataset::GeneratorFn()> factory)
      : DatasetNode("from_generator", {}), factory_(std::move(factory)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    return std::unique_ptr<Iterator>(new It(factory_()));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(Dataset::GeneratorFn gen) : gen_(std::move(gen)) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (done_) return false;
      out->tensors.clear();
      out->metadata.clear();
      auto more = gen_(out);
      if (more.ok() && !*more) done_ = true;
      if (!more.ok()) return std::move(more).status().WithContext("from_generator");
      return more;
    }

   private:
    Dataset::GeneratorFn gen_;
    bool done_ = false;
  };

  std::function<Dataset::GeneratorFn()> factory_;
};

}  // namespace

Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return internal::ErrorDataset(InvalidArgumentError("range: step must not be 0"));
  return internal::MakeDataset<RangeNode>(start, stop, step);
}

Dataset Dataset::FromGenerator(std::function<GeneratorFn()> factory) {
  if (!factory) return internal::ErrorDataset(InvalidArgumentError("from_generator: no factory given"));
  return internal::MakeDataset<GeneratorNode>(std::move(factory));
}

}  // namespace strata::data
