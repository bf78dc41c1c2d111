// NumericPredictBody: Predict's common body (nested lists of numbers for one float input) read in one pass without
// a JSON document. It accepts only what it can read exactly as JsonRequest would, and declines everything else,
// so the errors stay JsonRequest's.
#include <charconv>
#include <cmath>
#include <new>

#include "serve/api/json_codec.h"

namespace strata::serve {

namespace {

// Deeper bodies are left to JsonRequest (simdjson's own limit is 1024 levels).
constexpr size_t kMaxLevels = 64;
// Number tokens longer than this are left to JsonRequest: no exotic precision or underflow cases here.
constexpr size_t kMaxNumberChars = 32;
// Buffers above this many values are freed after use rather than kept for the next request.
constexpr size_t kKeepValues = size_t{1} << 18;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void SkipSpace(const char*& p, const char* end) {
  while (p < end && IsSpace(*p)) ++p;
}

// A string of printable ASCII without escapes; anything else (escapes, control or non-ASCII bytes, which JSON and
// UTF-8 validation have rules for) is declined.
bool ReadPlainString(const char*& p, const char* end, std::string_view* out) {
  if (p == end || *p != '"') return false;
  const char* start = ++p;
  while (p < end && *p != '"') {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c > 0x7e || c == '\\') return false;
    ++p;
  }
  if (p == end) return false;
  *out = std::string_view(start, static_cast<size_t>(p - start));
  ++p;
  return true;
}

// After a list element or an object member: a ',' (more follow: *more = true) or the closing `close` (*more =
// false), with the spaces around them skipped. False on anything else.
bool SeparatorOrClose(const char*& p, const char* end, char close, bool* more) {
  SkipSpace(p, end);
  if (p == end) return false;
  if (*p == ',') {
    ++p;
    SkipSpace(p, end);
    *more = true;
    return true;
  }
  if (*p != close) return false;
  ++p;
  *more = false;
  return true;
}

}  // namespace

bool NumericPredictBody::ReadNumber(const char*& p, const char* end) {
  // JSON's number grammar, strictly: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?, collecting the decimal
  // significand (while it fits) and exponent on the way.
  const char* start = p;
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  if (p == end) return false;
  uint64_t significand = 0;
  size_t digits = 0;  // digits taken into `significand`, leading zeros included
  auto take = [&](char c) {
    if (digits < 19) significand = significand * 10 + static_cast<uint64_t>(c - '0');
    ++digits;
  };
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && IsDigit(*p)) take(*p++);
  } else {
    return false;  // NaN, Infinity, strings, objects, true/false/null: JsonRequest's
  }
  const size_t int_digits = digits;
  bool integer = true, exponent = false;
  int64_t fraction_digits = 0, exponent_value = 0;
  if (p < end && *p == '.') {
    ++p;
    integer = false;
    if (p == end || !IsDigit(*p)) return false;
    while (p < end && IsDigit(*p)) {
      take(*p++);
      ++fraction_digits;
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    integer = false;
    exponent = true;
    bool exponent_negative = false;
    if (p < end && (*p == '+' || *p == '-')) exponent_negative = *p++ == '-';
    if (p == end || !IsDigit(*p)) return false;
    while (p < end && IsDigit(*p)) {
      if (exponent_value < 100000) exponent_value = exponent_value * 10 + (*p - '0');
      ++p;
    }
    if (exponent_negative) exponent_value = -exponent_value;
  }
  if (static_cast<size_t>(p - start) > kMaxNumberChars) return false;
  double v = 0;
  if (integer) {
    // simdjson reads an integer token as a 64-bit integer and JsonRequest converts that to double (correctly
    // rounded). Above 18 digits (uint64 and big integers) is JsonRequest's.
    if (int_digits > 18) return false;
    const auto i = static_cast<int64_t>(significand);
    v = static_cast<double>(negative ? -i : i);
  } else {
    // Correctly rounded, as simdjson's parse is. Clinger's exact case first: a significand below 2^53 and a power
    // of ten up to 1e22 are both exact doubles, so one IEEE multiplication or division rounds correctly.
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const int64_t e10 = exponent_value - fraction_digits;
    if (digits <= 19 && significand <= (uint64_t{1} << 53) && e10 >= -22 && e10 <= 22) {
      const double m = static_cast<double>(significand);
      v = e10 < 0 ? m / kPow10[-e10] : m * kPow10[e10];
      if (negative) v = -v;
    } else {
      const auto r = std::from_chars(start, p, v);
      if (r.ec != std::errc() || r.ptr != p) return false;
    }
    if (!std::isfinite(v)) return false;
    // Underflow to zero or a subnormal needs an exponent (tokens are at most 32 characters): JsonRequest's.
    if (exponent && std::fabs(v) < 1e-300) return false;
  }
  if (v == 0 && negative) return false;  // negative zero: JsonRequest's
  values_.push_back(v);
  return true;
}

