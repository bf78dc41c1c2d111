// ParseInputSignature / FormatInputSignature: the text and JSON forms of SessionOptions::input_signature.
#include <cctype>
#include <cstdlib>

#include "core/json.h"
#include "strata/graph.h"

namespace strata::graph {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsAnyDim(std::string_view d) { return d == "-1" || d == "?" || d == "None" || d == "null"; }

// "[-1,28,28,1]" (brackets included) -> dims; -1, ?, None and null are dimensions of any size.
StatusOr<PartialShape> ParseShapeText(std::string_view text, const std::string& where) {
  text = Trim(text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    return InvalidArgumentError(where, ": expected a shape in brackets such as [-1,28,28,1] or [None,28,28,1], got '",
                                text, "'");
  std::string_view body = Trim(text.substr(1, text.size() - 2));
  std::vector<Dim> dims;
  while (!body.empty()) {
    const size_t comma = body.find(',');
    const std::string_view item = Trim(body.substr(0, comma));
    if (IsAnyDim(item)) {
      dims.emplace_back();
    } else {
      const std::string s(item);
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || v < 0)
        return InvalidArgumentError(where, ": dimension '", item, "' of ", text,
                                    " is not a size (a non-negative integer, or -1, ?, None for any size)");
      dims.emplace_back(static_cast<int64_t>(v));
    }
    if (comma == std::string_view::npos) break;
    body = body.substr(comma + 1);
    if (Trim(body).empty()) return InvalidArgumentError(where, ": a trailing ',' in ", text);
  }
  return PartialShape::Of(std::move(dims));
}

StatusOr<PartialShape> ParseShapeJson(const Json& j, const std::string& where) {
  if (!j.is_array()) return InvalidArgumentError(where, ": 'shape' must be an array such as [null,28,28,1]");
  std::vector<Dim> dims;
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& d = j[i];
    if (d.is_null() || (d.is_int() && d.as_int() == -1)) {
      dims.emplace_back();
    } else if (d.is_int() && d.as_int() >= 0) {
      dims.emplace_back(d.as_int());
    } else {
      return InvalidArgumentError(where, ": dimension ", i, " of 'shape' is ", d.Dump(),
                                  "; expected a non-negative integer, or null or -1 for any size");
    }
  }
  return PartialShape::Of(std::move(dims));
}

// {"shape": [...], "dtype": "float32"} or a bare shape array.
StatusOr<SignatureEntry> ParseEntryJson(std::string name, const Json& j, const std::string& where) {
  SignatureEntry e;
  e.name = std::move(name);
  const std::string here = e.name.empty() ? where : StrCat(where, " input '", e.name, "'");
  if (j.is_array()) {
    STRATA_ASSIGN_OR_RETURN(e.shape, ParseShapeJson(j, here));
    return e;
  }
  if (!j.is_object()) return InvalidArgumentError(here, ": expected {\"shape\": [...], \"dtype\": ...}, got ", j.Dump());
  for (const auto& [k, v] : j.as_object())
    if (k != "shape" && k != "dtype" && k != "name")
      return InvalidArgumentError(here, ": unknown key '", k, "' (expected name, shape, dtype)");
  const Json* shape = j.Find("shape");
  if (shape == nullptr) return InvalidArgumentError(here, ": 'shape' is missing");
  STRATA_ASSIGN_OR_RETURN(e.shape, ParseShapeJson(*shape, here));
  if (const Json* dt = j.Find("dtype")) {
    if (!dt->is_string()) return InvalidArgumentError(here, ": 'dtype' must be a string such as \"float32\"");
    auto d = DTypeFromName(dt->as_string());
    if (!d.ok()) return InvalidArgumentError(here, ": ", d.status().message());
    e.dtype = *d;
  }
  return e;
}

StatusOr<std::vector<SignatureEntry>> ParseJsonSignature(std::string_view text, const std::string& where) {
  STRATA_ASSIGN_OR_RETURN(Json j, Json::Parse(text, where));
  std::vector<SignatureEntry> out;
  if (j.is_object()) {
    for (const auto& [name, v] : j.as_object()) {
      STRATA_ASSIGN_OR_RETURN(SignatureEntry e, ParseEntryJson(name, v, where));
      out.push_back(std::move(e));
    }
    return out;
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const Json* name = j[i].is_object() ? j[i].Find("name") : nullptr;
    if (name != nullptr && !name->is_string())
      return InvalidArgumentError(where, ": entry ", i, ": 'name' must be a string");
    STRATA_ASSIGN_OR_RETURN(SignatureEntry e, ParseEntryJson(name ? name->as_string() : "", j[i], where));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<SignatureEntry>> ParseInputSignature(std::string_view text, std::string_view where_view) {
  const std::string where(where_view);
  text = Trim(text);
  if (text.empty()) return InvalidArgumentError(where, ": empty; expected e.g. x:[-1,28,28,1]:float32");
  std::vector<SignatureEntry> out;
  const bool json = text.front() == '{' || (text.front() == '[' && Trim(text.substr(1)).substr(0, 1) == "{");
  if (json) {
    STRATA_ASSIGN_OR_RETURN(out, ParseJsonSignature(text, where));
  } else {
    while (!text.empty()) {
      const size_t semi = text.find(';');
      const std::string_view part = Trim(text.substr(0, semi));
      text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
      if (part.empty()) continue;
      const size_t open = part.find('['), close = part.rfind(']');
      if (open == std::string_view::npos || close == std::string_view::npos || close < open)
        return InvalidArgumentError(where, ": '", part, "' has no shape; expected NAME:[d0,d1,...]:DTYPE, e.g. "
                                    "x:[-1,28,28,1]:float32 (or [None,28,28,1] for a model's only input)");
      SignatureEntry e;
      std::string_view name = Trim(part.substr(0, open));
      if (!name.empty()) {
        if (name.back() != ':')
          return InvalidArgumentError(where, ": expected ':' between the name and the shape in '", part, "'");
        e.name = std::string(Trim(name.substr(0, name.size() - 1)));
        if (e.name.empty()) return InvalidArgumentError(where, ": an empty input name in '", part, "'");
      }
      STRATA_ASSIGN_OR_RETURN(e.shape, ParseShapeText(part.substr(open, close - open + 1), where));
      std::string_view rest = Trim(part.substr(close + 1));
      if (!rest.empty()) {
        if (rest.front() != ':')
          return InvalidArgumentError(where, ": expected ':DTYPE' after the shape in '", part, "', got '", rest, "'");
        auto d = DTypeFromName(Trim(rest.substr(1)));
        if (!d.ok()) return InvalidArgumentError(where, ": in '", part, "': ", d.status().message());
        e.dtype = *d;
      }
      out.push_back(std::move(e));
    }
  }
  if (out.empty()) return InvalidArgumentError(where, ": no input in '", text, "'");
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = 0; k < i; ++k) {
      if (out[i].name == out[k].name)
        return InvalidArgumentError(where, ": input '", out[i].name, "' is given twice");
      if (out[i].name.empty() || out[k].name.empty())
        return InvalidArgumentError(where, ": with several inputs every one needs a name (NAME:[...])");
    }
  return out;
}

std::string FormatInputSignature(const std::vector<SignatureEntry>& signature) {
  std::vector<std::string> parts;
  for (const SignatureEntry& e : signature) {
    std::string p = e.name.empty() ? "" : e.name + ":";
    p += e.shape.ToString();
    if (e.dtype != DType::kUndefined) p += StrCat(":", DTypeName(e.dtype));
    parts.push_back(std::move(p));
  }
  return StrJoin(parts, ";");
}

}  // namespace strata::graph
