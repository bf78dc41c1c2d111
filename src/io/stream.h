// Byte streams under the record readers and writers: plain files, memory, and the zlib (ZLIB/GZIP) wrappers that
// TFRecord's compressed variants use (specs/tf-formats.md §1.5). Small on purpose: read, skip, write, flush, close.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::io {

// TFRecord compression_type: "" (none), "ZLIB" or "GZIP". There is no auto-detection, as in TF.
enum class Compression { kNone, kZlib, kGzip };
// Parses "", "NONE", "ZLIB", "GZIP" (case-insensitive).
StatusOr<Compression> ParseCompression(std::string_view name);
std::string_view CompressionName(Compression c);  // "", "ZLIB", "GZIP"
// Guesses from the first bytes of a file (gzip magic 1f 8b, zlib header 78 xx with a valid check); for tools that
// inspect unknown files, never for the training reader.
Compression SniffCompression(std::string_view head);
// SniffCompression of the first bytes of a file.
StatusOr<Compression> SniffFileCompression(const std::string& path);

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `n` bytes into `dst`; returns 0 only at the end of the stream.
  virtual StatusOr<size_t> Read(char* dst, size_t n) = 0;
  // Skips up to `n` bytes; returns how many were skipped (fewer only at the end). Files seek; others read.
  virtual StatusOr<uint64_t> Skip(uint64_t n);
  // The path, or a name such as "<memory>", for error messages.
  virtual const std::string& name() const = 0;
};

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Write(std::string_view bytes) = 0;
  // Hands everything written so far to the operating system (for compressed streams: a zlib sync flush).
  virtual Status Flush() = 0;
  // Flushes and releases the stream; further writes fail. Closing twice is OK.
  virtual Status Close() = 0;
};

StatusOr<std::unique_ptr<InputStream>> OpenFileInput(const std::string& path);
std::unique_ptr<InputStream> MemoryInput(std::string data, std::string name = "<memory>");
// Decompresses `raw`; kNone returns `raw` unchanged. `buffer_size` bytes of compressed input are read at a time.
// GZIP accepts several concatenated members as one stream; ZLIB stops at the end of its stream, as TF does.
std::unique_ptr<InputStream> DecompressingInput(std::unique_ptr<InputStream> raw, Compression c,
                                                size_t buffer_size = 256 << 10);

// Creates (truncates) `path`. With `atomic`, bytes go to "<path>.tmp.<pid>" and Close() fsyncs and renames it over
// `path`, so readers never see a partial file; destroying the stream unclosed removes the temporary file (a
// non-atomic file is flushed and closed instead).
StatusOr<std::unique_ptr<OutputStream>> OpenFileOutput(const std::string& path, bool atomic = false);
// Compresses into `raw` with TF's writer settings (level 6 unless given, mem_level 9). kNone returns `raw`.
// Only Close() writes the end of the compressed stream; destroying it unclosed leaves the stream unfinished.
std::unique_ptr<OutputStream> CompressingOutput(std::unique_ptr<OutputStream> raw, Compression c, int level = -1);

}  // namespace strata::io
