// Internals shared by the files of src/data: the node every Dataset wraps, and small helpers for iterators.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/data.h"

namespace strata::data::internal {

// One node of a pipeline description. Immutable once built, shared by Datasets and iterators (so it may hold
// shared state such as the in-memory cache behind a mutex).
class DatasetNode {
 public:
  DatasetNode(std::string description, std::vector<Dataset> inputs)
      : description_(std::move(description)), inputs_(std::move(inputs)) {}
  virtual ~DatasetNode() = default;

  // The iterator may keep a plain pointer to this node: whoever calls this keeps the node alive for the iterator's
  // lifetime. Dataset::MakeIterator does so for the root; a node keeps its inputs alive through inputs().
  virtual StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const = 0;
  StatusOr<std::unique_ptr<Iterator>> MakeInputIterator(size_t i, const IteratorOptions& options) const {
    return inputs_[i].node()->MakeIterator(options);
  }

  // "map(parse, parallel 4)"; DebugString joins the chain.
  const std::string& description() const { return description_; }
  const std::vector<Dataset>& inputs() const { return inputs_; }

 private:
  std::string description_;
  std::vector<Dataset> inputs_;
};

// A node whose iterator fails with `status`: how bad arguments given while building surface at MakeIterator.
Dataset ErrorDataset(Status status);

template <typename Node, typename... Args>
Dataset MakeDataset(Args&&... args) {
  return Dataset(std::make_shared<const Node>(std::forward<Args>(args)...));
}

// kAutotune -> the number of cores; n > 0 stays; anything else is invalid (checked by callers).
int64_t ResolveParallelism(int64_t n);

// SplitMix64 finaliser: a well-mixed 64-bit function of its input.
uint64_t Mix64(uint64_t x);
// Combines seed parts into one seed (order matters).
uint64_t MixSeeds(uint64_t a, uint64_t b, uint64_t c = 0);
// A fresh seed from the operating system, for ops without a seed.
uint64_t RandomSeed();

// Adds transformation and element context to an error: "map 'parse' on record 3 of 'f.tfrecord': <message>".
Status WithElementContext(Status status, std::string_view transformation, const Element& element);

// Row i of t (along dim 0) as a tensor that shares t's memory.
Tensor SliceRow(const Tensor& t, int64_t i);
Tensor StringScalar(std::string s);
Tensor Int64Scalar(int64_t v);

// Combines the collected elements of one batch into `out` (Batch stacks, PaddedBatch pads and stacks).
using CombineFn = std::function<Status(std::vector<Element>& rows, Element* out)>;
// The iterator behind Batch and PaddedBatch: collects batch_size input elements (fewer for the last batch unless
// drop_remainder), concatenates their metadata rows and calls `combine`. Input errors are returned without losing
// the elements collected so far.
std::unique_ptr<Iterator> MakeBatchIterator(std::unique_ptr<Iterator> input, int64_t batch_size, bool drop_remainder,
                                            CombineFn combine);
// The tensor names of `e`, in order, checked against those of `first` (batch row `row`).
Status CheckSameNames(const Element& first, const Element& e, int64_t row, std::string_view op);

// A self-contained binary form of an element (tensors with names, dtypes, shapes and values, and metadata), used
// by the file cache. Deserialisation checks every length and reports DATA_LOSS on damaged input.
void SerializeElement(const Element& e, std::string* out);
Status DeserializeElement(std::string_view bytes, Element* out);

// Repeatedly calls GetNext; the default of Iterator::Skip.
StatusOr<int64_t> SkipByGetNext(Iterator* it, int64_t n);

}  // namespace strata::data::internal
