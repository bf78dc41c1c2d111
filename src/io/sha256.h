// SHA-256 (FIPS 180-4), used for content hashes: dataset manifests (the dataset version a checkpoint records) and
// duplicate detection.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::io {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // The digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  // Finish() as 64 lowercase hex digits.
  std::string FinishHex();

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(std::string_view data);
// Hashes a file in 1 MiB pieces; also returns its size in bytes.
StatusOr<std::string> Sha256File(const std::string& path, uint64_t* size = nullptr);

}  // namespace strata::io
