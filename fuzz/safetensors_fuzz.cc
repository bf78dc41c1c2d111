// libFuzzer target for the strict safetensors reader (the checkpoint reader's file format). Whatever parses must
// serialise to a file that parses to the same tensors and metadata and serialises to the same bytes again.
// Build: make fuzz; run: build-fuzz/fuzz/safetensors_fuzz fuzz/corpus/safetensors. fuzz/replay_main.cc replays the
// corpus as a normal test.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = strata::io::ParseSafetensors(bytes, "fuzz");
  if (!parsed.ok()) {
    if (parsed.status().message().find("fuzz") == std::string::npos) __builtin_trap();  // errors name the file
    return 0;
  }
  auto once = strata::io::SerializeSafetensors(parsed->tensors, parsed->metadata);
  if (!once.ok()) __builtin_trap();
  auto back = strata::io::ParseSafetensors(*once, "fuzz again");
  if (!back.ok() || back->metadata != parsed->metadata || back->tensors.size() != parsed->tensors.size())
    __builtin_trap();
  for (const auto& [name, t] : parsed->tensors) {
    const strata::Tensor* u = back->Find(name);
    if (u == nullptr || u->dtype() != t.dtype() || u->shape() != t.shape() ||
        std::memcmp(u->raw_data(), t.raw_data(), t.byte_size()) != 0)
      __builtin_trap();
  }
  auto twice = strata::io::SerializeSafetensors(back->tensors, back->metadata);
  if (!twice.ok() || *twice != *once) __builtin_trap();
  return 0;
}
