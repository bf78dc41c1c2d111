// ZLIB and GZIP wrappers for TFRecord streams (specs/tf-formats.md §1.5): one deflate stream over the whole framed
// byte stream; window bits 15 (zlib) or 31 (gzip); mem_level 9 when writing, as TF's writer does.
#include <zlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/stream.h"

namespace strata::io {
namespace {

int WindowBits(Compression c) { return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

class InflateInput final : public InputStream {
 public:
  InflateInput(std::unique_ptr<InputStream> raw, Compression c, size_t buffer_size)
      : raw_(std::move(raw)), type_(c), in_(std::max<size_t>(buffer_size, 4096)) {}
  ~InflateInput() override {
    if (init_) inflateEnd(&strm_);
  }

  StatusOr<size_t> Read(char* dst, size_t n) override {
    if (!error_.ok()) return error_;
    if (done_ || n == 0) return size_t{0};
    if (!init_) {
      if (inflateInit2(&strm_, WindowBits(type_)) != Z_OK) return InternalError("inflateInit2 failed");
      init_ = true;
    }
    strm_.next_out = reinterpret_cast<Bytef*>(dst);
    strm_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt want = strm_.avail_out;
    while (strm_.avail_out == want && !done_) {
      if (strm_.avail_in == 0 && !raw_eof_) STRATA_RETURN_IF_ERROR(Refill());
      const uInt before_in = strm_.avail_in;
      const int rc = inflate(&strm_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        STRATA_RETURN_IF_ERROR(EndOfMember());
        continue;
      }
      if (rc == Z_OK) continue;
      if (rc == Z_BUF_ERROR && strm_.avail_in == 0 && !raw_eof_) continue;
      if (rc == Z_BUF_ERROR && raw_eof_ && before_in == 0) {
        error_ = DataLossError("truncated ", CompressionName(type_), " stream in '", raw_->name(), "': it ends after ",
                               consumed(), " compressed bytes without its end marker");
        return error_;
      }
      error_ = DataLossError("corrupt ", CompressionName(type_), " stream in '", raw_->name(), "' near compressed offset ",
                             consumed(), ": ", strm_.msg ? strm_.msg : zError(rc), HeaderHint());
      return error_;
    }
    return static_cast<size_t>(want - strm_.avail_out);
  }

  const std::string& name() const override { return raw_->name(); }

 private:
  uint64_t consumed() const { return raw_read_ - strm_.avail_in; }

  // When the very first bytes fail: what the file looks like instead (a bad header, not damage inside the stream).
  std::string HeaderHint() const {
    if (strm_.total_out > 0 || head_.size() < 2) return "";
    const Compression looks = SniffCompression(head_);
    if (looks == type_) return "";
    if (looks == Compression::kNone)
      return StrCat(" (the file does not start with a ", CompressionName(type_),
                    " header; if it holds plain records, pass --compression NONE)");
    return StrCat(" (this looks like a ", CompressionName(looks), " file; pass --compression ", CompressionName(looks),
                  ")");
  }

  Status Refill() {
    STRATA_ASSIGN_OR_RETURN(size_t got, raw_->Read(in_.data(), in_.size()));
    raw_read_ += got;
    if (head_.size() < 2) head_.append(in_.data(), std::min<size_t>(got, 2 - head_.size()));
    if (got == 0) raw_eof_ = true;
    strm_.next_in = reinterpret_cast<Bytef*>(in_.data());
    strm_.avail_in = static_cast<uInt>(got);
    return Status::OK();
  }

  // GZIP: another member may follow (TF resets the inflater); ZLIB: the stream is over.
  Status EndOfMember() {
    if (type_ != Compression::kGzip) {
      done_ = true;
      return Status::OK();
    }
    if (strm_.avail_in == 0 && !raw_eof_) STRATA_RETURN_IF_ERROR(Refill());
    if (strm_.avail_in == 0) {
      done_ = true;
      return Status::OK();
    }
    if (inflateReset(&strm_) != Z_OK) return InternalError("inflateReset failed");
    return Status::OK();
  }

  std::unique_ptr<InputStream> raw_;
  Compression type_;
  std::vector<char> in_;
  z_stream strm_{};
  bool init_ = false;
  bool raw_eof_ = false;
  bool done_ = false;
  uint64_t raw_read_ = 0;
  std::string head_;  // the first two compressed bytes
  Status error_;
};

class DeflateOutput final : public OutputStream {
 public:
  DeflateOutput(std::unique_ptr<OutputStream> raw, Compression c, int level)
      : raw_(std::move(raw)), type_(c), level_(level), out_(256 << 10) {}
  // An unclosed stream is abandoned unfinished (no end marker); TfRecordWriter closes it when that is wanted.
  ~DeflateOutput() override {
    if (init_ && !closed_) deflateEnd(&strm_);
  }

  Status Write(std::string_view bytes) override {
    if (closed_) return FailedPreconditionError("write to a closed ", CompressionName(type_), " stream");
    STRATA_RETURN_IF_ERROR(Init());
    strm_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    strm_.avail_in = static_cast<uInt>(bytes.size());
    while (strm_.avail_in > 0) STRATA_RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
    return Status::OK();
  }

  Status Flush() override {
    if (closed_) return FailedPreconditionError("flush of a closed ", CompressionName(type_), " stream");
    STRATA_RETURN_IF_ERROR(Init());
    do {
      STRATA_RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
    } while (strm_.avail_out == 0);
    return raw_->Flush();
  }

  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    Status s = Init();
    int rc = Z_OK;
    while (s.ok() && rc != Z_STREAM_END) {
      strm_.next_out = reinterpret_cast<Bytef*>(out_.data());
      strm_.avail_out = static_cast<uInt>(out_.size());
      rc = deflate(&strm_, Z_FINISH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) s = InternalError("deflate failed: ", zError(rc));
      if (s.ok()) s = raw_->Write(std::string_view(out_.data(), out_.size() - strm_.avail_out));
    }
    deflateEnd(&strm_);
    Status c = raw_->Close();
    return s.ok() ? c : s;
  }

 private:
  Status Init() {
    if (init_) return Status::OK();
    const int level = level_ < 0 ? Z_DEFAULT_COMPRESSION : level_;
    if (deflateInit2(&strm_, level, Z_DEFLATED, WindowBits(type_), /*memLevel=*/9, Z_DEFAULT_STRATEGY) != Z_OK)
      return InvalidArgumentError("cannot start a ", CompressionName(type_), " stream at level ", level_);
    init_ = true;
    return Status::OK();
  }

  // One deflate call into the output buffer, then hands the produced bytes on.
  Status Deflate(int flush) {
    strm_.next_out = reinterpret_cast<Bytef*>(out_.data());
    strm_.avail_out = static_cast<uInt>(out_.size());
    const int rc = deflate(&strm_, flush);
    if (rc != Z_OK && rc != Z_BUF_ERROR) return InternalError("deflate failed: ", zError(rc));
    return raw_->Write(std::string_view(out_.data(), out_.size() - strm_.avail_out));
  }

  std::unique_ptr<OutputStream> raw_;
  Compression type_;
  int level_;
  std::vector<char> out_;
  z_stream strm_{};
  bool init_ = false;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<InputStream> DecompressingInput(std::unique_ptr<InputStream> raw, Compression c, size_t buffer_size) {
  if (c == Compression::kNone) return raw;
  return std::make_unique<InflateInput>(std::move(raw), c, buffer_size);
}

std::unique_ptr<OutputStream> CompressingOutput(std::unique_ptr<OutputStream> raw, Compression c, int level) {
  if (c == Compression::kNone) return raw;
  return std::make_unique<DeflateOutput>(std::move(raw), c, level);
}

}  // namespace strata::io
