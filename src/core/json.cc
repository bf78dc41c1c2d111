#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/utf8.h"

namespace strata {

std::string_view JsonTypeName(Json::Type t) {
  switch (t) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "boolean";
    case Json::Type::kInt: return "integer";
    case Json::Type::kDouble: return "number";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "?";
}

Json Json::MakeArray(Array a) {
  Json j;
  j.type_ = Type::kArray;
  j.a_ = std::move(a);
  return j;
}

Json Json::MakeObject(Object o) {
  Json j;
  j.type_ = Type::kObject;
  j.o_ = std::move(o);
  return j;
}

const Json* Json::Find(std::string_view key) const {
  for (const auto& [k, v] : o_)
    if (k == key) return &v;
  return nullptr;
}

Json& Json::Set(std::string key, Json value) {
  if (type_ != Type::kObject) {
    *this = MakeObject();
  }
  for (auto& [k, v] : o_)
    if (k == key) {
      v = std::move(value);
      return v;
    }
  o_.emplace_back(std::move(key), std::move(value));
  return o_.back().second;
}

namespace {
Status KeyError(std::string_view key, const Json* v, std::string_view want) {
  if (v == nullptr) return InvalidArgumentError("missing key '", key, "' (expected a ", want, ")");
  return InvalidArgumentError("key '", key, "' must be a ", want, ", got a ", JsonTypeName(v->type()));
}
}  // namespace

StatusOr<int64_t> Json::GetInt(std::string_view key) const {
  const Json* v = Find(key);
  if (v && v->is_int()) return v->as_int();
  if (v && v->type() == Type::kDouble && std::floor(v->as_double()) == v->as_double()) return v->as_int();
  return KeyError(key, v, "integer");
}
StatusOr<double> Json::GetDouble(std::string_view key) const {
  const Json* v = Find(key);
  if (v && v->is_number()) return v->as_double();
  return KeyError(key, v, "number");
}
StatusOr<std::string> Json::GetString(std::string_view key) const {
  const Json* v = Find(key);
  if (v && v->is_string()) return v->as_string();
  return KeyError(key, v, "string");
}
StatusOr<bool> Json::GetBool(std::string_view key) const {
  const Json* v = Find(key);
  if (v && v->is_bool()) return v->as_bool();
  return KeyError(key, v, "boolean");
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

void Json::DumpTo(std::string* out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  switch (type_) {
    case Type::kNull: *out += "null"; break;
    case Type::kBool: *out += b_ ? "true" : "false"; break;
    case Type::kInt: *out += std::to_string(i_); break;
    case Type::kDouble:
      if (!std::isfinite(d_)) {
        *out += std::isnan(d_) ? "NaN" : (d_ > 0 ? "Infinity" : "-Infinity");  // JSON5-style, as Python writes
      } else {
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof(buf), d_);
        std::string_view num(buf, r.ptr - buf);
        *out += num;
        if (num.find_first_of(".eE") == std::string_view::npos) *out += ".0";
      }
      break;
    case Type::kString: AppendJsonString(out, s_); break;
    case Type::kArray:
      out->push_back('[');
      for (size_t i = 0; i < a_.size(); ++i) {
        if (i) out->push_back(',');
        newline(depth + 1);
        a_[i].DumpTo(out, indent, depth + 1);
      }
      if (!a_.empty()) newline(depth);
      out->push_back(']');
      break;
    case Type::kObject:
      out->push_back('{');
      for (size_t i = 0; i < o_.size(); ++i) {
        if (i) out->push_back(',');
        newline(depth + 1);
        AppendJsonString(out, o_[i].first);
        *out += indent < 0 ? ":" : ": ";
        o_[i].second.DumpTo(out, indent, depth + 1);
      }
      if (!o_.empty()) newline(depth);
      out->push_back('}');
      break;
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(&out, indent, 0);
  return out;
}

bool Json::operator==(const Json& o) const {
  if (is_number() && o.is_number()) return as_double() == o.as_double();
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return b_ == o.b_;
    case Type::kString: return s_ == o.s_;
    case Type::kArray: return a_ == o.a_;
    case Type::kObject: return o_ == o.o_;
    default: return false;
  }
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string_view where) : t_(text), where_(where) {}

  StatusOr<Json> ParseDocument() {
    SkipSpace();
    STRATA_ASSIGN_OR_RETURN(Json v, ParseValue(0));
    SkipSpace();
    if (p_ != t_.size()) return Error("unexpected text after the JSON value");
    return v;
  }

