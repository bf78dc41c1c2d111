// ComputeManifest: the dataset version. Every file matching the pattern is listed with its size, SHA-256 and, for
// TFRecord files, its record count (all data CRCs checked); the manifest hash is the SHA-256 of those lines, so it
// changes when any byte, file name or file set changes and not when the dataset moves to another directory.
#include <algorithm>

#include "core/file_util.h"
#include "data/dataset_impl.h"
#include "io/sha256.h"
#include "io/stream.h"
#include "io/tfrecord.h"

namespace strata::data {
namespace {

// The directory part of a glob pattern before its first wildcard: "/d/fm/train-*.tfrecord" -> "/d/fm".
std::string BaseDir(const std::string& pattern) {
  const size_t wild = pattern.find_first_of("*?[");
  const std::string fixed = pattern.substr(0, wild);
  const size_t slash = fixed.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : fixed.substr(0, slash);
}

std::string Relative(const std::string& path, const std::string& base) {
  if (base == ".") return path.rfind("./", 0) == 0 ? path.substr(2) : path;
  const std::string prefix = base == "/" ? "/" : base + "/";
  return path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

// Records of a TFRecord file (compression sniffed), or -1 when the file is not a valid TFRecord stream.
int64_t CountRecords(const std::string& path) {
  auto sniffed = io::SniffFileCompression(path);
  if (!sniffed.ok()) return -1;
  auto n = io::CountTfRecords(path, *sniffed, /*verify_data=*/true);
  if (!n.ok() && *sniffed != io::Compression::kNone)
    n = io::CountTfRecords(path, io::Compression::kNone, /*verify_data=*/true);  // a raw file that looked compressed
  return n.ok() ? *n : -1;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string Manifest::ToJson() const {
  std::string out = StrCat("{\n  \"version\": ", JsonString("sha256:" + hash), ",\n  \"base_dir\": ",
                           JsonString(base_dir), ",\n  \"total_bytes\": ", total_bytes, ",\n  \"total_records\": ",
                           total_records, ",\n  \"files\": [");
  for (size_t i = 0; i < files.size(); ++i) {
    const ManifestFile& f = files[i];
    out += StrCat(i ? "," : "", "\n    {\"path\": ", JsonString(f.path), ", \"bytes\": ", f.bytes,
                  ", \"records\": ", f.records, ", \"sha256\": ", JsonString(f.sha256), "}");
  }
  return out + "\n  ]\n}\n";
}

StatusOr<Manifest> ComputeManifest(const std::string& pattern) {
  STRATA_ASSIGN_OR_RETURN(auto paths, Glob(pattern));
  paths.erase(std::remove_if(paths.begin(), paths.end(), [](const std::string& p) { return IsDirectory(p); }),
              paths.end());
  if (paths.empty()) return NotFoundError("manifest: no files match '", pattern, "'");
  Manifest m;
  m.base_dir = BaseDir(pattern);
  for (const std::string& p : paths) {
    ManifestFile f;
    f.path = Relative(p, m.base_dir);
    STRATA_ASSIGN_OR_RETURN(f.sha256, io::Sha256File(p, &f.bytes));
    f.records = CountRecords(p);
    m.files.push_back(std::move(f));
  }
  std::sort(m.files.begin(), m.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  io::Sha256 h;
  for (const ManifestFile& f : m.files) {
    h.Update(StrCat(f.path, "\t", f.bytes, "\t", f.records, "\t", f.sha256, "\n"));
    m.total_bytes += f.bytes;
    if (f.records > 0) m.total_records += f.records;
  }
  m.hash = h.FinishHex();
  return m;
}

}  // namespace strata::data
