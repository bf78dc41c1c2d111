// The REST front end: TF Serving's /v1 API over the Predictor, the Open Inference Protocol's /v2 (kserve_v2.h),
// plus /healthz, /readyz, GET /v1/models and the Prometheus endpoint. A thin adapter: URL → route, JSON → request structs, Status → HTTP code and {"error": ...}.
#pragma once

#include <functional>

#include <string>

#include "serve/core/predictor.h"
#include "serve/http/http_server.h"
#include "serve/http/kserve_v2.h"
#include "serve/metrics.h"

namespace strata::serve {

struct RestOptions {
  int64_t timeout_ms = 30000;
  bool cors = false;
  bool metrics_enabled = true;
  std::string metrics_path = "/monitoring/prometheus/metrics";
  // POST /monitoring/profile?requests=N: arms the profiler (ServerOptions::profile_dir) and returns where the trace
  // will go; null = profiling not enabled (404 saying so).
  std::function<StatusOr<std::string>(int64_t requests)> start_profile;
};

class RestApi {
 public:
  RestApi(Predictor* predictor, ServingMetrics* metrics, RestOptions options)
      : predictor_(predictor), metrics_(metrics), options_(std::move(options)), v2_(predictor) {}

  // The HttpHandler.
  void Handle(HttpRequest&& request, Responder respond);

 private:
  void HandleV1(HttpRequest&& request, const std::string& path, Responder respond);
  void HandleProfile(const HttpRequest& request, Responder respond);
  void Predict(HttpRequest&& request, const ModelSpec& spec, Responder respond);
  void ExamplesCall(HttpRequest&& request, const ModelSpec& spec, bool classify, Responder respond);
  // Counts the request and answers it.
  void Finish(const Responder& respond, const std::string& model, const char* api, std::chrono::steady_clock::time_point received,
              const Status& status, std::string body);

  Predictor* predictor_;
  ServingMetrics* metrics_;
  RestOptions options_;
  KserveV2Api v2_;  // the Open Inference Protocol routes under /v2
};

}  // namespace strata::serve
