// libFuzzer target for the TensorFlow Lite reader (src/tf/tflite_import.cc): every input either becomes a verified
// strata IR graph or fails with an error naming the file; nothing is read outside the input.
// Build: make fuzz; run: build-fuzz/fuzz/tflite_fuzz DIR. tests/CMakeLists.txt replays it over TF Serving's test
// models (../shared/testdata/tf-serving, whose .tflite files are the seeds) in normal builds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tf/tflite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);  // owned: the reader may keep no view
  auto model = strata::tf::ImportTflite(bytes, "fuzz.tflite");
  if (!model.ok() && model.status().message().find("fuzz.tflite") == std::string::npos) __builtin_trap();
  if (model.ok() && strata::graph::VerifyGraph(model->graph).ok() == false) __builtin_trap();
  return 0;
}
