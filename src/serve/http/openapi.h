// The OpenAPI 3.0 description of the REST API (served at /v1/openapi.json).
#pragma once

#include <string_view>

namespace strata::serve {

std::string_view OpenApiJson();

}  // namespace strata::serve
