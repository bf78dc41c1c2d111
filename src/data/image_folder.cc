// Dataset::ImageFolder: one class per subfolder (labels follow the sorted folder names), files sorted within each,
// or all of them in one seeded random order (ImageFolderOptions::shuffle_seed).
// Elements carry the encoded bytes; decoding is a Map so that it can run in parallel.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/file_util.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

struct Entry {
  std::string path;
  int64_t label;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

StatusOr<std::vector<Entry>> ListImages(const std::string& dir, const ImageFolderOptions& options,
                                        const std::vector<std::string>& classes) {
  std::vector<Entry> out;
  for (size_t label = 0; label < classes.size(); ++label) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(JoinPath(dir, classes[label]), ec)) {
      if (!f.is_regular_file(ec)) continue;
      const std::string ext = Lower(f.path().extension().string());
      if (std::find(options.extensions.begin(), options.extensions.end(), ext) != options.extensions.end())
        files.push_back(f.path().string());
    }
    if (ec) return UnavailableError("image_folder: cannot list '", JoinPath(dir, classes[label]), "': ", ec.message());
    std::sort(files.begin(), files.end());
    for (auto& f : files) out.push_back({std::move(f), static_cast<int64_t>(label)});
  }
  return out;
}

class ImageFolderNode final : public internal::DatasetNode {
 public:
  ImageFolderNode(std::string dir, ImageFolderOptions options)
      : DatasetNode(StrCat("image_folder(", dir, ")"), {}), dir_(std::move(dir)), options_(std::move(options)) {
    for (auto& e : options_.extensions) e = Lower(e);
  }

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    STRATA_ASSIGN_OR_RETURN(auto classes, Dataset::ImageFolderClasses(dir_));
    STRATA_ASSIGN_OR_RETURN(auto entries, ListImages(dir_, options_, classes));
    if (entries.empty())
      return NotFoundError("image_folder: no files with extensions ", options_.extensions, " under '", dir_, "'");
    if (options_.shuffle_seed) {  // Fisher-Yates over the sorted list: the order depends on the seed only
      Rng rng(*options_.shuffle_seed);
      for (size_t i = entries.size() - 1; i > 0; --i) std::swap(entries[i], entries[rng.Below(i + 1)]);
    }
    return std::unique_ptr<Iterator>(new It(std::move(classes), std::move(entries)));
  }

 private:
  class It final : public Iterator {
   public:
    It(std::vector<std::string> classes, std::vector<Entry> entries)
        : classes_(std::move(classes)), entries_(std::move(entries)) {}

    StatusOr<bool> GetNext(Element* out) override {
      if (next_ >= entries_.size()) return false;
      const Entry& e = entries_[next_++];
      out->tensors.clear();
      out->metadata.assign(1, Metadata{{kMetaSource, e.path}});
      STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadFile(e.path));
      out->tensors.emplace_back("image/encoded", internal::StringScalar(std::move(bytes)));
      out->tensors.emplace_back("label", internal::Int64Scalar(e.label));
      out->tensors.emplace_back("class", internal::StringScalar(classes_[static_cast<size_t>(e.label)]));
      return true;
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      const auto k = static_cast<size_t>(std::clamp<int64_t>(n, 0, static_cast<int64_t>(entries_.size() - next_)));
      next_ += k;
      return static_cast<int64_t>(k);
    }

   private:
    std::vector<std::string> classes_;
    std::vector<Entry> entries_;
    size_t next_ = 0;
  };

  std::string dir_;
  ImageFolderOptions options_;
};

}  // namespace

StatusOr<std::vector<std::string>> Dataset::ImageFolderClasses(const std::string& dir) {
  if (!IsDirectory(dir)) return NotFoundError("image_folder: '", dir, "' is not a directory");
  std::vector<std::string> classes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory(ec)) classes.push_back(e.path().filename().string());
  if (ec) return UnavailableError("image_folder: cannot list '", dir, "': ", ec.message());
  if (classes.empty()) return NotFoundError("image_folder: '", dir, "' has no class subfolders");
  std::sort(classes.begin(), classes.end());
  return classes;
}

Dataset Dataset::ImageFolder(std::string dir, ImageFolderOptions options) {
  return internal::MakeDataset<ImageFolderNode>(std::move(dir), std::move(options));
}

}  // namespace strata::data
