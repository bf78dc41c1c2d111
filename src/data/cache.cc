// Dataset::Cache("") keeps the elements in memory. The first iterator that reaches the end of the input completes
// the cache, which every later iterator (epoch) then replays; an iterator destroyed before the end throws its
// partial cache away, as TF does. Cache(path) is in file_cache.cc.
#include "core/logging.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace internal {
Dataset MakeFileCache(const Dataset& input, std::string filename);
}

namespace {

constexpr size_t kMaxCachedElements = 10000000;  // TF's limit

class MemoryCacheNode final : public internal::DatasetNode {
 public:
  explicit MemoryCacheNode(Dataset input) : DatasetNode("cache(memory)", {std::move(input)}) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cache_) return std::unique_ptr<Iterator>(new ReadIt(cache_));
    }
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new WriteIt(this, std::move(input)));
  }

 private:
  using Elements = std::vector<Element>;

  class ReadIt final : public Iterator {
   public:
    explicit ReadIt(std::shared_ptr<const Elements> cache) : cache_(std::move(cache)) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (next_ >= cache_->size()) return false;
      *out = (*cache_)[next_++];  // tensors share memory with the cache
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      const auto k = static_cast<size_t>(std::clamp<int64_t>(n, 0, static_cast<int64_t>(cache_->size() - next_)));
      next_ += k;
      return static_cast<int64_t>(k);
    }

   private:
    std::shared_ptr<const Elements> cache_;
    size_t next_ = 0;
  };

  class WriteIt final : public Iterator {
   public:
    WriteIt(const MemoryCacheNode* node, std::unique_ptr<Iterator> input) : node_(node), input_(std::move(input)) {}
    ~WriteIt() override {
      if (!finished_ && !pending_.empty())
        LogWarning("The calling iterator did not fully read the dataset being cached. In order to avoid unexpected "
                   "truncation of the dataset, the partially cached contents of the dataset will be discarded (",
                   pending_.size(), " elements). This can happen if you have an input pipeline similar to "
                   "`dataset.cache().take(k).repeat()`. You should use `dataset.take(k).cache().repeat()` instead.");
    }

    StatusOr<bool> GetNext(Element* out) override {
      if (finished_) return false;
      STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
      if (!more) {
        finished_ = true;
        node_->Publish(std::move(pending_));
        return false;
      }
      if (pending_.size() >= kMaxCachedElements)
        return InvalidArgumentError("cache: the input has more than ", kMaxCachedElements,
                                    " items, which is more than the cache limit");
      pending_.push_back(*out);
      return true;
    }

   private:
    const MemoryCacheNode* node_;
    std::unique_ptr<Iterator> input_;
    Elements pending_;
    bool finished_ = false;
  };

  // The first complete pass wins; later ones (concurrent iterators) are dropped.
  void Publish(Elements elements) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cache_) cache_ = std::make_shared<const Elements>(std::move(elements));
  }

  mutable std::mutex mu_;
  mutable std::shared_ptr<const Elements> cache_;
};

}  // namespace

Dataset Dataset::Cache(std::string filename) const {
  if (!filename.empty()) return internal::MakeFileCache(*this, std::move(filename));
  return internal::MakeDataset<MemoryCacheNode>(*this);
}

}  // namespace strata::data
