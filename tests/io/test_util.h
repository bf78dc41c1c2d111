// Helpers shared by the io and data tests: temporary paths, and Debian's python3 (numpy, protobuf, zlib, PIL) as an
// independent reader and writer of the formats under test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace strata::testing_util {

// A fresh path under gtest's temporary directory, unique per process.
inline std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/strata_" + std::to_string(::getpid()) + "_" + name;
}

// A path inside the source tree: $STRATA_SOURCE_DIR (set by ctest) or the tree this header was compiled from.
inline std::string SourcePath(const std::string& relative) {
  const char* root = std::getenv("STRATA_SOURCE_DIR");
  std::string base = root ? root : std::string(__FILE__).substr(0, std::string(__FILE__).find("/tests/"));
  return base + "/" + relative;
}

// Runs `code` with /usr/bin/python3 (Debian's, which has python3-protobuf and python3-numpy). Returns the exit
// status; a failing assertion in the script makes it non-zero and prints the reason.
inline int RunPython(const std::string& code) {
  static int counter = 0;
  const std::string script = TempPath("check_" + std::to_string(counter++) + ".py");
  std::ofstream(script) << code;
  return std::system(("/usr/bin/python3 " + script).c_str());
}

// Python source of a CRC-32C and TFRecord framing written in the test from the spec (specs/tf-formats.md §1), so
// that it shares no code with src/io.
inline const char* kPythonTfRecord = R"PY(
import struct
_T = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)
def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF
def mask(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
def frame(data):
    n = struct.pack('<Q', len(data))
    return n + struct.pack('<I', mask(crc32c(n))) + data + struct.pack('<I', mask(crc32c(data)))
def unframe(buf):
    out, off = [], 0
    while off < len(buf):
        n, = struct.unpack_from('<Q', buf, off)
        hc, = struct.unpack_from('<I', buf, off + 8)
        assert hc == mask(crc32c(buf[off:off + 8])), ('header crc', off)
        data = buf[off + 12:off + 12 + n]
        dc, = struct.unpack_from('<I', buf, off + 12 + n)
        assert dc == mask(crc32c(data)), ('data crc', off)
        out.append(bytes(data))
        off += 16 + n
    return out
)PY";

}  // namespace strata::testing_util
