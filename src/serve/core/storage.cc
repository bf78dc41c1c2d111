#include "serve/core/storage.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/file_util.h"

namespace strata::serve {

namespace fs = std::filesystem;

bool ParseVersionNumber(const std::string& name, int64_t* version) {
  if (name.empty()) return false;
  size_t start = 0;
  bool negative = false;
  if (name[0] == '+' || name[0] == '-') {
    negative = name[0] == '-';
    start = 1;
  }
  if (start == name.size()) return false;
  for (size_t i = start; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  uint64_t v = 0;
  auto r = std::from_chars(name.data() + start, name.data() + name.size(), v);
  if (r.ec != std::errc() || r.ptr != name.data() + name.size()) return false;
  if (!negative && v > static_cast<uint64_t>(INT64_MAX)) return false;
  if (negative && v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
  *version = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

namespace {

std::string StripFileScheme(const std::string& p) { return p.rfind("file://", 0) == 0 ? p.substr(7) : p; }

// Explains a base path without numeric children: what it holds and what the layout should be.
Status ExplainLayout(const std::string& base, const std::string& model_name, const std::vector<std::string>& children) {
  const std::string expected = StrCat("expected ", base, "/<version>/", kModelFileName, " with <version> a number");
  auto has = [&](const std::string& n) { return std::find(children.begin(), children.end(), n) != children.end(); };
  bool has_onnx = false, has_tflite = false;
  for (const auto& c : children) {
    if (c.size() > 5 && c.compare(c.size() - 5, 5, ".onnx") == 0) has_onnx = true;
    if (c.size() > 7 && c.compare(c.size() - 7, 7, ".tflite") == 0) has_tflite = true;
  }
  if (has_onnx || has_tflite)
    return NotFoundError("No versions of servable ", model_name, " found under base path ", base,
                         ": base_path looks like a model version directory (it holds a ",
                         has_onnx ? ".onnx" : ".tflite", " file); ", expected,
                         ", so point base_path at the directory above it and put the model in a numbered directory");
  if (has("saved_model.pb"))
    return NotFoundError("No versions of servable ", model_name, " found under base path ", base,
                         ": base_path looks like a model version directory (it holds a TensorFlow SavedModel, "
                         "saved_model.pb); expected ", base, "/<version>/saved_model.pb with <version> a number, so "
                         "point base_path at the directory above it and put the model in a numbered directory");
  std::string listing = children.empty() ? "it is empty" : StrCat("found ", StrJoin(children, ", "));
  if (children.size() > 20) {
    std::vector<std::string> head(children.begin(), children.begin() + 20);
    listing = StrCat("found ", StrJoin(head, ", "), " and ", children.size() - 20, " more");
  }
  return NotFoundError("No versions of servable ", model_name, " found under base path ", base,
                       ". Did you forget to name your leaf directory as a number (eg. '/1/')? ", listing, "; ",
                       expected);
}

}  // namespace

BasePathScan ScanBasePath(const std::string& base_path, const std::string& model_name) {
  BasePathScan scan;
  const std::string base = StripFileScheme(base_path);
  std::error_code ec;
  if (!fs::exists(base, ec)) {
    scan.problem = NotFoundError("Could not find base path ", base, " for servable ", model_name);
    return scan;
  }
  if (!fs::is_directory(base, ec)) {
    const bool onnx = base.size() > 5 && base.compare(base.size() - 5, 5, ".onnx") == 0;
    scan.problem = NotFoundError("base path ", base, " of servable ", model_name, " is a file, not a directory",
                                 onnx ? " (it is the model file itself)" : "", "; expected ",
                                 onnx ? Dirname(Dirname(base)) : base, "/<version>/", kModelFileName);
    return scan;
  }
  std::vector<std::string> children;
  std::map<int64_t, std::string> names;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    children.push_back(name);
    int64_t v;
    if (!ParseVersionNumber(name, &v)) continue;
    auto [pos, inserted] = names.emplace(v, name);
    if (!inserted) {
      scan.warnings.push_back(StrCat("version directories ", pos->second, " and ", name, " of servable ", model_name,
                                     " both mean version ", v, "; using ", std::min(pos->second, name)));
      pos->second = std::min(pos->second, name);
    }
  }
  if (ec) {
    scan.problem = UnavailableError("Could not list base path ", base, " of servable ", model_name, ": ", ec.message());
    return scan;
  }
  for (const auto& [v, name] : names) scan.versions[v] = JoinPath(base, name);
  if (scan.versions.empty()) {
    std::sort(children.begin(), children.end());
    scan.problem = ExplainLayout(base, model_name, children);
  }
  return scan;
}

std::vector<int64_t> ApplyVersionPolicy(const VersionPolicy& policy, const std::vector<int64_t>& available,
                                        std::vector<std::string>* warnings) {
  std::vector<int64_t> sorted = available;
  std::sort(sorted.begin(), sorted.end());
  switch (policy.kind) {
    case VersionPolicy::Kind::kAll:
      return sorted;
    case VersionPolicy::Kind::kLatest: {
      const size_t n = policy.num_versions == 0 ? 1 : policy.num_versions;
      if (sorted.size() > n) sorted.erase(sorted.begin(), sorted.end() - n);
      return sorted;
    }
    case VersionPolicy::Kind::kSpecific: {
      std::vector<int64_t> out;
      for (int64_t v : policy.versions) {
        if (std::binary_search(sorted.begin(), sorted.end(), v))
          out.push_back(v);
        else if (warnings)
          warnings->push_back(StrCat("version ", v, " named by the 'specific' policy is not in the base path"));
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
  }
  return {};
}

DirFingerprint FingerprintDir(const std::string& dir) {
  DirFingerprint fp;
  std::error_code ec;
  auto consider = [&](const fs::directory_entry& e) {
    std::error_code e2;
    const auto t = fs::last_write_time(e.path(), e2);
    if (!e2) {
      const auto sys =
          std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(t));
      fp.newest_mtime = std::max(fp.newest_mtime, sys);
    }
    if (e.is_regular_file(e2)) {
      ++fp.files;
      fp.bytes += static_cast<int64_t>(e.file_size(e2));
    }
  };
  consider(fs::directory_entry(dir, ec));
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) consider(*it);
  return fp;
}

}  // namespace strata::serve
