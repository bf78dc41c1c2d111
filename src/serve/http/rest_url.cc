#include "serve/http/rest_url.h"

#include <cctype>
#include <charconv>

namespace strata::serve {

namespace {

bool StartsWithNoCase(const std::string& s, size_t pos, std::string_view prefix) {
  if (s.size() - pos < prefix.size() || pos > s.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != prefix[i]) return false;
  return true;
}

constexpr char kValidForms[] =
    "valid forms are GET /v1/models/{name}[/versions/{version}|/labels/{label}][/metadata] and "
    "POST /v1/models/{name}[/versions/{version}|/labels/{label}]:(predict|classify|regress)";

Status Malformed(const std::string& method, const std::string& path, const std::string& why) {
  return InvalidArgumentError("Malformed request: ", method, " ", path, " (", why, "; ", kValidForms, ")");
}

// A segment ends at '/' or ':'.
size_t SegmentEnd(const std::string& s, size_t pos) {
  size_t e = pos;
  while (e < s.size() && s[e] != '/' && s[e] != ':') ++e;
  return e;
}

}  // namespace

std::string UrlUnescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

StatusOr<RestRoute> ParseRestRoute(const std::string& method, const std::string& path) {
  RestRoute r;
  if (!StartsWithNoCase(path, 0, "/v1/models"))
    return Malformed(method, path, "the path must start with /v1/models");
  size_t pos = 10;
  if (pos == path.size() || (pos + 1 == path.size() && path[pos] == '/')) {
    if (method != "GET") return Malformed(method, path, "only GET lists the models");
    r.kind = RestRoute::Kind::kListModels;
    return r;
  }
  if (path[pos] != '/') return Malformed(method, path, "expected '/' after /v1/models");
  ++pos;
  size_t end = SegmentEnd(path, pos);
  if (end == pos) return Malformed(method, path, "the model name is empty");
  r.model_name = UrlUnescape(path.substr(pos, end - pos));
  pos = end;
  bool has_version_or_label = false;
  if (pos < path.size() && path[pos] == '/') {
    if (StartsWithNoCase(path, pos, "/versions/")) {
      pos += 10;
      end = SegmentEnd(path, pos);
      const std::string v = path.substr(pos, end - pos);
      if (v.empty()) return Malformed(method, path, "the version after /versions/ is empty");
      for (char c : v)
        if (c < '0' || c > '9') return Malformed(method, path, StrCat("version '", v, "' is not a number"));
      int64_t version = 0;
      auto res = std::from_chars(v.data(), v.data() + v.size(), version);
      if (res.ec != std::errc()) return InvalidArgumentError("Failed to convert version: ", v, " to numeric.");
      r.version = version;
      pos = end;
      has_version_or_label = true;
    } else if (StartsWithNoCase(path, pos, "/labels/")) {
      pos += 8;
      end = SegmentEnd(path, pos);
      if (end == pos) return Malformed(method, path, "the label after /labels/ is empty");
      r.label = UrlUnescape(path.substr(pos, end - pos));
      pos = end;
      has_version_or_label = true;
    }
  }
  if (pos == path.size()) {
    if (method != "GET") return Malformed(method, path, "model status is read with GET");
    r.kind = RestRoute::Kind::kStatus;
    return r;
  }
  if (path[pos] == ':') {
    const std::string verb = path.substr(pos + 1);
    if (verb == "predict") r.kind = RestRoute::Kind::kPredict;
    else if (verb == "classify") r.kind = RestRoute::Kind::kClassify;
    else if (verb == "regress") r.kind = RestRoute::Kind::kRegress;
    else return Malformed(method, path, StrCat("unknown verb ':", verb, "' (verbs are lower case)"));
    if (method != "POST") return Malformed(method, path, StrCat(":", verb, " needs POST"));
    return r;
  }
  const std::string rest = path.substr(pos);
  if (rest == "/metadata") {
    if (method != "GET") return Malformed(method, path, "metadata is read with GET");
    r.kind = RestRoute::Kind::kMetadata;
    return r;
  }
  if (rest == "/") return Malformed(method, path, "trailing '/'");
  if (has_version_or_label && (StartsWithNoCase(rest, 0, "/versions/") || StartsWithNoCase(rest, 0, "/labels/")))
    return Malformed(method, path, "give either a version or a label, not both");
  if (StartsWithNoCase(rest, 0, "/version/")) return Malformed(method, path, "'version' must be 'versions'");
  if (StartsWithNoCase(rest, 0, "/label/")) return Malformed(method, path, "'label' must be 'labels'");
  return Malformed(method, path, StrCat("unexpected '", rest, "'"));
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kCancelled: return 499;
    case StatusCode::kUnknown: return 500;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kFailedPrecondition: return 400;
    case StatusCode::kAborted: return 409;
    case StatusCode::kOutOfRange: return 400;
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kInternal: return 500;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDataLoss: return 500;
    case StatusCode::kUnauthenticated: return 401;
  }
  return 500;
}

}  // namespace strata::serve
