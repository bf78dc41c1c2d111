// libFuzzer target for the TensorBundle index reader (variables/variables.index of a SavedModel: a LevelDB-format
// table with Snappy blocks and BundleEntryProto values). Every input either parses or fails with an error naming
// the file; a parsed bundle's entries are then read (their shards do not exist: each read must fail cleanly).
// Build: make fuzz; run: build-fuzz/fuzz/tensor_bundle_fuzz DIR. tests/CMakeLists.txt replays it over TF Serving's
// test models (../shared/testdata/tf-serving) in normal builds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tf/tensor_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto table = strata::tf::ReadTable(bytes, "fuzz.index");
  if (!table.ok() && table.status().message().find("fuzz.index") == std::string::npos) __builtin_trap();
  auto bundle = strata::tf::TensorBundle::FromIndex(bytes, "/nonexistent/fuzz");
  if (!bundle.ok()) {
    if (bundle.status().message().find("/nonexistent/fuzz") == std::string::npos) __builtin_trap();
    return 0;
  }
  for (const auto& [key, e] : bundle->entries()) {
    auto t = bundle->Read(key);
    if (t.ok()) __builtin_trap();  // no shard exists, so nothing can be read
  }
  return 0;
}
