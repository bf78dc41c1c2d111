// The Open Inference Protocol (KServe v2) over REST, beside TF Serving's /v1 API on the same port:
//   GET  /v2                                    server metadata
//   GET  /v2/health/live, /v2/health/ready      liveness, readiness (every configured model available)
//   GET  /v2/models/{name}[/versions/{v}]       model metadata
//   GET  /v2/models/{name}[/versions/{v}]/ready model readiness
//   POST /v2/models/{name}[/versions/{v}]/infer inference: JSON, or JSON plus binary tensor data
// Errors are {"error": message} with the HTTP status of the canonical code (400 bad request, 404 unknown model).
#pragma once

#include <string>

#include "serve/api/request.h"
#include "serve/core/predictor.h"
#include "serve/http/http_server.h"

namespace strata::serve {

class KserveV2Api {
 public:
  explicit KserveV2Api(Predictor* predictor) : predictor_(predictor) {}

  // `path` is the request's path without the query, starting with /v2; `deadline` bounds an inference.
  void Handle(HttpRequest&& request, const std::string& path, Deadline deadline, Responder respond);

 private:
  void Infer(HttpRequest&& request, const ModelSpec& spec, Deadline deadline, Responder respond);
  void ModelMetadata(const ModelSpec& spec, const Responder& respond);

  Predictor* predictor_;
};

}  // namespace strata::serve
