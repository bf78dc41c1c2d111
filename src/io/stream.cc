#include "io/stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/file_util.h"
#include "core/logging.h"

namespace strata::io {

StatusOr<Compression> ParseCompression(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty() || upper == "NONE") return Compression::kNone;
  if (upper == "ZLIB") return Compression::kZlib;
  if (upper == "GZIP") return Compression::kGzip;
  return InvalidArgumentError("compression type must be \"\" (none), \"ZLIB\" or \"GZIP\", got \"", name, "\"");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kZlib: return "ZLIB";
    case Compression::kGzip: return "GZIP";
    case Compression::kNone: break;
  }
  return "";
}

Compression SniffCompression(std::string_view head) {
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b)
    return Compression::kGzip;
  if (head.size() >= 2) {
    const auto cmf = static_cast<uint8_t>(head[0]);
    const auto flg = static_cast<uint8_t>(head[1]);
    // Deflate method, window <= 32K, FCHECK: (CMF*256 + FLG) is a multiple of 31.
    if ((cmf & 0x0F) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0) return Compression::kZlib;
  }
  return Compression::kNone;
}

StatusOr<Compression> SniffFileCompression(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto in, OpenFileInput(path));
  std::string head(2, '\0');
  STRATA_ASSIGN_OR_RETURN(size_t n, in->Read(head.data(), head.size()));
  head.resize(n);
  return SniffCompression(head);
}

StatusOr<uint64_t> InputStream::Skip(uint64_t n) {
  char scratch[16384];
  uint64_t done = 0;
  while (done < n) {
    STRATA_ASSIGN_OR_RETURN(size_t got, Read(scratch, static_cast<size_t>(std::min<uint64_t>(n - done, sizeof(scratch)))));
    if (got == 0) break;
    done += got;
  }
  return done;
}

namespace {

class FileInput final : public InputStream {
 public:
  FileInput(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  ~FileInput() override { ::close(fd_); }

  StatusOr<size_t> Read(char* dst, size_t n) override {
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) return UnavailableError("reading '", name_, "' failed: ", std::strerror(errno));
    }
  }

  StatusOr<uint64_t> Skip(uint64_t n) override {
    const off_t cur = ::lseek(fd_, 0, SEEK_CUR);
    struct stat st {};
    if (cur < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return InputStream::Skip(n);
    const uint64_t left = st.st_size > cur ? static_cast<uint64_t>(st.st_size - cur) : 0;
    const uint64_t step = std::min(n, left);
    if (::lseek(fd_, static_cast<off_t>(step), SEEK_CUR) < 0)
      return UnavailableError("seeking in '", name_, "' failed: ", std::strerror(errno));
    return step;
  }

  const std::string& name() const override { return name_; }

 private:
  int fd_;
  std::string name_;
};

class MemoryInputStream final : public InputStream {
 public:
  MemoryInputStream(std::string data, std::string name) : data_(std::move(data)), name_(std::move(name)) {}
  StatusOr<size_t> Read(char* dst, size_t n) override {
    const size_t k = std::min(n, data_.size() - pos_);
    if (k > 0) std::memcpy(dst, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  StatusOr<uint64_t> Skip(uint64_t n) override {
    const uint64_t k = std::min<uint64_t>(n, data_.size() - pos_);
    pos_ += static_cast<size_t>(k);
    return k;
  }
  const std::string& name() const override { return name_; }

 private:
  std::string data_;
  size_t pos_ = 0;
  std::string name_;
};

class FileOutput final : public OutputStream {
 public:
  FileOutput(int fd, std::string path, std::string tmp) : fd_(fd), path_(std::move(path)), tmp_(std::move(tmp)) {}
  ~FileOutput() override {
    if (fd_ < 0) return;
    if (!tmp_.empty()) {  // an unfinished atomic write leaves nothing behind
      ::close(fd_);
      ::unlink(tmp_.c_str());
      return;
    }
    Status s = Close();
    if (!s.ok()) LogError("closing ", path_, ": ", s.message());
  }

  Status Write(std::string_view bytes) override {
    if (fd_ < 0) return FailedPreconditionError("write to closed file '", path_, "'");
    if (buf_.size() + bytes.size() > kBufferSize) STRATA_RETURN_IF_ERROR(Drain());
    if (bytes.size() >= kBufferSize) return WriteAll(bytes);
    buf_.append(bytes);
    return Status::OK();
  }

  Status Flush() override {
    if (fd_ < 0) return FailedPreconditionError("flush of closed file '", path_, "'");
    return Drain();
  }

  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = Drain();
    if (s.ok() && !tmp_.empty() && ::fsync(fd_) != 0) s = UnavailableError("fsync of '", tmp_, "' failed: ", std::strerror(errno));
    if (::close(fd_) != 0 && s.ok()) s = UnavailableError("closing '", path_, "' failed: ", std::strerror(errno));
    fd_ = -1;
    if (!tmp_.empty()) {
      if (s.ok() && ::rename(tmp_.c_str(), path_.c_str()) != 0)
        s = UnavailableError("renaming '", tmp_, "' to '", path_, "' failed: ", std::strerror(errno));
      if (!s.ok()) ::unlink(tmp_.c_str());
      if (s.ok()) s = FsyncDirectory(Dirname(path_));
      tmp_.clear();
    }
    return s;
  }

 private:
  static constexpr size_t kBufferSize = 256 << 10;

  Status Drain() {
    Status s = WriteAll(buf_);
    buf_.clear();
    return s;
  }

  Status WriteAll(std::string_view bytes) {
    const std::string& target = tmp_.empty() ? path_ : tmp_;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return UnavailableError("writing '", target, "' failed: ", std::strerror(errno));
      done += static_cast<size_t>(w);
    }
    return Status::OK();
  }

  int fd_;
  std::string path_;
  std::string tmp_;  // non-empty for an atomic write in progress
  std::string buf_;
};

}  // namespace

StatusOr<std::unique_ptr<InputStream>> OpenFileInput(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("file '", path, "' does not exist");
    return PermissionDeniedError("cannot open '", path, "': ", std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError("'", path, "' is a directory, expected a file");
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<InputStream>(new FileInput(fd, path));
}

std::unique_ptr<InputStream> MemoryInput(std::string data, std::string name) {
  return std::make_unique<MemoryInputStream>(std::move(data), std::move(name));
}

StatusOr<std::unique_ptr<OutputStream>> OpenFileOutput(const std::string& path, bool atomic) {
  const std::string target = atomic ? StrCat(path, ".tmp.", static_cast<int64_t>(::getpid())) : path;
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PermissionDeniedError("cannot create '", target, "': ", std::strerror(errno));
  return std::unique_ptr<OutputStream>(new FileOutput(fd, path, atomic ? target : std::string()));
}

}  // namespace strata::io
