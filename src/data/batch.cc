// Dataset::Batch: stacks batch_size consecutive elements along a new first dimension. Every element of a batch must
// have the same tensors with the same dtypes and shapes; metadata rows are concatenated.
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "data/dataset_impl.h"

namespace strata::data {
namespace internal {
namespace {

class BatchIterator final : public Iterator {
 public:
  BatchIterator(std::unique_ptr<Iterator> input, int64_t batch_size, bool drop_remainder, CombineFn combine)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder), combine_(std::move(combine)) {}

  StatusOr<bool> GetNext(Element* out) override {
    while (!input_done_ && static_cast<int64_t>(rows_.size()) < batch_size_) {
      Element e;
      STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));  // rows_ keeps what was collected
      if (!more) {
        input_done_ = true;
        break;
      }
      rows_.push_back(std::move(e));
    }
    if (rows_.empty() || (drop_remainder_ && static_cast<int64_t>(rows_.size()) < batch_size_)) {
      rows_.clear();
      return false;
    }
    std::vector<Element> rows = std::move(rows_);
    rows_.clear();
    out->tensors.clear();
    out->metadata.clear();
    STRATA_RETURN_IF_ERROR(combine_(rows, out));
    for (Element& r : rows)
      for (Metadata& m : r.metadata) out->metadata.push_back(std::move(m));
    return true;
  }

  StatusOr<int64_t> Skip(int64_t n) override {
    if (!rows_.empty() || n <= 0) return SkipByGetNext(this, n);
    // n * batch_size saturates (CountBatches skips "everything" with a huge n).
    const bool saturated = n > std::numeric_limits<int64_t>::max() / batch_size_;
    const int64_t want = saturated ? std::numeric_limits<int64_t>::max() : n * batch_size_;
    STRATA_ASSIGN_OR_RETURN(int64_t k, input_->Skip(want));
    if (k == want && !saturated) return n;
    input_done_ = true;
    const int64_t full = k / batch_size_;
    return full + ((k % batch_size_ != 0 && !drop_remainder_) ? 1 : 0);
  }

 private:
  std::unique_ptr<Iterator> input_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  CombineFn combine_;
  std::vector<Element> rows_;
  bool input_done_ = false;
};

}  // namespace

std::unique_ptr<Iterator> MakeBatchIterator(std::unique_ptr<Iterator> input, int64_t batch_size, bool drop_remainder,
                                            CombineFn combine) {
  return std::make_unique<BatchIterator>(std::move(input), batch_size, drop_remainder, std::move(combine));
}

Status CheckSameNames(const Element& first, const Element& e, int64_t row, std::string_view op) {
  bool same = first.tensors.size() == e.tensors.size();
  for (size_t i = 0; same && i < e.tensors.size(); ++i) same = first.tensors[i].first == e.tensors[i].first;
  if (same) return Status::OK();
  std::vector<std::string> a, b;
  for (const auto& [n, t] : first.tensors) a.push_back(n);
  for (const auto& [n, t] : e.tensors) b.push_back(n);
  return InvalidArgumentError(op, ": element ", row, " of the batch (", e.Describe(), ") has tensors [",
                              StrJoin(b, ", "), "], element 0 has [", StrJoin(a, ", "), "]");
}

}  // namespace internal

namespace {

// Keeps up to kKeep freed batch buffers of the sizes last used and hands them out again, so that each batch is copied
// into memory that is already mapped. Without it every batch of a large element (32 x 224x224x3 float32 = 19 MB)
// came fresh from the kernel: glibc trims the freed heap top, and the page faults of the next batch's first touch
// were 30% of a JPEG decode + resize pipeline's time (perf, bench/data_bench BM_JpegDecodeResize224). Blocks under
// kMinBytes go to the heap as before. Owned by its iterator, which Orphan()s it: buffers still held by consumers
// come back later, and the pool deletes itself with the last one.
class BatchBufferPool final : public Allocator {
 public:
  static constexpr size_t kKeep = 4;
  static constexpr size_t kMinBytes = size_t{256} << 10;

  StatusOr<void*> Allocate(size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++out_;
      if (bytes >= kMinBytes) {
        for (size_t i = 0; i < free_.size(); ++i) {
          if (free_[i].second != bytes) continue;
          void* p = free_[i].first;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
          return p;
        }
      }
    }
    auto p = DefaultAllocator()->Allocate(bytes);
    if (!p.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      --out_;
    }
    return p;
  }

