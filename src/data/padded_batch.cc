// Dataset::PaddedBatch: like Batch, but each tensor is padded to a common shape first: per dimension, the size
// given in padded_shapes or (-1 / not given) the largest in this batch. Padding is 0 or "" unless given.
#include <cstring>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

// Copies src (shape `s`) into the corner of dst (shape `d`, same rank) at element offset `base`.
void CopyPadded(const Tensor& src, Tensor* dst, int64_t base, const Shape& s, const Shape& d) {
  const int rank = s.rank();
  const size_t width = DTypeSize(src.dtype());
  if (src.num_elements() == 0) return;
  const int64_t inner = rank == 0 ? 1 : s[rank - 1];
  const int64_t rows = rank == 0 ? 1 : src.num_elements() / inner;
  std::vector<int64_t> idx(static_cast<size_t>(std::max(rank - 1, 0)), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;  // of this row in dst, in elements
    for (int k = 0; k < rank - 1; ++k) offset = (offset + idx[k]) * d[k + 1];
    if (src.dtype() == DType::kString) {
      const auto* from = src.data<std::string>() + r * inner;
      std::copy(from, from + inner, dst->data<std::string>() + base + offset);
    } else {
      std::memcpy(static_cast<char*>(dst->raw_data()) + (base + offset) * width,
                  static_cast<const char*>(src.raw_data()) + r * inner * width, inner * width);
    }
    for (int k = rank - 2; k >= 0; --k) {  // next row index, last dimension fastest
      if (++idx[k] < s[k]) break;
      idx[k] = 0;
    }
  }
}

void FillScalar(Tensor* t, const Tensor* pad) {
  if (t->dtype() == DType::kString) {
    const std::string v = pad ? pad->data<std::string>()[0] : std::string();
    for (std::string& s : t->mutable_values<std::string>()) s = v;
    return;
  }
  const size_t w = DTypeSize(t->dtype());
  auto* p = static_cast<char*>(t->raw_data());
  if (!pad) {
    std::memset(p, 0, t->byte_size());
    return;
  }
  for (int64_t i = 0; i < t->num_elements(); ++i) std::memcpy(p + i * w, pad->raw_data(), w);
}

class PaddedBatchNode final : public internal::DatasetNode {
 public:
  PaddedBatchNode(Dataset input, int64_t batch_size, PaddedBatchOptions options)
      : DatasetNode(StrCat("padded_batch(", batch_size, options.drop_remainder ? ", drop_remainder" : "", ")"),
                    {std::move(input)}),
        batch_size_(batch_size),
        options_(std::move(options)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return internal::MakeBatchIterator(std::move(input), batch_size_, options_.drop_remainder,
                                       [this](std::vector<Element>& rows, Element* out) { return Pad(rows, out); });
  }

 private:
  Status Pad(std::vector<Element>& rows, Element* out) const {
    const Element& first = rows[0];
    const auto n = static_cast<int64_t>(rows.size());
    for (int64_t r = 1; r < n; ++r) STRATA_RETURN_IF_ERROR(internal::CheckSameNames(first, rows[r], r, "padded_batch"));
    for (size_t c = 0; c < first.tensors.size(); ++c) {
      const auto& [name, t0] = first.tensors[c];
      STRATA_ASSIGN_OR_RETURN(Shape target, Target(rows, c));
      const Tensor* pad = nullptr;
      auto pv = options_.padding_values.find(name);
      if (pv != options_.padding_values.end()) {
        if (pv->second.dtype() != t0.dtype() || pv->second.num_elements() != 1)
          return InvalidArgumentError("padded_batch: padding value of '", name, "' must be a ", DTypeName(t0.dtype()),
                                      " scalar, got ", pv->second.TypeString());
        pad = &pv->second;
      }
      Shape shape{n};
      for (int64_t d : target) shape.PushBack(d);
      STRATA_ASSIGN_OR_RETURN(Tensor batch, Tensor::Create(t0.dtype(), shape));
      FillScalar(&batch, pad);
      const int64_t per_row = target.NumElements();
      for (int64_t r = 0; r < n; ++r) {
        const Tensor& t = rows[r].tensors[c].second;
        CopyPadded(t, &batch, r * per_row, t.shape(), target);
      }
      out->tensors.emplace_back(name, std::move(batch));
    }
    return Status::OK();
  }

  // The padded shape of tensor `c`: padded_shapes where given, else the batch maximum; checks dtypes and ranks.
  StatusOr<Shape> Target(const std::vector<Element>& rows, size_t c) const {
    const auto& [name, t0] = rows[0].tensors[c];
    Shape target = t0.shape();
    for (size_t r = 1; r < rows.size(); ++r) {
      const Tensor& t = rows[r].tensors[c].second;
      if (t.dtype() != t0.dtype() || t.rank() != t0.rank())
        return InvalidArgumentError("padded_batch: tensor '", name, "' of element ", r, " (", rows[r].Describe(),
                                    ") is ", t.TypeString(), ", element 0 has ", t0.TypeString(),
                                    " (dtype and rank must match)");
      for (int d = 0; d < t.rank(); ++d) target[d] = std::max(target[d], t.dim(d));
    }
    auto fixed = options_.padded_shapes.find(name);
    if (fixed == options_.padded_shapes.end()) return target;
    if (static_cast<int>(fixed->second.size()) != t0.rank())
      return InvalidArgumentError("padded_batch: padded shape ", fixed->second, " for '", name, "' has rank ",
                                  fixed->second.size(), ", the tensor has rank ", t0.rank());
    for (int d = 0; d < t0.rank(); ++d) {
      const int64_t want = fixed->second[d];
      if (want < 0) continue;
      if (target[d] > want)
        return InvalidArgumentError("padded_batch: tensor '", name, "' has size ", target[d], " in dimension ", d,
                                    ", larger than its padded shape ", fixed->second);
      target[d] = want;
    }
    return target;
  }

  int64_t batch_size_;
  PaddedBatchOptions options_;
};

}  // namespace

Dataset Dataset::PaddedBatch(int64_t batch_size, PaddedBatchOptions options) const {
  if (batch_size <= 0)
    return internal::ErrorDataset(InvalidArgumentError("padded_batch: batch_size must be > 0, got ", batch_size));
  return internal::MakeDataset<PaddedBatchNode>(*this, batch_size, std::move(options));
}

}  // namespace strata::data
