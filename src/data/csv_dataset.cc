// Dataset::Csv: one element per row of RFC 4180 CSV files (quoted fields may hold delimiters, quotes and newlines),
// a scalar tensor per column; streamed, so files of any size use a fixed amount of memory.
#include <algorithm>
#include <charconv>

#include "data/dataset_impl.h"
#include "io/stream.h"

namespace strata::data {
namespace {

// Splits a byte stream into CSV records.
class CsvReader {
 public:
  CsvReader(std::unique_ptr<io::InputStream> in, char delimiter) : in_(std::move(in)), delim_(delimiter) {}

  // Reads the next non-empty record into `fields`; false at the end. *line is the line it starts on (1-based).
  StatusOr<bool> Next(std::vector<std::string>* fields, int64_t* line) {
    for (;;) {
      fields->clear();
      std::string field;
      bool quoted = false, was_quoted = false, any = false;
      *line = line_;
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(int c, Get());
        if (c < 0) {
          if (quoted)
            return InvalidArgumentError("'", in_->name(), "' line ", *line, ": quoted field is not closed before the end of the file");
          if (!any) return false;
          fields->push_back(std::move(field));
          return true;
        }
        any = true;
        if (quoted) {
          if (c == '"') {
            STRATA_ASSIGN_OR_RETURN(int d, Peek());
            if (d == '"') {
              STRATA_RETURN_IF_ERROR(Get().status());
              field.push_back('"');
            } else {
              quoted = false;
            }
          } else {
            if (c == '\n') ++line_;
            field.push_back(static_cast<char>(c));
          }
        } else if (c == delim_) {
          fields->push_back(std::move(field));
          field.clear();
          was_quoted = false;
        } else if (c == '\n' || c == '\r') {
          if (c == '\r') {
            STRATA_ASSIGN_OR_RETURN(int d, Peek());
            if (d == '\n') STRATA_RETURN_IF_ERROR(Get().status());
          }
          ++line_;
          fields->push_back(std::move(field));
          break;
        } else if (c == '"' && field.empty() && !was_quoted) {
          quoted = was_quoted = true;
        } else {
          field.push_back(static_cast<char>(c));
        }
      }
      if (fields->size() == 1 && (*fields)[0].empty()) continue;  // blank line
      return true;
    }
  }

  const std::string& name() const { return in_->name(); }

 private:
  StatusOr<int> Peek() {
    if (pos_ == end_) {
      STRATA_ASSIGN_OR_RETURN(end_, in_->Read(buf_, sizeof(buf_)));
      pos_ = 0;
      if (end_ == 0) return -1;
    }
    return static_cast<unsigned char>(buf_[pos_]);
  }
  StatusOr<int> Get() {
    STRATA_ASSIGN_OR_RETURN(int c, Peek());
    if (c >= 0) ++pos_;
    return c;
  }

  std::unique_ptr<io::InputStream> in_;
  char delim_;
  char buf_[65536];
  size_t pos_ = 0, end_ = 0;
  int64_t line_ = 1;
};

StatusOr<Tensor> Convert(const std::string& text, DType type) {
  const char* b = text.data();
  const char* e = b + text.size();
  switch (type) {
    case DType::kString: return internal::StringScalar(text);
    case DType::kInt64:
    case DType::kInt32: {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) return InvalidArgumentError("expected an integer, found \"", text, "\"");
      if (type == DType::kInt32) {
        if (v < INT32_MIN || v > INT32_MAX) return InvalidArgumentError("integer ", text, " does not fit int32");
        return Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
      }
      return Tensor::Scalar<int64_t>(v);
    }
    case DType::kFloat32:
    case DType::kFloat64: {
      double v = 0;  // from_chars: independent of the process locale
      auto r = std::from_chars(b + (b != e && *b == '+'), e, v);
      if (r.ec != std::errc() || r.ptr != e) return InvalidArgumentError("expected a number, found \"", text, "\"");
      if (type == DType::kFloat32) return Tensor::Scalar<float>(static_cast<float>(v));
      return Tensor::Scalar<double>(v);
    }
    default: break;
  }
  return InvalidArgumentError("CSV columns can be float32, float64, int32, int64 or string, not ", DTypeName(type));
}

