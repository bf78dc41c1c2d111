// Dataset::Cache(path): elements on disk, persisting across runs (specs/tf-formats.md §4, cache semantics).
//  - "<path>.index" exists -> read mode: the upstream pipeline is not run at all.
//  - otherwise write mode, on the first GetNext: refuse if "<path>_0.index" exists or "<path>_0.lockfile" is held
//    by a live process; create the lockfile ("Created at: <unix seconds>", pid, host); stream elements into the
//    TFRecord file "<path>_0.data-00000-of-00001"; at the end rename it to "<path>.data-00000-of-00001", write
//    "<path>.index" (atomically, last) and delete the lockfile.
//  - an iterator destroyed before the end deletes "<path>_0.*" (its partial data and lockfile).
// Deviation from TF, on purpose: a lockfile left by a crashed process on this host (its pid no longer runs) is
// reported and removed instead of blocking every later run (tensorflow#18266). The files are strata's own format
// (TFRecord of serialised elements), not TF's TensorBundle.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/file_util.h"
#include "core/logging.h"
#include "data/dataset_impl.h"
#include "io/tfrecord.h"

namespace strata::data::internal {
namespace {

constexpr int64_t kMaxCachedElements = 10000000;
constexpr char kIndexMagic[] = "strata-cache v1";

std::string HostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// True when `contents` (a lockfile) names a process on this host that no longer exists.
bool LockIsStale(const std::string& contents) {
  auto field = [&](const std::string& key) -> std::string {
    const size_t at = contents.find(key + ": ");
    if (at == std::string::npos) return "";
    const size_t from = at + key.size() + 2;
    return contents.substr(from, contents.find('\n', from) - from);
  };
  const std::string pid = field("pid"), host = field("host");
  if (pid.empty() || host != HostName()) return false;
  const long p = std::strtol(pid.c_str(), nullptr, 10);
  return p > 0 && ::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH;
}

class FileCacheNode final : public DatasetNode {
 public:
  FileCacheNode(Dataset input, std::string path)
      : DatasetNode(StrCat("cache(", path, ")"), {std::move(input)}), path_(std::move(path)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override;

  std::string index() const { return path_ + ".index"; }
  std::string data() const { return path_ + ".data-00000-of-00001"; }
  std::string shard_index() const { return path_ + "_0.index"; }
  std::string shard_data() const { return path_ + "_0.data-00000-of-00001"; }
  std::string lockfile() const { return path_ + "_0.lockfile"; }

 private:
  std::string path_;
};

class ReadIt final : public Iterator {
 public:
  ReadIt(std::unique_ptr<io::TfRecordReader> reader, int64_t count) : reader_(std::move(reader)), count_(count) {}

  StatusOr<bool> GetNext(Element* out) override {
    STRATA_ASSIGN_OR_RETURN(bool more, reader_->ReadRecord(&record_));
    if (!more) {
      if (reader_->records_read() != count_)
        return DataLossError("cache file '", reader_->name(), "' holds ", reader_->records_read(),
                             " elements, its index says ", count_);
      return false;
    }
    Status s = DeserializeElement(record_, out);
    if (!s.ok()) return s.WithContext(StrCat("cache file '", reader_->name(), "' element ", reader_->records_read() - 1));
    return true;
  }

  StatusOr<int64_t> Skip(int64_t n) override {
    int64_t k = 0;
    while (k < n) {
      STRATA_ASSIGN_OR_RETURN(bool more, reader_->SkipRecord(/*verify_data=*/false));
      if (!more) break;
      ++k;
    }
    return k;
  }

 private:
  std::unique_ptr<io::TfRecordReader> reader_;
  int64_t count_;
  std::string record_;
};

class WriteIt final : public Iterator {
 public:
  WriteIt(const FileCacheNode* node, std::unique_ptr<Iterator> input) : node_(node), input_(std::move(input)) {}

  ~WriteIt() override {
    if (!started_ || finished_) return;
    LogWarning("The calling iterator did not fully read the dataset being cached to '", node_->data(),
               "'. The partially cached contents are deleted; use dataset.take(k).cache(path) instead of "
               "dataset.cache(path).take(k).");
    writer_.reset();
    ::unlink(node_->shard_data().c_str());
    ::unlink(node_->lockfile().c_str());
  }

