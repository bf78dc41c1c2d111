#include "io/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/random.h"

namespace strata::io {
namespace {

// Values from specs/tf-formats.md §0 and §1.3 (RFC 3720, TensorBoard's tests, TF-written records).
struct Known {
  std::string data;
  uint32_t crc;
};
std::vector<Known> KnownValues() {
  return {
      {"123456789", 0xE3069283u},
      {std::string(32, '\0'), 0x8A9136AAu},
      {std::string(8, '\0'), 0x8C28B28Au},
      {"abc", 0x364B3FB7u},
      {std::string("\x03\0\0\0\0\0\0\0", 8), 0x576C35E3u},
      {"", 0u},
  };
}

using Fn = uint32_t (*)(uint32_t, const void*, size_t);

void CheckImplementation(Fn fn) {
  for (const Known& k : KnownValues()) EXPECT_EQ(fn(0, k.data.data(), k.data.size()), k.crc) << "input size " << k.data.size();
  // Extending in pieces gives the CRC of the whole, for every split point.
  const std::string s = "123456789";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    const uint32_t head = fn(0, s.data(), cut);
    EXPECT_EQ(fn(head, s.data() + cut, s.size() - cut), 0xE3069283u) << "split at " << cut;
  }
}

TEST(Crc32cTest, PortableMatchesKnownValues) { CheckImplementation(&Crc32cExtendPortable); }

TEST(Crc32cTest, HardwareMatchesKnownValues) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "this CPU has no SSE4.2";
  CheckImplementation(&Crc32cExtendHardware);
}

TEST(Crc32cTest, DispatchedMatchesKnownValues) {
  for (const Known& k : KnownValues()) EXPECT_EQ(Crc32c(k.data), k.crc);
}

TEST(Crc32cTest, HardwareAndPortableAgreeOnRandomBuffersAndAlignments) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "this CPU has no SSE4.2";
  Rng rng(42);
  std::vector<uint8_t> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng.NextU32());
  for (size_t start = 0; start < 16; ++start) {
    for (size_t len : {0, 1, 7, 8, 9, 15, 63, 64, 65, 1000, 4096}) {
      ASSERT_EQ(Crc32cExtendHardware(0, buf.data() + start, len), Crc32cExtendPortable(0, buf.data() + start, len))
          << "start " << start << " len " << len;
    }
  }
}

TEST(Crc32cTest, MaskMatchesSpecExamples) {
  EXPECT_EQ(MaskCrc(0x576C35E3u), 0x0E4999B0u);
  EXPECT_EQ(MaskCrc(0x364B3FB7u), 0x21F1576Eu);
  EXPECT_EQ(MaskCrc(0u), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc(Crc32c(std::string("\x1a\x11" "CRC test, one two"))), 0x5794D08Au);
  Rng rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t c = rng.NextU32();
    EXPECT_EQ(UnmaskCrc(MaskCrc(c)), c);
  }
}

}  // namespace
}  // namespace strata::io
