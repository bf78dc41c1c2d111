// Private to src/serve/api: simdjson helpers shared by the JSON readers. Includes simdjson (heavy): .cc files of
// src/serve/api only.
#pragma once

#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>

#include "serve/api/json_codec.h"

namespace strata::serve::json_detail {

namespace dom = simdjson::dom;

// "Array", "Object", "String", "True", "False", "Null", "Number" (rapidjson's names, used in TF Serving's messages).
std::string_view JsonTypeName(const dom::element& e);
// The value as compact JSON, cut at 256 characters.
std::string Truncated(const dom::element& e);
// An object with exactly one key "b64" whose value is a string.
bool IsB64(const dom::element& e, std::string_view* text);
// Element `i` of `t` (of `dtype`) from a JSON scalar, with TF Serving's type and range checks and messages.
Status WriteJsonScalar(const dom::element& e, DType dtype, Tensor* t, int64_t i);

}  // namespace strata::serve::json_detail

namespace strata::serve {
struct JsonRequest::Impl {
  std::unique_ptr<simdjson::dom::parser> parser;
  std::string rewritten;
  simdjson::dom::element root;
  ~Impl();
};
}  // namespace strata::serve
