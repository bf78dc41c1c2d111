// Dataset::ListFiles: the files matching glob patterns, sorted, then shuffled as a pure function of (seed, epoch).
#include <algorithm>
#include <set>

#include "core/file_util.h"
#include "core/random.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class ListFilesNode final : public internal::DatasetNode {
 public:
  ListFilesNode(std::vector<std::string> patterns, bool shuffle, std::optional<uint64_t> seed)
      : DatasetNode(StrCat("list_files(", StrJoin(patterns, ", "), shuffle ? ", shuffled" : "", ")"), {}),
        patterns_(std::move(patterns)),
        shuffle_(shuffle),
        seed_(seed) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    std::set<std::string> unique;
    for (const std::string& p : patterns_) {
      STRATA_ASSIGN_OR_RETURN(auto files, Glob(p));
      unique.insert(files.begin(), files.end());
    }
    if (unique.empty())
      return NotFoundError("list_files: no files match ", patterns_.size() == 1 ? "pattern '" : "patterns '",
                           StrJoin(patterns_, "', '"), "'");
    std::vector<std::string> files(unique.begin(), unique.end());
    if (shuffle_) {
      Rng rng(seed_ ? internal::MixSeeds(*seed_, static_cast<uint64_t>(options.epoch)) : internal::RandomSeed());
      for (size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[rng.Below(i)]);
    }
    return std::unique_ptr<Iterator>(new It(std::move(files)));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(std::vector<std::string> files) : files_(std::move(files)) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (next_ >= files_.size()) return false;
      out->tensors.clear();
      out->metadata.assign(1, Metadata{{kMetaSource, files_[next_]}});
      out->tensors.emplace_back("filename", internal::StringScalar(files_[next_]));
      ++next_;
      return true;
    }
    StatusOr<int64_t> Skip(int64_t n) override {
      const auto k = static_cast<size_t>(std::clamp<int64_t>(n, 0, static_cast<int64_t>(files_.size() - next_)));
      next_ += k;
      return static_cast<int64_t>(k);
    }

   private:
    std::vector<std::string> files_;
    size_t next_ = 0;
  };

  std::vector<std::string> patterns_;
  bool shuffle_;
  std::optional<uint64_t> seed_;
};

}  // namespace

Dataset Dataset::ListFiles(std::vector<std::string> patterns, bool shuffle, std::optional<uint64_t> seed) {
  if (patterns.empty()) return internal::ErrorDataset(InvalidArgumentError("list_files: no patterns given"));
  return internal::MakeDataset<ListFilesNode>(std::move(patterns), shuffle, seed);
}

}  // namespace strata::data
