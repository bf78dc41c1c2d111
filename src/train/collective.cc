// Collective's default overlapped reduction (none: the tensors are reduced together once all are there), its
// one-worker AllReduceSum, and its AllReduceSum of tensors (one AllReduceSum per tensor).
#include "strata/train.h"

namespace strata::train {
namespace {

class CollectThenReduce final : public PendingAllReduce {
 public:
  CollectThenReduce(Collective* c, const std::vector<Shape>& shapes, std::string_view what, bool sum)
      : collective_(c), shapes_(shapes), what_(what), sum_(sum), values_(shapes.size()) {}

  Status Add(size_t i, const Tensor& value) override {
    if (i >= shapes_.size())
      return InvalidArgumentError(what_, ": tensor ", i, " added, but only ", shapes_.size(), " were announced");
    if (value.dtype() != DType::kFloat32 || value.shape() != shapes_[i])
      return InvalidArgumentError(what_, ": tensor ", i, " must be float32", shapes_[i].ToString(), ", got ",
                                  value.TypeString());
    if (!values_[i].defined()) values_[i] = value.Clone();
    return Status::OK();
  }
  Status Test() override { return Status::OK(); }
  StatusOr<std::vector<Tensor>> Wait() override {
    std::vector<Tensor*> all;
    for (size_t i = 0; i < values_.size(); ++i) {
      if (!values_[i].defined()) return FailedPreconditionError(what_, ": tensor ", i, " was never added");
      all.push_back(&values_[i]);
    }
    STRATA_RETURN_IF_ERROR(sum_ ? collective_->AllReduceSum(all, what_) : collective_->AllReduceMean(all, what_));
    return std::move(values_);
  }

 private:
  Collective* collective_;
  std::vector<Shape> shapes_;
  std::string what_;
  bool sum_;
  std::vector<Tensor> values_;
};

}  // namespace

StatusOr<std::unique_ptr<PendingAllReduce>> Collective::StartAllReduceMean(const std::vector<Shape>& shapes,
                                                                           std::string_view what) {
  return std::unique_ptr<PendingAllReduce>(new CollectThenReduce(this, shapes, what, /*sum=*/false));
}

StatusOr<std::unique_ptr<PendingAllReduce>> Collective::StartAllReduceSum(const std::vector<Shape>& shapes,
                                                                          std::string_view what) {
  return std::unique_ptr<PendingAllReduce>(new CollectThenReduce(this, shapes, what, /*sum=*/true));
}

Status Collective::AllReduceSum(const std::vector<Tensor*>& tensors, std::string_view what) {
  if (size() == 1) return Status::OK();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i]->dtype() != DType::kFloat32)
      return InvalidArgumentError(what, ": tensor ", i, " is ", tensors[i]->TypeString(), "; only float32 is reduced");
    *tensors[i] = tensors[i]->Clone();  // a new tensor replaces the one given, whose buffer is not written
    STRATA_RETURN_IF_ERROR(AllReduceSum(tensors[i]->data<float>(), tensors[i]->num_elements(), what));
  }
  return Status::OK();
}

Status Collective::AllReduceSum(float* data, int64_t n, std::string_view what) {
  if (size() == 1) return Status::OK();
  return UnimplementedError(what, ": this collective (", size(), " workers) has no AllReduceSum");
}

}  // namespace strata::train
