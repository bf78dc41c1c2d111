// TFRecord files (specs/tf-formats.md §1): records framed as
//   uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
// optionally inside one ZLIB or GZIP stream. Used for training data, and reused for TensorBoard event files and
// strata's file cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/stream.h"
#include "strata/status.h"

namespace strata::io {

inline constexpr size_t kTfRecordHeaderBytes = 12;
inline constexpr size_t kTfRecordFooterBytes = 4;

// Appends one framed record to `out` (in-memory framing, no compression).
void AppendTfRecord(std::string* out, std::string_view data);

struct TfRecordWriterOptions {
  Compression compression = Compression::kNone;
  int level = -1;       // zlib level for ZLIB/GZIP; -1 = zlib's default (6), as TF
  bool atomic = false;  // write "<path>.tmp.<pid>" and rename it over `path` on Close()
};

class TfRecordWriter {
 public:
  static StatusOr<std::unique_ptr<TfRecordWriter>> Open(const std::string& path,
                                                        const TfRecordWriterOptions& options = {});
  // Writes into any stream (already compressed if wanted).
  explicit TfRecordWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}
  // Closes the file if Close() was not called (errors are logged); an unclosed atomic write is abandoned instead.
  ~TfRecordWriter();

  Status Write(std::string_view record);
  Status Flush();
  Status Close();
  int64_t records_written() const { return records_; }

 private:
  std::unique_ptr<OutputStream> out_;
  int64_t records_ = 0;
  bool atomic_ = false;
};

struct TfRecordReaderOptions {
  Compression compression = Compression::kNone;
  size_t buffer_size = 256 << 10;  // read buffer (TF's default: 256 KiB)
  // false: a corrupt or truncated record is a DATA_LOSS error (TF's behaviour).
  // true: the reader skips it, counts it in corrupt_records(), and resynchronises on the next valid header.
  bool skip_corrupt = false;
  // Where to start, in bytes of the (decompressed) stream; offsets then count from the file's start. An event-file
  // tailer reopens at the offset() of a record that was truncated while being written.
  uint64_t start_offset = 0;
};

class TfRecordReader {
 public:
  static StatusOr<std::unique_ptr<TfRecordReader>> Open(const std::string& path,
                                                        const TfRecordReaderOptions& options = {});
  // Reads records from an uncompressed stream (wrap it with DecompressingInput first if needed).
  TfRecordReader(std::unique_ptr<InputStream> in, const TfRecordReaderOptions& options);

  // Reads the next record into `out`: true on success, false at a clean end of the file. A corrupt record is
  // DATA_LOSS "corrupted record at <offset> in '<file>'..." (or skipped, see options); a short one is
  // "truncated record at <offset>...". After an error the reader stays at the start of the bad record.
  StatusOr<bool> ReadRecord(std::string* out);
  // Moves past the next record without copying it. With `verify_data` the data CRC is checked as by ReadRecord
  // (and corrupt records are skipped or reported the same way); without it only the header is checked, which is
  // TF's fast metadata scan. Returns false at the end.
  StatusOr<bool> SkipRecord(bool verify_data = true);

  // Offset, in the (decompressed) stream, of the next record and of the record last returned.
  uint64_t offset() const { return offset_; }
  uint64_t last_record_offset() const { return last_offset_; }
  int64_t records_read() const { return records_; }
  int64_t corrupt_records() const { return corrupt_; }
  const std::string& name() const { return in_->name(); }

 private:
  // Makes at least `n` bytes available from pos_ unless the stream ends first; returns how many are available.
  StatusOr<size_t> Fill(size_t n);
  // Validates the record at pos_: kOk (length in *len), or the kind of damage.
  enum class Check { kOk, kEnd, kTruncated, kBadHeader, kBadData };
  StatusOr<Check> CheckRecord(bool verify_data, uint64_t* len);
  // The DATA_LOSS error for damage found by CheckRecord (details in detail_).
  Status Damage(Check what) const;
  // After a bad header: moves forward byte by byte to the next position holding a valid header.
  StatusOr<bool> Resync();
  void Consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }
  StatusOr<bool> Next(std::string* out, bool verify_data);
  StatusOr<bool> ConsumeRecord(uint64_t len);
  StatusOr<bool> SkipUnverified(uint64_t len);

  std::unique_ptr<InputStream> in_;
  TfRecordReaderOptions options_;
  std::string buf_;
  size_t pos_ = 0;   // first unread byte in buf_
  size_t end_ = 0;   // end of valid bytes in buf_
  bool eof_ = false;
  uint64_t offset_ = 0;
  uint64_t last_offset_ = 0;
  int64_t records_ = 0;
  int64_t corrupt_ = 0;
  std::string where_;   // " of the decompressed GZIP stream", or empty
  std::string detail_;  // what CheckRecord found wrong
};

// True when a file is a GZIP stream rather than plain TFRecords: it starts with the gzip magic 1f 8b and its first
// 12 bytes are not a valid record header (a plain file whose first record is 35615 + 65536k bytes long also starts
// with 1f 8b; its header CRC tells the two apart). For readers that detect GZIP when no compression is named.
StatusOr<bool> LooksLikeGzipTfRecordFile(const std::string& path);

// Counts the records of a TFRecord file by reading headers only; with `verify_data`, checks every data CRC too.
StatusOr<int64_t> CountTfRecords(const std::string& path, Compression compression, bool verify_data = false);

}  // namespace strata::io