class CsvNode final : public internal::DatasetNode {
 public:
  CsvNode(std::vector<std::string> files, CsvOptions options)
      : DatasetNode(StrCat("csv(", files.size() == 1 ? files[0] : StrCat(files.size(), " files"), ")"), {}),
        files_(std::move(files)),
        options_(std::move(options)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions&) const override {
    return std::unique_ptr<Iterator>(new It(this));
  }

 private:
  class It final : public Iterator {
   public:
    explicit It(const CsvNode* node) : node_(node) {}

    StatusOr<bool> GetNext(Element* out) override {
      std::vector<std::string> fields;
      int64_t line = 0;
      for (;;) {
        if (!reader_) {
          if (file_ >= node_->files_.size()) return false;
          Status s = OpenFile();
          if (!s.ok()) {  // report, then go on with the next file
            reader_.reset();
            ++file_;
            return s;
          }
        }
        auto more = reader_->Next(&fields, &line);
        if (!more.ok()) {  // unparseable rest of file: report, then move on
          reader_.reset();
          ++file_;
          return more.status();
        }
        if (*more) break;
        reader_.reset();
        ++file_;
      }
      return Build(fields, line, out);
    }

   private:
    Status OpenFile() {
      const std::string& path = node_->files_[file_];
      STRATA_ASSIGN_OR_RETURN(auto in, io::OpenFileInput(path));
      reader_ = std::make_unique<CsvReader>(std::move(in), node_->options_.delimiter);
      row_ = 0;
      names_ = node_->options_.column_names;
      if (node_->options_.header) {
        int64_t line = 0;
        std::vector<std::string> header;
        STRATA_ASSIGN_OR_RETURN(bool more, reader_->Next(&header, &line));
        if (!more) header.clear();
        if (names_.empty()) names_ = header;
      }
      if (names_.empty()) return InvalidArgumentError("csv '", path, "': no header and no column_names given");
      selected_.clear();
      const auto& select = node_->options_.select_columns;
      for (const std::string& want : select.empty() ? names_ : select) {
        auto it = std::find(names_.begin(), names_.end(), want);
        if (it == names_.end())
          return InvalidArgumentError("csv '", path, "': no column '", want, "' (columns: ", StrJoin(names_, ", "), ")");
        selected_.push_back(static_cast<size_t>(it - names_.begin()));
      }
      return Status::OK();
    }

    StatusOr<bool> Build(const std::vector<std::string>& fields, int64_t line, Element* out) {
      const std::string& path = node_->files_[file_];
      const int64_t row = row_++;
      if (fields.size() != names_.size())
        return InvalidArgumentError("csv '", path, "' line ", line, ": expected ", names_.size(), " fields, found ",
                                    fields.size());
      out->tensors.clear();
      out->metadata.assign(1, Metadata{{kMetaSource, path}, {kMetaRecord, StrCat(row)}, {"line", StrCat(line)}});
      for (size_t c : selected_) {
        const std::string& name = names_[c];
        const std::string* text = &fields[c];
        if (text->empty()) {
          auto d = node_->options_.defaults.find(name);
          if (d == node_->options_.defaults.end())
            return InvalidArgumentError("csv '", path, "' line ", line, ": column '", name,
                                        "' is empty and has no default");
          text = &d->second;
        }
        auto type = node_->options_.column_types.find(name);
        auto value = Convert(*text, type == node_->options_.column_types.end() ? DType::kString : type->second);
        if (!value.ok())
          return std::move(value).status().WithContext(StrCat("csv '", path, "' line ", line, " column '", name, "'"));
        out->tensors.emplace_back(name, std::move(value).value());
      }
      return true;
    }

    const CsvNode* node_;
    size_t file_ = 0;
    std::unique_ptr<CsvReader> reader_;
    std::vector<std::string> names_;
    std::vector<size_t> selected_;
    int64_t row_ = 0;
  };

  std::vector<std::string> files_;
  CsvOptions options_;
};

}  // namespace

Dataset Dataset::Csv(std::vector<std::string> files, CsvOptions options) {
  if (files.empty()) return internal::ErrorDataset(InvalidArgumentError("csv: no files given"));
  if (!options.header && options.column_names.empty())
    return internal::ErrorDataset(InvalidArgumentError("csv: without a header, column_names must be given"));
  return internal::MakeDataset<CsvNode>(std::move(files), std::move(options));
}

}  // namespace strata::data