 private:
  Status Error(std::string_view what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < p_ && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgumentError(where_, ":", line, ":", col, ": ", what);
  }
  void SkipSpace() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\t' || t_[p_] == '\r')) ++p_;
  }
  bool Consume(std::string_view lit) {
    if (t_.substr(p_, lit.size()) == lit) {
      p_ += lit.size();
      return true;
    }
    return false;
  }

  StatusOr<Json> ParseValue(int depth) {
    if (depth > 256) return Error("nesting deeper than 256 levels");
    if (p_ >= t_.size()) return Error("unexpected end of input");
    const char c = t_[p_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') {
      STRATA_ASSIGN_OR_RETURN(std::string s, ParseString());
      return Json(std::move(s));
    }
    if (Consume("true")) return Json(true);
    if (Consume("false")) return Json(false);
    if (Consume("null")) return Json();
    if (Consume("NaN")) return Json(std::nan(""));
    if (Consume("Infinity")) return Json(HUGE_VAL);
    if (Consume("-Infinity")) return Json(-HUGE_VAL);
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    return Error(StrCat("unexpected character '", std::string(1, c), "'"));
  }

  StatusOr<Json> ParseNumber() {
    const size_t start = p_;
    if (t_[p_] == '-') ++p_;
    bool is_double = false;
    while (p_ < t_.size()) {
      const char c = t_[p_];
      if (c >= '0' && c <= '9') {
        ++p_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        is_double = true;
        ++p_;
      } else {
        break;
      }
    }
    std::string_view num = t_.substr(start, p_ - start);
    if (!is_double) {
      int64_t v = 0;
      auto r = std::from_chars(num.data(), num.data() + num.size(), v);
      if (r.ec == std::errc() && r.ptr == num.data() + num.size()) return Json(v);
    }
    double d = 0;
    auto r = std::from_chars(num.data(), num.data() + num.size(), d);
    if (r.ec != std::errc() || r.ptr != num.data() + num.size()) {
      p_ = start;
      return Error(StrCat("malformed number '", num, "'"));
    }
    return Json(d);
  }

  StatusOr<uint32_t> Hex4() {
    if (p_ + 4 > t_.size()) return Error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = t_[p_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return Error("bad hex digit in \\u escape");
    }
    return v;
  }

  StatusOr<std::string> ParseString() {
    ++p_;  // opening quote
    std::string out;
    while (true) {
      if (p_ >= t_.size()) return Error("unterminated string");
      const char c = t_[p_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (p_ >= t_.size()) return Error("unterminated escape");
      const char e = t_[p_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          STRATA_ASSIGN_OR_RETURN(uint32_t cp, Hex4());
          if (cp >= 0xd800 && cp < 0xdc00 && Consume("\\u")) {
            STRATA_ASSIGN_OR_RETURN(uint32_t lo, Hex4());
            if (lo < 0xdc00 || lo > 0xdfff) return Error("invalid surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          AppendUtf8(&out, cp);
          break;
        }
        default: return Error(StrCat("unknown escape '\\", std::string(1, e), "'"));
      }
    }
  }

  StatusOr<Json> ParseArray(int depth) {
    ++p_;
    Json arr = Json::MakeArray();
    SkipSpace();
    if (Consume("]")) return arr;
    while (true) {
      SkipSpace();
      STRATA_ASSIGN_OR_RETURN(Json v, ParseValue(depth + 1));
      arr.Append(std::move(v));
      SkipSpace();
      if (Consume(",")) continue;
      if (Consume("]")) return arr;
      return Error("expected ',' or ']' in array");
    }
  }

  StatusOr<Json> ParseObject(int depth) {
    ++p_;
    Json obj = Json::MakeObject();
    SkipSpace();
    if (Consume("}")) return obj;
    while (true) {
      SkipSpace();
      if (p_ >= t_.size() || t_[p_] != '"') return Error("expected a string key in object");
      STRATA_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      if (!Consume(":")) return Error("expected ':' after object key");
      SkipSpace();
      STRATA_ASSIGN_OR_RETURN(Json v, ParseValue(depth + 1));
      obj.Set(std::move(key), std::move(v));
      SkipSpace();
      if (Consume(",")) continue;
      if (Consume("}")) return obj;
      return Error("expected ',' or '}' in object");
    }
  }

  std::string_view t_;
  std::string_view where_;
  size_t p_ = 0;
};

}  // namespace

StatusOr<Json> Json::Parse(std::string_view text, std::string_view where) { return Parser(text, where).ParseDocument(); }

}  // namespace strata
