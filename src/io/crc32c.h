// CRC-32C (Castagnoli), the checksum of TFRecord framing, TensorBoard event files and strata checkpoints, and the
// LevelDB-style mask that TFRecord applies to stored CRCs (specs/tf-formats.md §1.2).
//
// Crc32c() uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run time) and a portable
// slicing-by-8 table otherwise; both compute the same function and are tested against the spec's known values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::io {

// CRC-32C of `n` bytes (initial value 0xFFFFFFFF, reflected, final XOR 0xFFFFFFFF).
uint32_t Crc32c(const void* data, size_t n);
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }
// The CRC-32C of the concatenation a+b, given crc = Crc32c(a).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

// Rotate right by 15, then add 0xA282EAD8 (mod 2^32).
constexpr uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }
constexpr uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t r = masked - 0xA282EAD8u;
  return (r >> 17) | (r << 15);
}

// The two implementations, exposed so that tests can check each one; Crc32cExtend picks one of them.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n);
// Only valid when Crc32cHardwareAvailable().
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t n);
bool Crc32cHardwareAvailable();

}  // namespace strata::io
