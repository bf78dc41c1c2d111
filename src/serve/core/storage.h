// Version discovery under a model's base path (TF Serving's FileSystemStoragePathSource): numeric child
// directories are versions; the version policy picks the aspired ones; a layout that looks wrong gets a message
// that explains the expected <base_path>/<version>/model.onnx layout.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "serve/core/config.h"

namespace strata::serve {

inline constexpr char kModelFileName[] = "model.onnx";
// A version directory without model.onnx may hold a TensorFlow Lite flatbuffer instead (or a SavedModel).
inline constexpr char kTfliteModelFileName[] = "model.tflite";

struct BasePathScan {
  std::map<int64_t, std::string> versions;  // version number → directory
  std::vector<std::string> warnings;        // duplicate numbers, missing specific versions
  // Non-OK when the base path is missing or has no numeric version dirs; the message says what was found and what
  // the layout should be ("base_path ... looks like a model version directory ...").
  Status problem;
};

// Lists the numeric children of `base_path` (names that parse as int64, like TF: "1", "007", "-3"; not "v1").
// A "file://" prefix is stripped.
BasePathScan ScanBasePath(const std::string& base_path, const std::string& model_name);

// The versions `policy` aspires to among `available` (ascending).
std::vector<int64_t> ApplyVersionPolicy(const VersionPolicy& policy, const std::vector<int64_t>& available,
                                        std::vector<std::string>* warnings);

// Newest modification time (and file count) of everything under `dir`, for the stability check: a version dir is
// loaded only after nothing in it changed for a while, so a half-copied version is never loaded.
struct DirFingerprint {
  std::chrono::system_clock::time_point newest_mtime{};
  int64_t files = 0;
  int64_t bytes = 0;
  bool operator==(const DirFingerprint& o) const {
    return newest_mtime == o.newest_mtime && files == o.files && bytes == o.bytes;
  }
};
DirFingerprint FingerprintDir(const std::string& dir);

// Parses a version directory name the way TF does (absl::SimpleAtoi: optional sign, decimal digits, int64).
bool ParseVersionNumber(const std::string& name, int64_t* version);

}  // namespace strata::serve
