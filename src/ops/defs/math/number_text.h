// Numbers as text, the way numpy prints and parses them: Cast between string and numeric tensors uses these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::ops::ew {

// str() of a numpy float scalar of the given precision (kFloat16, kBFloat16, kFloat32 or kFloat64): the shortest
// digits that round-trip at that precision, positional for 1e-4 <= |v| < 1e16 (and 0) with at least one digit after
// the point ("1.0", "0.001", "123456790.0"), scientific otherwise with a two-digit exponent ("1e-05", "1.5e+20");
// "nan", "inf", "-inf".
std::string FormatFloat(double v, DType precision);

// Parses a float: decimal or scientific, surrounding whitespace allowed, "NaN" / "INF" / "+INF" / "-INF" /
// "Infinity" in any case. InvalidArgument for anything else.
StatusOr<double> ParseDouble(std::string_view s);
// Parses a float32 directly (one rounding), same syntax.
StatusOr<float> ParseFloat(std::string_view s);
// Parses an integer; text such as "100.5" or "1e3" is parsed as a float and truncated toward zero, as the ONNX Cast
// spec allows. OutOfRange names the text when it does not fit [lo, hi].
StatusOr<int64_t> ParseInt64(std::string_view s, int64_t lo, int64_t hi);
StatusOr<uint64_t> ParseUInt64(std::string_view s, uint64_t hi);
// "true"/"false" in any case, or a number (non-zero is true).
StatusOr<bool> ParseBool(std::string_view s);

}  // namespace strata::ops::ew
