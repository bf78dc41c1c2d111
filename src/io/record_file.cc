// The public TFRecord facade (strata/records.h) over the internal writer and reader.
#include "strata/records.h"

#include <utility>

#include "io/stream.h"
#include "io/tfrecord.h"

namespace strata::io {

RecordFileWriter::RecordFileWriter(std::unique_ptr<TfRecordWriter> w) : writer_(std::move(w)) {}
RecordFileWriter::~RecordFileWriter() = default;

StatusOr<std::unique_ptr<RecordFileWriter>> RecordFileWriter::Open(const std::string& path,
                                                                   std::string_view compression, bool atomic) {
  STRATA_ASSIGN_OR_RETURN(Compression c, ParseCompression(compression));
  STRATA_ASSIGN_OR_RETURN(auto w, TfRecordWriter::Open(path, {.compression = c, .atomic = atomic}));
  return std::unique_ptr<RecordFileWriter>(new RecordFileWriter(std::move(w)));
}

Status RecordFileWriter::Write(std::string_view record) { return writer_->Write(record); }
Status RecordFileWriter::Close() { return writer_->Close(); }
int64_t RecordFileWriter::records_written() const { return writer_->records_written(); }

RecordFileReader::RecordFileReader(std::unique_ptr<TfRecordReader> r) : reader_(std::move(r)) {}
RecordFileReader::~RecordFileReader() = default;

StatusOr<std::unique_ptr<RecordFileReader>> RecordFileReader::Open(const std::string& path,
                                                                   std::string_view compression) {
  Compression c = Compression::kNone;
  if (compression == "AUTO") {
    STRATA_ASSIGN_OR_RETURN(c, SniffFileCompression(path));
  } else {
    STRATA_ASSIGN_OR_RETURN(c, ParseCompression(compression));
  }
  STRATA_ASSIGN_OR_RETURN(auto r, TfRecordReader::Open(path, {.compression = c}));
  return std::unique_ptr<RecordFileReader>(new RecordFileReader(std::move(r)));
}

StatusOr<bool> RecordFileReader::Read(std::string* record) { return reader_->ReadRecord(record); }

}  // namespace strata::io
