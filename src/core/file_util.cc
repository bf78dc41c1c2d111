#include "core/file_util.h"
#include "strata/util.h"  // Glob is public: its declaration there must agree with file_util.h's

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace strata {

StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("file '", path, "' does not exist");
    return PermissionDeniedError("cannot open '", path, "': ", std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError("'", path, "' is a directory, expected a file");
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  // Files that grow, or report size 0 (procfs), are read to their end.
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

std::string_view FileTypeName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "a special file";
  }
}

StatusOr<RegularFile> RegularFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError("file '", path, "' does not exist");
    if (err == EACCES || err == EPERM) return PermissionDeniedError("cannot open '", path, "': ", std::strerror(err));
    if (err == ENXIO)  // a socket, or a FIFO opened for writing without a reader
      return InvalidArgumentError("'", path, "' is a socket or another special file, not a regular file");
    return UnavailableError("cannot open '", path, "': ", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return UnavailableError("cannot stat '", path, "': ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError("'", path, "' is ", FileTypeName(st.st_mode), ", not a regular file");
  }
  // Regular files ignore O_NONBLOCK, but reads should block as usual should the file system care.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return RegularFile(fd, path, static_cast<int64_t>(st.st_size));
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), size_(other.size_) {
  other.fd_ = -1;
}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegularFile::ReadAt(int64_t offset, size_t n, char* out) const {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, out + got, n - got, static_cast<off_t>(offset + static_cast<int64_t>(got)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError("reading '", path_, "' failed: ", std::strerror(errno));
    if (r == 0)
      return DataLossError("'", path_, "' ended after ", offset + static_cast<int64_t>(got),
                           " bytes, expected at least ", offset + static_cast<int64_t>(n),
                           " (the file shrank while it was read?)");
    got += static_cast<size_t>(r);
  }
  return Status::OK();
}

StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) {
  STRATA_ASSIGN_OR_RETURN(RegularFile f, RegularFile::Open(path));
  if (f.size() > max_bytes)
    return InvalidArgumentError("'", path, "' is ", f.size(), " bytes, more than the ", max_bytes,
                                " bytes allowed here");
  std::string out(static_cast<size_t>(f.size()), '\0');
  STRATA_RETURN_IF_ERROR(f.ReadAt(0, out.size(), out.data()));
  return out;
}

Status FsyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return UnavailableError("cannot open directory '", dir, "' to sync it: ", std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
  return Status::OK();
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  const std::string tmp = StrCat(path, ".tmp.", static_cast<int64_t>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PermissionDeniedError("cannot create '", tmp, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return UnavailableError("writing '", tmp, "' failed: ", std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return UnavailableError("fsync of '", tmp, "' failed: ", std::strerror(err));
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return UnavailableError("renaming '", tmp, "' to '", path, "' failed: ", std::strerror(err));
  }
  return FsyncDirectory(Dirname(path));
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  if (b.front() == '/') return std::string(b);
  std::string out(a);
  if (out.back() != '/') out += '/';
  out += b;
  return out;
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool PathIsInside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const auto base = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec) return false;
  const auto full = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return false;
  auto b = base.begin();
  auto f = full.begin();
  for (; b != base.end(); ++b, ++f) {
    if (b->empty()) continue;  // trailing slash
    if (f == full.end() || *b != *f) return false;
  }
  return true;
}

StatusOr<std::vector<std::string>> Glob(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) return UnavailableError("glob '", pattern, "' failed (code ", rc, ")");
  std::sort(out.begin(), out.end());
  return out;
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return PermissionDeniedError("cannot create directory '", path, "': ", ec.message());
  return Status::OK();
}

}  // namespace strata
