// TFRecord files for library users: write the training data a pipeline reads with data::Dataset::TfRecord, or read
// records back, without the library's internal stream classes. The framing is TensorFlow's (specs/tf-formats.md §1),
// so tf.data.TFRecordDataset reads what RecordFileWriter writes.
//
//   auto w = *io::RecordFileWriter::Open("train-00000.tfrecord");
//   STRATA_RETURN_IF_ERROR(w->Write(io::SerializeExample(example)));
//   STRATA_RETURN_IF_ERROR(w->Close());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::io {

class TfRecordWriter;
class TfRecordReader;

class RecordFileWriter {
 public:
  // `compression`: "" (none), "ZLIB" or "GZIP", TensorFlow's TFRecordOptions names. With `atomic`, the records go to
  // a temporary file that Close() renames over `path`, so readers never see a half-written file.
  static StatusOr<std::unique_ptr<RecordFileWriter>> Open(const std::string& path, std::string_view compression = "",
                                                          bool atomic = false);
  ~RecordFileWriter();  // closes the file if Close() was not called (an atomic write is abandoned instead)
  Status Write(std::string_view record);
  Status Close();
  int64_t records_written() const;

 private:
  explicit RecordFileWriter(std::unique_ptr<TfRecordWriter> w);
  std::unique_ptr<TfRecordWriter> writer_;
};

class RecordFileReader {
 public:
  // `compression` as for the writer; "AUTO" sniffs GZIP/ZLIB from the file's first bytes.
  static StatusOr<std::unique_ptr<RecordFileReader>> Open(const std::string& path,
                                                          std::string_view compression = "AUTO");
  ~RecordFileReader();
  // The next record: true, or false at a clean end of the file. Corrupt or truncated records are DATA_LOSS errors
  // that name the file and the byte offset.
  StatusOr<bool> Read(std::string* record);

 private:
  explicit RecordFileReader(std::unique_ptr<TfRecordReader> r);
  std::unique_ptr<TfRecordReader> reader_;
};

}  // namespace strata::io
