#include <algorithm>
#include <cstring>

#include "io/crc32c.h"
#include "io/tfrecord.h"

namespace strata::io {
namespace {

uint32_t LoadLE32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t LoadLE64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string Hex32(uint32_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 0; i < 8; ++i) s[9 - i] = kDigits[(v >> (4 * i)) & 0xF];
  return s;
}

bool HeaderValid(const char* p) { return MaskCrc(Crc32c(p, 8)) == LoadLE32(p + 8); }

}  // namespace

StatusOr<std::unique_ptr<TfRecordReader>> TfRecordReader::Open(const std::string& path,
                                                               const TfRecordReaderOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, OpenFileInput(path));
  auto in = DecompressingInput(std::move(file), options.compression, options.buffer_size);
  if (options.start_offset > 0) {
    STRATA_ASSIGN_OR_RETURN(uint64_t skipped, in->Skip(options.start_offset));
    if (skipped < options.start_offset)
      return OutOfRangeError("start offset ", options.start_offset, " is past the end of '", path, "' (", skipped,
                             " bytes)");
  }
  auto reader = std::make_unique<TfRecordReader>(std::move(in), options);
  reader->offset_ = options.start_offset;
  return reader;
}

TfRecordReader::TfRecordReader(std::unique_ptr<InputStream> in, const TfRecordReaderOptions& options)
    : in_(std::move(in)), options_(options) {
  if (options_.compression != Compression::kNone)
    where_ = StrCat(" of the decompressed ", CompressionName(options_.compression), " stream");
}

StatusOr<size_t> TfRecordReader::Fill(size_t n) {
  size_t avail = end_ - pos_;
  if (avail >= n || eof_) return avail;
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, avail);
    pos_ = 0;
    end_ = avail;
  }
  while (end_ < n && !eof_) {
    if (end_ == buf_.size()) {
      // Grow only when the buffer is full of real data, so a bogus length cannot make us allocate more than about
      // twice what the stream actually holds.
      buf_.resize(buf_.empty() ? std::max<size_t>(options_.buffer_size, 4096) : 2 * buf_.size());
    }
    STRATA_ASSIGN_OR_RETURN(size_t got, in_->Read(buf_.data() + end_, buf_.size() - end_));
    if (got == 0) eof_ = true;
    end_ += got;
  }
  return end_ - pos_;
}

StatusOr<TfRecordReader::Check> TfRecordReader::CheckRecord(bool verify_data, uint64_t* len) {
  STRATA_ASSIGN_OR_RETURN(size_t avail, Fill(kTfRecordHeaderBytes));
  if (avail == 0) return Check::kEnd;
  if (avail < kTfRecordHeaderBytes) {
    detail_ = StrCat("only ", avail, " of the 12 header bytes are left");
    return Check::kTruncated;
  }
  const char* p = buf_.data() + pos_;
  *len = LoadLE64(p);
  if (!HeaderValid(p)) {
    detail_ = StrCat("length CRC mismatch (stored ", Hex32(LoadLE32(p + 8)), ", computed ",
                     Hex32(MaskCrc(Crc32c(p, 8))), ")");
    return Check::kBadHeader;
  }
  if (!verify_data) return Check::kOk;
  constexpr uint64_t kOverhead = kTfRecordHeaderBytes + kTfRecordFooterBytes;
  if (*len > (uint64_t{1} << 62)) {
    detail_ = StrCat("header says ", *len, " data bytes, more than any file holds");
    return Check::kTruncated;
  }
  STRATA_ASSIGN_OR_RETURN(avail, Fill(static_cast<size_t>(*len + kOverhead)));
  if (avail < *len + kOverhead) {
    detail_ = StrCat("header says ", *len, " data bytes, only ", avail - std::min<size_t>(avail, kTfRecordHeaderBytes),
                     " bytes (data and CRC) are left");
    return Check::kTruncated;
  }
  p = buf_.data() + pos_;
  const uint32_t stored = LoadLE32(p + kTfRecordHeaderBytes + *len);
  const uint32_t computed = MaskCrc(Crc32c(p + kTfRecordHeaderBytes, static_cast<size_t>(*len)));
  if (stored != computed) {
    detail_ = StrCat("data CRC mismatch over ", *len, " bytes (stored ", Hex32(stored), ", computed ", Hex32(computed),
                     ")");
    return Check::kBadData;
  }
  return Check::kOk;
}