  void Free(void* p, size_t bytes) override {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --out_;
      if (!orphaned_ && bytes >= kMinBytes) {
        if (free_.size() == kKeep) {  // the oldest goes back to the heap
          DefaultAllocator()->Free(free_.front().first, free_.front().second);
          free_.erase(free_.begin());
        }
        free_.emplace_back(p, bytes);
        return;
      }
      last = orphaned_ && out_ == 0;
    }
    DefaultAllocator()->Free(p, bytes);
    if (last) delete this;
  }

  // Frees the kept buffers; the pool deletes itself now or when the last buffer still out comes back.
  void Orphan() {
    bool none_out = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [p, bytes] : free_) DefaultAllocator()->Free(p, bytes);
      free_.clear();
      orphaned_ = true;
      none_out = out_ == 0;
    }
    if (none_out) delete this;
  }

  size_t bytes_in_use() const override { return DefaultAllocator()->bytes_in_use(); }
  size_t peak_bytes() const override { return DefaultAllocator()->peak_bytes(); }

 private:
  ~BatchBufferPool() override = default;
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> free_;
  int64_t out_ = 0;
  bool orphaned_ = false;
};

// Orphans the pool when the iterator (which owns the combine function holding this) goes away.
struct PoolOwner {
  BatchBufferPool* pool = new BatchBufferPool();
  ~PoolOwner() { pool->Orphan(); }
};

Status Stack(std::vector<Element>& rows, Element* out, Allocator* alloc) {
  const Element& first = rows[0];
  const auto n = static_cast<int64_t>(rows.size());
  for (int64_t r = 1; r < n; ++r) STRATA_RETURN_IF_ERROR(internal::CheckSameNames(first, rows[r], r, "batch"));
  for (size_t c = 0; c < first.tensors.size(); ++c) {
    const auto& [name, t0] = first.tensors[c];
    Shape shape{n};
    for (int64_t d : t0.shape()) shape.PushBack(d);
    for (int64_t r = 1; r < n; ++r) {
      const Tensor& t = rows[r].tensors[c].second;
      if (t.dtype() != t0.dtype() || t.shape() != t0.shape())
        return InvalidArgumentError("batch: tensor '", name, "' of element ", r, " (", rows[r].Describe(), ") is ",
                                    t.TypeString(), " but element 0 has ", t0.TypeString(),
                                    "; use padded_batch for varying shapes");
    }
    STRATA_ASSIGN_OR_RETURN(Tensor stacked, Tensor::Create(t0.dtype(), shape, alloc));
    const int64_t per_row = t0.num_elements();
    if (t0.dtype() == DType::kString) {
      auto* dst = stacked.data<std::string>();
      for (int64_t r = 0; r < n; ++r) {
        const auto* src = rows[r].tensors[c].second.data<std::string>();
        std::copy(src, src + per_row, dst + r * per_row);
      }
    } else {
      const size_t bytes = t0.byte_size();
      auto* dst = static_cast<char*>(stacked.raw_data());
      for (int64_t r = 0; r < n; ++r)
        if (bytes) std::memcpy(dst + r * bytes, rows[r].tensors[c].second.raw_data(), bytes);
    }
    out->tensors.emplace_back(name, std::move(stacked));
  }
  return Status::OK();
}

class BatchNode final : public internal::DatasetNode {
 public:
  BatchNode(Dataset input, int64_t batch_size, bool drop_remainder)
      : DatasetNode(StrCat("batch(", batch_size, drop_remainder ? ", drop_remainder" : "", ")"), {std::move(input)}),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    auto owner = std::make_shared<PoolOwner>();
    return internal::MakeBatchIterator(std::move(input), batch_size_, drop_remainder_,
                                       [owner](std::vector<Element>& rows, Element* out) {
                                         return Stack(rows, out, owner->pool);
                                       });
  }

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size <= 0)
    return internal::ErrorDataset(InvalidArgumentError("batch: batch_size must be > 0, got ", batch_size));
  return internal::MakeDataset<BatchNode>(*this, batch_size, drop_remainder);
}

}  // namespace strata::data
