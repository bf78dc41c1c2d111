// CSVLogger (specs/tf-formats.md §5.3): header "epoch" + the sorted keys of the first epoch (val_ columns added when
// the first epoch has none), one row per epoch with 0-based epochs, NA for missing values, floats in shortest
// round-trip form, "\r\n" line ends, flushed after every row; append=true writes the header only to an empty file.
#include <algorithm>
#include <cstdio>

#include "strata/train.h"

namespace strata::train {
namespace {

class CsvLoggerCallback final : public Callback {
 public:
  CsvLoggerCallback(std::string filename, char sep, bool append) : filename_(std::move(filename)), sep_(sep), append_(append) {}
  ~CsvLoggerCallback() override {
    if (file_) std::fclose(file_);
  }

  Status OnTrainBegin(Trainer&) override {
    write_header_ = true;
    if (append_) {
      if (std::FILE* f = std::fopen(filename_.c_str(), "rb")) {
        std::fseek(f, 0, SEEK_END);
        write_header_ = std::ftell(f) == 0;
        std::fclose(f);
      }
    }
    file_ = std::fopen(filename_.c_str(), append_ ? "ab" : "wb");
    if (!file_) return NotFoundError("CSVLogger: cannot open '", filename_, "' for writing");
    keys_.clear();
    return Status::OK();
  }

  Status OnEpochEnd(Trainer&, int epoch, Logs& logs) override {
    if (keys_.empty()) {
      for (const auto& [k, v] : logs.items()) keys_.push_back(k);
      std::sort(keys_.begin(), keys_.end());
      const bool has_val = std::any_of(keys_.begin(), keys_.end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
      if (!has_val) {
        const size_t n = keys_.size();
        for (size_t i = 0; i < n; ++i) keys_.push_back("val_" + keys_[i]);
      }
      if (write_header_) {
        std::string header = "epoch";
        for (const std::string& k : keys_) header += sep_ + k;
        std::fprintf(file_, "%s\r\n", header.c_str());
      }
    }
    std::string row = std::to_string(epoch);
    for (const std::string& k : keys_) {
      const double* v = logs.Find(k);
      row += sep_;
      row += v ? StrCat(*v) : std::string("NA");
    }
    std::fprintf(file_, "%s\r\n", row.c_str());
    std::fflush(file_);
    return Status::OK();
  }

  Status OnTrainEnd(Trainer&, const Logs&) override {
    if (file_) std::fclose(file_);
    file_ = nullptr;
    return Status::OK();
  }

 private:
  std::string filename_;
  char sep_;
  bool append_;
  bool write_header_ = true;
  std::FILE* file_ = nullptr;
  std::vector<std::string> keys_;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> CSVLogger(std::string filename, char separator, bool append) {
  if (filename.empty()) return InvalidArgumentError("CSVLogger: filename is empty");
  if (separator == '\n' || separator == '\r' || separator == '"')
    return InvalidArgumentError("CSVLogger: the separator cannot be a line break or a quote");
  return std::shared_ptr<Callback>(std::make_shared<CsvLoggerCallback>(std::move(filename), separator, append));
}

}  // namespace strata::train
