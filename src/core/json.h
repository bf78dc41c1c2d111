// A small JSON document model for configuration and state files (state.json, manifests, labels, safetensors
// headers). Parsing returns a Status with the line and column of the first error; numbers keep their integer-ness
// (int64 when written without a fraction or exponent) and doubles print in shortest round-trip form.
// Request bodies on the serving hot path use a streaming parser instead.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata {

class Json {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps insertion order

  Json() = default;  // null
  Json(std::nullptr_t) {}  // NOLINT
  Json(bool b) : type_(Type::kBool), b_(b) {}  // NOLINT
  Json(int v) : type_(Type::kInt), i_(v) {}  // NOLINT
  Json(int64_t v) : type_(Type::kInt), i_(v) {}  // NOLINT
  Json(uint64_t v) : type_(Type::kInt), i_(static_cast<int64_t>(v)) {}  // NOLINT
  Json(double v) : type_(Type::kDouble), d_(v) {}  // NOLINT
  Json(const char* s) : type_(Type::kString), s_(s) {}  // NOLINT
  Json(std::string s) : type_(Type::kString), s_(std::move(s)) {}  // NOLINT
  Json(std::string_view s) : type_(Type::kString), s_(s) {}  // NOLINT
  static Json MakeArray(Array a = {});
  static Json MakeObject(Object o = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kDouble; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return type_ == Type::kDouble ? static_cast<int64_t>(d_) : i_; }
  double as_double() const { return type_ == Type::kInt ? static_cast<double>(i_) : d_; }
  const std::string& as_string() const { return s_; }
  const Array& as_array() const { return a_; }
  Array& mutable_array() { return a_; }
  const Object& as_object() const { return o_; }

  // Object access: Find returns null when absent; Set replaces or appends.
  const Json* Find(std::string_view key) const;
  Json& Set(std::string key, Json value);
  void Append(Json value) { a_.push_back(std::move(value)); }
  size_t size() const { return type_ == Type::kArray ? a_.size() : o_.size(); }
  const Json& operator[](size_t i) const { return a_[i]; }

  // Typed lookups with errors that name the key and the expected type (for config files).
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetDouble(std::string_view key) const;
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<bool> GetBool(std::string_view key) const;

  // indent < 0: compact one line; otherwise pretty-printed with that many spaces.
  std::string Dump(int indent = -1) const;
  static StatusOr<Json> Parse(std::string_view text, std::string_view where = "JSON");

  bool operator==(const Json& o) const;

 private:
  void DumpTo(std::string* out, int indent, int depth) const;
  Type type_ = Type::kNull;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  Array a_;
  Object o_;
};

std::string_view JsonTypeName(Json::Type t);
// Appends s as a quoted JSON string with escapes.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace strata