  StatusOr<bool> GetNext(Element* out) override {
    if (finished_) return false;
    if (!started_) STRATA_RETURN_IF_ERROR(Start());
    STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
    if (!more) {
      STRATA_RETURN_IF_ERROR(Finish());
      return false;
    }
    if (written_ >= kMaxCachedElements)
      return InvalidArgumentError("cache: the input has more than ", kMaxCachedElements,
                                  " items, which is more than the cache limit");
    SerializeElement(*out, &record_);
    STRATA_RETURN_IF_ERROR(writer_->Write(record_));
    ++written_;
    return true;
  }

 private:
  Status Start() {
    if (FileExists(node_->shard_index()))
      return AlreadyExistsError("Existing cache files found: \n", node_->shard_index(), "\n", node_->shard_data(),
                                "\nTo continue delete the above files.");
    std::string contents = StrCat("Created at: ", static_cast<int64_t>(std::time(nullptr)), "\npid: ",
                                  static_cast<int64_t>(::getpid()), "\nhost: ", HostName(), "\n");
    int fd = ::open(node_->lockfile().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      auto held = ReadFile(node_->lockfile());
      const std::string previous = held.ok() ? *held : std::string("<unreadable>");
      if (!LockIsStale(previous))
        return AlreadyExistsError("There appears to be a concurrent caching iterator running - cache lockfile already "
                                  "exists ('", node_->lockfile(), "'). If you are sure no other running TF "
                                  "computations are using this cache prefix, delete the lockfile and re-initialize "
                                  "the iterator. Lockfile contents: ", previous);
      LogWarning("cache: removing the stale lockfile '", node_->lockfile(), "' of a process that no longer runs (",
                 previous, ")");
      ::unlink(node_->lockfile().c_str());
      fd = ::open(node_->lockfile().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) return PermissionDeniedError("cache: cannot create lockfile '", node_->lockfile(), "': ", std::strerror(errno));
    const bool wrote = ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
    ::close(fd);
    started_ = true;  // from here on the destructor cleans up
    if (!wrote) return UnavailableError("cache: cannot write lockfile '", node_->lockfile(), "'");
    STRATA_ASSIGN_OR_RETURN(writer_, io::TfRecordWriter::Open(node_->shard_data()));
    return Status::OK();
  }

  Status Finish() {
    STRATA_RETURN_IF_ERROR(writer_->Close());
    if (::rename(node_->shard_data().c_str(), node_->data().c_str()) != 0)
      return UnavailableError("cache: renaming '", node_->shard_data(), "' to '", node_->data(), "' failed: ",
                              std::strerror(errno));
    STRATA_RETURN_IF_ERROR(WriteFileAtomic(node_->index(), StrCat(kIndexMagic, "\nelements: ", written_, "\n")));
    ::unlink(node_->lockfile().c_str());
    finished_ = true;
    return Status::OK();
  }

  const FileCacheNode* node_;
  std::unique_ptr<Iterator> input_;
  std::unique_ptr<io::TfRecordWriter> writer_;
  std::string record_;
  int64_t written_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

StatusOr<std::unique_ptr<Iterator>> FileCacheNode::MakeIterator(const IteratorOptions& options) const {
  if (FileExists(index())) {
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(index()));
    const std::string prefix = StrCat(kIndexMagic, "\nelements: ");
    if (text.rfind(prefix, 0) != 0)
      return DataLossError("cache index '", index(), "' is not a strata cache index (expected it to start with \"",
                           kIndexMagic, "\")");
    const int64_t count = std::strtoll(text.c_str() + prefix.size(), nullptr, 10);
    STRATA_ASSIGN_OR_RETURN(auto reader, io::TfRecordReader::Open(data()));
    return std::unique_ptr<Iterator>(new ReadIt(std::move(reader), count));
  }
  STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
  return std::unique_ptr<Iterator>(new WriteIt(this, std::move(input)));
}

}  // namespace

Dataset MakeFileCache(const Dataset& input, std::string filename) {
  return MakeDataset<FileCacheNode>(input, std::move(filename));
}

}  // namespace strata::data::internal