bool NumericPredictBody::ReadValue(const char*& p, const char* end, size_t level) {
  if (p == end || level > kMaxLevels) return false;
  if (*p != '[') {
    // Every number sits at the same depth: that of the first one.
    if (leaf_level_ < 0) leaf_level_ = static_cast<int64_t>(level);
    if (static_cast<int64_t>(level) != leaf_level_) return false;
    return ReadNumber(p, end);
  }
  if (leaf_level_ >= 0 && static_cast<int64_t>(level) >= leaf_level_) return false;
  if (level == dims_.size()) dims_.push_back(-1);  // length learnt when the first list at this depth closes
  ++p;
  SkipSpace(p, end);
  if (p < end && *p == ']') return false;  // empty lists: JsonRequest's
  int64_t n = 0;
  for (bool more = true; more;) {
    if (!ReadValue(p, end, level + 1)) return false;
    ++n;
    if (dims_[level] >= 0 && n > dims_[level]) return false;
    if (!SeparatorOrClose(p, end, ']', &more)) return false;
  }
  if (dims_[level] < 0) dims_[level] = n;
  return dims_[level] == n;
}

bool NumericPredictBody::Parse(std::string_view body) {
  signature_name_.clear();
  dims_.clear();
  values_.clear();
  leaf_level_ = -1;
  const char* p = body.data();
  const char* const end = p + body.size();
  bool have_value = false, have_signature = false;
  try {
    SkipSpace(p, end);
    if (p == end || *p != '{') return false;
    ++p;
    SkipSpace(p, end);
    for (bool more = true; more;) {
      std::string_view key;
      if (!ReadPlainString(p, end, &key)) return false;
      SkipSpace(p, end);
      if (p == end || *p != ':') return false;
      ++p;
      SkipSpace(p, end);
      if (key == "instances" || key == "inputs") {
        if (have_value) return false;  // both, or twice: JsonRequest's
        have_value = true;
        row_format_ = key == "instances";
        if (!ReadValue(p, end, 0)) return false;
        // A row body's value is a list of instances, not a bare number.
        if (row_format_ && leaf_level_ == 0) return false;
      } else if (key == "signature_name") {
        if (have_signature) return false;
        have_signature = true;
        std::string_view name;
        if (!ReadPlainString(p, end, &name)) return false;
        signature_name_.assign(name);
      } else {
        return false;
      }
      if (!SeparatorOrClose(p, end, '}', &more)) return false;
    }
  } catch (const std::bad_alloc&) {
    return false;  // JsonRequest reports memory exhaustion as such
  }
  SkipSpace(p, end);
  return p == end && have_value;
}

bool NumericPredictBody::Inputs(const SignatureDef& sig, NamedTensors* inputs) const {
  if (sig.inputs.size() != 1) return false;
  const TensorInfo& in = sig.inputs[0];
  if (in.dtype != DType::kFloat32 && in.dtype != DType::kFloat64) return false;
  auto t = Tensor::Create(in.dtype, Shape(dims_));
  if (!t.ok() || t->num_elements() != static_cast<int64_t>(values_.size())) return false;
  const size_t n = values_.size();
  if (in.dtype == DType::kFloat32) {
    float* dst = t->data<float>();
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(values_[i]);
  } else {
    double* dst = t->data<double>();
    for (size_t i = 0; i < n; ++i) dst[i] = values_[i];
  }
  inputs->emplace_back(in.alias, std::move(t).value());
  return true;
}

void NumericPredictBody::Trim() {
  if (values_.capacity() > kKeepValues) std::vector<double>().swap(values_);
}

}  // namespace strata::serve