Status TfRecordReader::Damage(Check what) const {
  const bool truncated = what == Check::kTruncated;
  std::string msg = StrCat(truncated ? "truncated" : "corrupted", " record at ", offset_, where_, " in '", name(),
                           "' (record index ", records_ + corrupt_, "): ", detail_);
  if (offset_ == 0 && what == Check::kBadHeader) {
    msg += " (Is this even a TFRecord file?)";  // TF's hint
    // The usual cause: a compressed file read as plain records.
    const Compression looks = options_.compression == Compression::kNone
                                  ? SniffCompression(std::string_view(buf_.data() + pos_, end_ - pos_))
                                  : Compression::kNone;
    if (looks != Compression::kNone) {
      const std::string_view kind = CompressionName(looks);
      msg += StrCat(" (this looks like a ", kind, " file; pass --compression ", kind, ", in the API compression \"",
                    kind, "\")");
    }
  }
  return DataLossError(msg);
}

StatusOr<bool> TfRecordReader::Resync() {
  Consume(1);
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t avail, Fill(kTfRecordHeaderBytes));
    if (avail < kTfRecordHeaderBytes) {
      Consume(avail);
      return false;
    }
    if (HeaderValid(buf_.data() + pos_)) return true;
    Consume(1);
  }
}

StatusOr<bool> TfRecordReader::Next(std::string* out, bool verify_data) {
  for (;;) {
    uint64_t len = 0;
    STRATA_ASSIGN_OR_RETURN(Check check, CheckRecord(verify_data, &len));
    switch (check) {
      case Check::kEnd: return false;
      case Check::kOk:
        last_offset_ = offset_;
        ++records_;
        if (out != nullptr) out->assign(buf_.data() + pos_ + kTfRecordHeaderBytes, static_cast<size_t>(len));
        return verify_data ? ConsumeRecord(len) : SkipUnverified(len);
      case Check::kTruncated:
        if (!options_.skip_corrupt) return Damage(check);
        ++corrupt_;
        Consume(end_ - pos_);
        return false;
      case Check::kBadData:
        if (!options_.skip_corrupt) return Damage(check);
        ++corrupt_;
        Consume(static_cast<size_t>(len + kTfRecordHeaderBytes + kTfRecordFooterBytes));
        break;
      case Check::kBadHeader:
        if (!options_.skip_corrupt) return Damage(check);
        ++corrupt_;
        {
          STRATA_ASSIGN_OR_RETURN(bool found, Resync());
          if (!found) return false;
        }
        break;
    }
  }
}

StatusOr<bool> TfRecordReader::ConsumeRecord(uint64_t len) {
  Consume(static_cast<size_t>(len + kTfRecordHeaderBytes + kTfRecordFooterBytes));
  return true;
}

// The header is valid; skips data and footer without reading them into the buffer when they are not there yet.
StatusOr<bool> TfRecordReader::SkipUnverified(uint64_t len) {
  const uint64_t total = len + kTfRecordHeaderBytes + kTfRecordFooterBytes;
  const size_t have = end_ - pos_;
  if (total <= have) {
    Consume(static_cast<size_t>(total));
    return true;
  }
  Consume(have);
  STRATA_ASSIGN_OR_RETURN(uint64_t skipped, in_->Skip(total - have));
  offset_ += skipped;
  if (skipped < total - have) {
    eof_ = true;
    --records_;
    detail_ = StrCat("header says ", len, " data bytes, the stream ends ", total - have - skipped, " bytes early");
    offset_ = last_offset_;
    if (!options_.skip_corrupt) return Damage(Check::kTruncated);
    ++corrupt_;
    return false;
  }
  return true;
}

StatusOr<bool> TfRecordReader::ReadRecord(std::string* out) { return Next(out, /*verify_data=*/true); }

StatusOr<bool> TfRecordReader::SkipRecord(bool verify_data) { return Next(nullptr, verify_data); }

StatusOr<bool> LooksLikeGzipTfRecordFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto in, OpenFileInput(path));
  char head[kTfRecordHeaderBytes];
  size_t n = 0;
  while (n < sizeof(head)) {
    STRATA_ASSIGN_OR_RETURN(size_t got, in->Read(head + n, sizeof(head) - n));
    if (got == 0) break;
    n += got;
  }
  if (SniffCompression(std::string_view(head, n)) != Compression::kGzip) return false;
  return n < kTfRecordHeaderBytes || !HeaderValid(head);
}

StatusOr<int64_t> CountTfRecords(const std::string& path, Compression compression, bool verify_data) {
  TfRecordReaderOptions options;
  options.compression = compression;
  STRATA_ASSIGN_OR_RETURN(auto reader, TfRecordReader::Open(path, options));
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(bool more, reader->SkipRecord(verify_data));
    if (!more) return reader->records_read();
  }
}

}  // namespace strata::io
