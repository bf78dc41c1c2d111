#include "serve/core/config.h"

#include <set>

namespace strata::serve {

std::string VersionPolicy::ToString() const {
  switch (kind) {
    case Kind::kLatest:
      return StrCat("latest{num_versions: ", num_versions == 0 ? 1u : num_versions, "}");
    case Kind::kAll:
      return "all{}";
    case Kind::kSpecific:
      return StrCat("specific{versions: ", StrJoin(versions, ", "), "}");
  }
  return "?";
}

Status ValidateModelName(const std::string& name) {
  if (name.empty()) return InvalidArgumentError("model name is empty");
  if (name == "." || name == "..")
    return InvalidArgumentError("model name '", name, "' is not allowed: it is a path component");
  for (unsigned char c : name) {
    if (c == '/' || c == '\\' || c == ':' || c < 0x20 || c == 0x7f) {
      return InvalidArgumentError("model name '", name, "' contains a path or URL separator or a control character (",
                                  c < 0x20 || c == 0x7f ? std::string("\\x") + "0123456789abcdef"[c >> 4] +
                                                              "0123456789abcdef"[c & 15]
                                                        : std::string(1, static_cast<char>(c)),
                                  "); model names may not contain '/', '\\\\', ':' or control characters");
    }
  }
  return Status::OK();
}

namespace {

bool IsUri(const std::string& path) {
  const size_t p = path.find("://");
  return p != std::string::npos && p > 0;
}

}  // namespace

Status ValidateModelConfigList(const std::vector<ModelConfig>& configs) {
  std::set<std::string> names;
  for (const ModelConfig& c : configs) {
    STRATA_RETURN_IF_ERROR(ValidateModelName(c.name));
    if (!names.insert(c.name).second)
      return InvalidArgumentError("Illegal to list model ", c.name, " multiple times in config list");
    if (c.base_path.empty()) return InvalidArgumentError("Model ", c.name, " has an empty base_path");
    if (IsUri(c.base_path)) {
      if (c.base_path.rfind("file://", 0) != 0)
        return UnimplementedError("Model ", c.name, " has base_path ", c.base_path,
                                  ": only local paths and file:// URIs are supported by this server");
    } else if (c.base_path[0] != '/') {
      return InvalidArgumentError("Expected model ", c.name, " to have an absolute path or URI; got base_path()=",
                                  c.base_path);
    }
    if (c.platform != "tensorflow" && c.platform != "onnx")
      return InvalidArgumentError("Model ", c.name, " requests unsupported platform ", c.platform,
                                  " (this server accepts \"tensorflow\" and \"onnx\", and serves ONNX models)");
    if (c.policy.kind == VersionPolicy::Kind::kSpecific && c.policy.versions.empty())
      return InvalidArgumentError("Model ", c.name, ": version policy 'specific' lists no versions");
    for (const auto& [label, version] : c.labels) {
      if (label.empty()) return InvalidArgumentError("Model ", c.name, ": empty version label");
      for (char ch : label)
        if (ch == '/' || ch == ':')
          return InvalidArgumentError("Model ", c.name, ": version label '", label, "' contains '/' or ':'");
    }
  }
  return Status::OK();
}

Status ValidateBatchingOptions(const BatchingOptions& o) {
  if (o.max_batch_size < 1) return InvalidArgumentError("max_batch_size must be positive; was ", o.max_batch_size);
  if (o.batch_timeout_micros < 0)
    return InvalidArgumentError("batch_timeout_micros must be non-negative; was ", o.batch_timeout_micros);
  if (o.max_enqueued_batches < 1)
    return InvalidArgumentError("max_enqueued_batches must be positive; was ", o.max_enqueued_batches);
  if (o.num_batch_threads < 0)
    return InvalidArgumentError("num_batch_threads must be positive; was ", o.num_batch_threads);
  if (o.max_execution_batch_size < 0)
    return InvalidArgumentError("max_execution_batch_size must be positive; was ", o.max_execution_batch_size);
  int64_t prev = 0;
  for (int64_t s : o.allowed_batch_sizes) {
    if (s <= prev)
      return InvalidArgumentError("allowed_batch_sizes entries must be monotonically increasing; got ",
                                  StrJoin(o.allowed_batch_sizes, ", "));
    prev = s;
  }
  if (!o.allowed_batch_sizes.empty()) {
    const int64_t limit = o.enable_large_batch_splitting && o.max_execution_batch_size > 0
                              ? o.max_execution_batch_size
                              : o.max_batch_size;
    if (o.allowed_batch_sizes.back() != limit)
      return InvalidArgumentError("Last entry in allowed_batch_sizes must match max_batch_size; last entry was ",
                                  o.allowed_batch_sizes.back(), "; expected ", limit);
  }
  return Status::OK();
}

}  // namespace strata::serve
