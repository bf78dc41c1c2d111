// TF Serving's REST URL grammar (specs/tf-serving.md §1.2):
//   GET  /v1/models/{name}[/versions/{v} | /labels/{label}][/metadata]
//   POST /v1/models/{name}[/versions/{v} | /labels/{label}]:(predict|classify|regress)
// plus strata's GET /v1/models (list). Malformed URLs keep TF Serving's "Malformed request: <METHOD> <path>" prefix
// and add which part failed and the valid forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/status.h"

namespace strata::serve {

struct RestRoute {
  enum class Kind { kListModels, kStatus, kMetadata, kPredict, kClassify, kRegress };
  Kind kind = Kind::kStatus;
  std::string model_name;  // URL-unescaped
  std::optional<int64_t> version;
  std::string label;
};

// `path` excludes the query string. Only called for paths that start with /v1 (case-insensitive).
StatusOr<RestRoute> ParseRestRoute(const std::string& method, const std::string& path);

// %XX decoding (curl_easy_unescape semantics: '+' stays '+').
std::string UrlUnescape(const std::string& s);

// HTTP status for a canonical code (TF Serving's table, §1.8).
int HttpStatusFor(StatusCode code);

}  // namespace strata::serve
