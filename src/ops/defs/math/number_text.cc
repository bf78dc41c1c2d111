#include "ops/defs/math/number_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace strata::ops::ew {
namespace {

// The shortest round-trip digits of v at `precision`, written as "d.ddde[+-]xx" (scientific).
std::string ShortestScientific(double v, DType precision) {
  char buf[64];
  if (precision == DType::kFloat64) {
    auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
  if (precision == DType::kFloat32) {
    auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v), std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
  // 16-bit floats: the fewest significant digits whose correctly rounded value converts back to the same bits.
  const float f = static_cast<float>(v);
  auto same = [&](double w) {
    if (precision == DType::kFloat16) return Float16(static_cast<float>(w)).bits == Float16(f).bits;
    return BFloat16(static_cast<float>(w)).bits == BFloat16(f).bits;
  };
  for (int digits = 1; digits <= 9; ++digits) {
    const int n = std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, static_cast<double>(f));
    if (same(std::strtod(buf, nullptr))) return std::string(buf, n);
  }
  const int n = std::snprintf(buf, sizeof(buf), "%.8e", static_cast<double>(f));
  return std::string(buf, n);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Splits an optional sign off `s`; returns true for '-'.
bool TakeSign(std::string_view* s) {
  if (!s->empty() && (s->front() == '+' || s->front() == '-')) {
    const bool neg = s->front() == '-';
    s->remove_prefix(1);
    return neg;
  }
  return false;
}

template <typename F>
StatusOr<F> ParseFloating(std::string_view text) {
  std::string_view s = Trim(text);
  const bool neg = TakeSign(&s);
  F v;
  if (EqualsIgnoreCase(s, "nan")) {
    v = std::numeric_limits<F>::quiet_NaN();
  } else if (EqualsIgnoreCase(s, "inf") || EqualsIgnoreCase(s, "infinity")) {
    v = std::numeric_limits<F>::infinity();
  } else {
    auto r = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
    if (s.empty() || r.ec == std::errc::invalid_argument || r.ptr != s.data() + s.size())
      return InvalidArgumentError("cannot parse \"", text, "\" as a number");
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars leaves v unchanged on range errors: give what strtod would (inf or a signed zero).
      const double d = std::strtod(std::string(s).c_str(), nullptr);
      v = static_cast<F>(d);
    }
  }
  return neg ? -v : v;
}

}  // namespace

std::string FormatFloat(double v, DType precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  const std::string sci = ShortestScientific(v, precision);
  // Split "-d.ddde+xx" into sign, digits and decimal exponent.
  std::string digits;
  size_t i = 0;
  const bool neg = sci[0] == '-';
  if (neg) ++i;
  for (; i < sci.size() && sci[i] != 'e'; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  const int exp = i < sci.size() ? std::atoi(sci.c_str() + i + 1) : 0;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

  std::string out = neg ? "-" : "";
  const double mag = std::fabs(v);
  if (mag == 0 || (mag >= 1e-4 && mag < 1e16)) {
    if (exp >= 0) {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      std::string int_part = digits.substr(0, std::min(int_len, digits.size()));
      int_part.append(int_len - int_part.size(), '0');
      const std::string frac = digits.size() > int_len ? digits.substr(int_len) : "0";
      out += int_part + "." + frac;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

StatusOr<double> ParseDouble(std::string_view s) { return ParseFloating<double>(s); }
StatusOr<float> ParseFloat(std::string_view s) { return ParseFloating<float>(s); }

StatusOr<int64_t> ParseInt64(std::string_view text, int64_t lo, int64_t hi) {
  std::string_view s = Trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    if (v < lo || v > hi) return OutOfRangeError("\"", text, "\" is out of range [", lo, ", ", hi, "]");
    return v;
  }
  STRATA_ASSIGN_OR_RETURN(double d, ParseDouble(text));
  if (std::isnan(d) || d <= static_cast<double>(lo) - 1 || d >= static_cast<double>(hi) + 1)
    return OutOfRangeError("\"", text, "\" is out of range [", lo, ", ", hi, "]");
  return static_cast<int64_t>(d);
}

StatusOr<uint64_t> ParseUInt64(std::string_view text, uint64_t hi) {
  std::string_view s = Trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    if (v > hi) return OutOfRangeError("\"", text, "\" is out of range [0, ", hi, "]");
    return v;
  }
  STRATA_ASSIGN_OR_RETURN(double d, ParseDouble(text));
  if (std::isnan(d) || d <= -1 || d >= static_cast<double>(hi) + 1)
    return OutOfRangeError("\"", text, "\" is out of range [0, ", hi, "]");
  return static_cast<uint64_t>(d);
}

StatusOr<bool> ParseBool(std::string_view text) {
  std::string_view s = Trim(text);
  if (EqualsIgnoreCase(s, "true")) return true;
  if (EqualsIgnoreCase(s, "false")) return false;
  auto d = ParseDouble(s);
  if (!d.ok()) return InvalidArgumentError("cannot parse \"", text, "\" as a bool (expected true, false or a number)");
  return *d != 0;
}

}  // namespace strata::ops::ew
