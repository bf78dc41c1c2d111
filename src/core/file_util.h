// Files: whole-file reads, crash-safe writes (temp file, fsync, rename) and path checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata {

StatusOr<std::string> ReadFile(const std::string& path);

// An open regular file, for loaders of untrusted files (models, weights, headers). Opening never blocks: a FIFO, a
// device, a socket or a directory is refused with an error that says what the path is ("'<path>' is a FIFO, not a
// regular file"), so a special file dropped where a model belongs cannot hang a load thread or feed it without end.
// The size is the one fstat saw at open.
class RegularFile {
 public:
  static StatusOr<RegularFile> Open(const std::string& path);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; DATA_LOSS when the file ends first (it shrank since Open).
  Status ReadAt(int64_t offset, size_t n, char* out) const;

 private:
  RegularFile(int fd, std::string path, int64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  int64_t size_ = 0;
};

// The whole of a regular file (RegularFile::Open's checks), refused before anything is read when it is larger than
// `max_bytes` (INVALID_ARGUMENT naming the size and the limit).
StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes = INT64_MAX);

// "a FIFO", "a directory", "a character device", ... for the file type bits of a st_mode.
std::string_view FileTypeName(unsigned mode);
// Writes to "<path>.tmp.<pid>", fsyncs it, renames it over `path` and fsyncs the directory.
Status WriteFileAtomic(const std::string& path, std::string_view contents);
Status FsyncDirectory(const std::string& dir);
bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);
std::string JoinPath(std::string_view a, std::string_view b);
std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
// Whether `path`, once symlinks and ".." are resolved, lies inside directory `dir`.
bool PathIsInside(const std::string& path, const std::string& dir);
// Shell-style glob (*, ?, [..]) over the file system; results sorted.
StatusOr<std::vector<std::string>> Glob(const std::string& pattern);
Status MakeDirs(const std::string& path);

}  // namespace strata
