// Dataset::TfRecord: the records of TFRecord files as string scalars "record", with source/record/offset metadata.
// num_parallel_reads = k interleaves k files one record at a time (specs/tf-formats.md §1.6).
#include "data/dataset_impl.h"
#include "io/tfrecord.h"

namespace strata::data {
namespace {

class TfRecordNode final : public internal::DatasetNode {
 public:
  TfRecordNode(std::vector<std::string> files, TfRecordOptions options, io::Compression compression)
      : DatasetNode(StrCat("tfrecord(", files.size() == 1 ? files[0] : StrCat(files.size(), " files"),
                           options.compression.empty() ? "" : ", " + options.compression, ")"),
                    {}),
        files_(std::move(files)),
        options_(std::move(options)),
        compression_(compression) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    return std::unique_ptr<Iterator>(new It(this, options.epoch));
  }

 private:
  class It final : public Iterator {
   public:
    It(const TfRecordNode* node, int64_t epoch) : node_(node), epoch_(epoch) {}
    ~It() override { ReportCorrupt(); }

    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(bool open, EnsureReader());
        if (!open) return false;
        std::string record;
        auto read = reader_->ReadRecord(&record);
        if (!read.ok()) {  // the rest of a damaged file is unreachable: a later call goes on with the next file
          NextFile();
          return read.status();
        }
        const bool more = *read;
        if (!more) {
          NextFile();
          continue;
        }
        out->tensors.clear();
        out->tensors.emplace_back("record", internal::StringScalar(std::move(record)));
        out->metadata.assign(1, Metadata{{kMetaSource, node_->files_[file_]},
                                         {kMetaRecord, StrCat(reader_->records_read() - 1)},
                                         {kMetaOffset, StrCat(reader_->last_record_offset())}});
        return true;
      }
    }

    StatusOr<int64_t> Skip(int64_t n) override {
      int64_t done = 0;
      while (done < n) {
        STRATA_ASSIGN_OR_RETURN(bool open, EnsureReader());
        if (!open) break;
        // With skip_corrupt the data CRCs decide which records exist, so they are checked while skipping too.
        auto skipped = reader_->SkipRecord(/*verify_data=*/node_->options_.skip_corrupt);
        if (!skipped.ok()) {
          NextFile();
          return skipped.status();
        }
        if (*skipped) {
          ++done;
        } else {
          NextFile();
        }
      }
      return done;
    }

   private:
    StatusOr<bool> EnsureReader() {
      if (reader_) return true;
      if (file_ >= node_->files_.size()) return false;
      io::TfRecordReaderOptions ro;
      ro.compression = node_->compression_;
      ro.buffer_size = node_->options_.buffer_size;
      ro.skip_corrupt = node_->options_.skip_corrupt;
      auto reader = io::TfRecordReader::Open(node_->files_[file_], ro);
      if (!reader.ok()) {
        ++file_;
        return reader.status();
      }
      reader_ = std::move(reader).value();
      return true;
    }

    void NextFile() {
      ReportCorrupt();
      reader_.reset();
      ++file_;
    }

    void ReportCorrupt() {
      if (reader_ && node_->options_.stats && reader_->corrupt_records() > 0)
        node_->options_.stats->AddDropped(epoch_, "corrupt_record", reader_->corrupt_records());
    }

    const TfRecordNode* node_;
    int64_t epoch_;
    size_t file_ = 0;
    std::unique_ptr<io::TfRecordReader> reader_;
  };

  std::vector<std::string> files_;
  TfRecordOptions options_;
  io::Compression compression_;
};

}  // namespace

Dataset Dataset::TfRecord(std::vector<std::string> files, TfRecordOptions options) {
  if (files.empty()) return internal::ErrorDataset(InvalidArgumentError("tfrecord: no files given"));
  auto compression = io::ParseCompression(options.compression);
  if (!compression.ok()) return internal::ErrorDataset(compression.status());
  if (options.num_parallel_reads < 0 && options.num_parallel_reads != kAutotune)
    return internal::ErrorDataset(InvalidArgumentError("tfrecord: num_parallel_reads must be >= 0 or kAutotune, got ",
                                                       options.num_parallel_reads));
  if (options.num_parallel_reads == 0 || files.size() == 1) {
    options.num_parallel_reads = 0;
    return internal::MakeDataset<TfRecordNode>(std::move(files), std::move(options), *compression);
  }
  // TF: a parallel, deterministic interleave over the files with block_length 1.
  const int64_t k = options.num_parallel_reads;
  TfRecordOptions per_file = options;
  per_file.num_parallel_reads = 0;
  Tensor names = Tensor::Empty(DType::kString, Shape{static_cast<int64_t>(files.size())});
  for (size_t i = 0; i < files.size(); ++i) names.data<std::string>()[i] = files[i];
  InterleaveOptions io;
  io.cycle_length = k;
  io.block_length = 1;
  io.num_parallel_calls = k;
  io.name = "tfrecord parallel reads";
  return FromTensorSlices({{"filename", names}})
      .Interleave(
          [per_file](const Element& e) -> StatusOr<Dataset> {
            STRATA_ASSIGN_OR_RETURN(Tensor name, e.Get("filename"));
            return TfRecord({name.data<std::string>()[0]}, per_file);
          },
          io);
}

}  // namespace strata::data
