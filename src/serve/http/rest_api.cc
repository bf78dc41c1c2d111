#include "serve/http/rest_api.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "serve/api/json_codec.h"
#include "serve/http/openapi.h"
#include "serve/http/rest_url.h"

namespace strata::serve {

using Clock = std::chrono::steady_clock;

namespace {

bool StartsWithNoCase(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

HttpResponse NotFoundHtml() {
  HttpResponse r;
  r.status = 404;
  r.content_type = "text/html";
  r.body = "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
           "<p>The requested URL was not found on this server. The model API is under /v1/models.</p></body></html>";
  return r;
}

void AddCors(HttpResponse* r) {
  r->headers.emplace_back("Access-Control-Allow-Origin", "*");
  r->headers.emplace_back("Access-Control-Allow-Methods", "POST, GET");
  r->headers.emplace_back("Access-Control-Allow-Headers", "Content-Type");
}

// The request deadline: the server's REST timeout, shortened by an X-Request-Timeout-Ms header.
Deadline RequestDeadline(const HttpRequest& req, int64_t timeout_ms) {
  int64_t ms = timeout_ms > 0 ? timeout_ms : INT64_MAX / 2000000;
  if (!req.request_timeout_ms.empty()) {
    int64_t h = 0;
    auto r = std::from_chars(req.request_timeout_ms.data(),
                             req.request_timeout_ms.data() + req.request_timeout_ms.size(), h);
    if (r.ec == std::errc() && h > 0) ms = std::min(ms, h);
  }
  return req.received + std::chrono::milliseconds(ms);
}

}  // namespace

void RestApi::Finish(const Responder& respond, const std::string& model, const char* api, Clock::time_point received,
                     const Status& status, std::string body) {
  if (metrics_) metrics_->CountRequest(model, status, api, "REST", received);
  HttpResponse r;
  r.status = HttpStatusFor(status.code());
  r.body = status.ok() ? std::move(body) : JsonError(status.message());
  if (options_.cors) AddCors(&r);
  respond(std::move(r));
}

void RestApi::Handle(HttpRequest&& request, Responder respond) {
  std::string path = request.target.substr(0, request.target.find('?'));
  if (options_.metrics_enabled && path == options_.metrics_path) {
    HttpResponse r;
    if (request.method != "GET") {
      r.status = 405;
      r.content_type = "text/plain";
      r.body = "metrics are read with GET\n";
    } else {
      r.content_type = "text/plain; version=0.0.4";
      r.body = metrics_->Expose();
    }
    return respond(std::move(r));
  }
  if (path == "/v1/openapi.json") {
    HttpResponse r;
    if (request.method != "GET") {
      r.status = 405;
      r.body = JsonError("the OpenAPI description is read with GET");
    } else {
      r.body = std::string(OpenApiJson());
    }
    if (options_.cors) AddCors(&r);
    return respond(std::move(r));
  }
  if (path == "/monitoring/profile") return HandleProfile(request, std::move(respond));
  if (path == "/healthz") {
    HttpResponse r;
    r.body = "{\"status\": \"ok\"}";
    return respond(std::move(r));
  }
  if (path == "/readyz") {
    std::string why;
    HttpResponse r;
    if (predictor_->manager()->AllReady(&why)) {
      r.body = "{\"ready\": true}";
    } else {
      r.status = 503;
      r.body = "{\"ready\": false, \"error\": ";
      AppendJsonString(&r.body, why);
      r.body += "}";
    }
    return respond(std::move(r));
  }
  if (path.compare(0, 3, "/v2") == 0 && (path.size() == 3 || path[3] == '/')) {
    const Deadline deadline = RequestDeadline(request, options_.timeout_ms);
    if (!options_.cors) return v2_.Handle(std::move(request), path, deadline, std::move(respond));
    return v2_.Handle(std::move(request), path, deadline, [respond = std::move(respond)](HttpResponse r) {
      AddCors(&r);
      respond(std::move(r));
    });
  }
  if (!StartsWithNoCase(path, "/v1/")) return respond(NotFoundHtml());
  if (request.method == "OPTIONS") {
    HttpResponse r;
    const bool origin_ok = request.origin.rfind("http://", 0) == 0 || request.origin.rfind("https://", 0) == 0;
    r.status = origin_ok ? 200 : 400;
    if (options_.cors) AddCors(&r);
    return respond(std::move(r));
  }
  HandleV1(std::move(request), path, std::move(respond));
}

// POST /monitoring/profile?requests=N (default 1, at most 10000): records the next N executions as a Chrome trace.
void RestApi::HandleProfile(const HttpRequest& request, Responder respond) {
  HttpResponse r;
  if (!options_.start_profile) {
    r.status = 404;
    r.body = JsonError("profiling is off: start the server with --profile_dir DIR");
    return respond(std::move(r));
  }
  if (request.method != "POST") {
    r.status = 405;
    r.body = JsonError("start a profile with POST /monitoring/profile?requests=N");
    return respond(std::move(r));
  }
  int64_t requests = 1;
  const size_t q = request.target.find("requests=");
  if (q != std::string::npos) {
    const std::string value = request.target.substr(q + 9, request.target.find('&', q) - q - 9);
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || v < 1 || v > 10000) {
      r.status = 400;
      r.body = JsonError(StrCat("requests must be an integer in [1, 10000], got '", value, "'"));
      return respond(std::move(r));
    }
    requests = v;
  }
  auto where = options_.start_profile(requests);
  if (!where.ok()) {
    r.status = where.status().code() == StatusCode::kFailedPrecondition ? 409 : 500;
    r.body = JsonError(where.status().message());
    return respond(std::move(r));
  }
  r.body = StrCat("{\"profiling_requests\": ", requests, ", \"profile_dir\": ");
  AppendJsonString(&r.body, *where);
  r.body += "}";
  return respond(std::move(r));
}

void RestApi::HandleV1(HttpRequest&& request, const std::string& path, Responder respond) {
  const Clock::time_point received = request.received;
  auto route = ParseRestRoute(request.method, path);
  if (!route.ok()) return Finish(respond, "", "", received, route.status(), "");
  ModelSpec spec;
  spec.name = route->model_name;
  spec.version = route->version;
  spec.version_label = route->label;
  switch (route->kind) {
    case RestRoute::Kind::kListModels:
      return Finish(respond, "", "", received, Status::OK(), JsonModelList(predictor_->manager()->Summaries()));
    case RestRoute::Kind::kStatus: {
      // As TF Serving, a label is ignored by the status API: all versions are returned.
      auto status = predictor_->manager()->GetStatus(spec.name, spec.version);
      return Finish(respond, spec.name, "", received, status.status(), status.ok() ? JsonModelStatus(*status) : "");
    }
    case RestRoute::Kind::kMetadata: {
      auto servable = predictor_->Resolve(spec);
      if (!servable.ok()) return Finish(respond, spec.name, "", received, servable.status(), "");
      return Finish(respond, spec.name, "", received, Status::OK(),
                    JsonModelMetadata((*servable)->name(), (*servable)->version(), (*servable)->signatures()));
    }
    case RestRoute::Kind::kPredict:
      return Predict(std::move(request), spec, std::move(respond));
    case RestRoute::Kind::kClassify:
      return ExamplesCall(std::move(request), spec, true, std::move(respond));
    case RestRoute::Kind::kRegress:
      return ExamplesCall(std::move(request), spec, false, std::move(respond));
  }
}

void RestApi::Predict(HttpRequest&& request, const ModelSpec& spec, Responder respond) {
  const Clock::time_point received = request.received;
  auto fail = [&](const Status& s) { Finish(respond, spec.name, "predict", received, s, ""); };
  auto servable = predictor_->Resolve(spec);
  if (!servable.ok()) return fail(servable.status());
  PredictRequest req;
  req.model_spec = spec;
  req.deadline = RequestDeadline(request, options_.timeout_ms);
  bool row_format = true;
  // The common body (numbers for one float input) is read without a JSON document; any other body, and every
  // malformed one, goes through JsonRequest, which words the errors.
  thread_local NumericPredictBody numeric;
  const bool fast = numeric.Parse(request.body) && [&] {
    const SignatureDef* sig = (*servable)->FindSignature(numeric.signature_name());
    return sig && numeric.Inputs(*sig, &req.inputs);
  }();
  numeric.Trim();
  if (fast) {
    req.model_spec.signature_name = numeric.signature_name();
    row_format = numeric.row_format();
  } else {
    JsonRequest json;
    Status s = json.Parse(request.body);
    if (!s.ok()) return fail(s);
    auto sig_name = json.SignatureName();
    if (!sig_name.ok()) return fail(sig_name.status());
    const SignatureDef* sig = (*servable)->FindSignature(*sig_name);
    if (!sig)
      return fail(InvalidArgumentError("Serving signature name: \"", sig_name->empty() ? kDefaultSignature : *sig_name,
                                       "\" not found in signature def"));
    req.model_spec.signature_name = *sig_name;
    s = json.PredictInputs(*sig, &req.inputs, &row_format);
    if (!s.ok()) return fail(s);
  }
  predictor_->PredictWith(std::move(servable).value(), std::move(req),
                          [this, respond, name = spec.name, received, row_format](Status st, PredictResponse resp) {
                            if (!st.ok()) return Finish(respond, name, "predict", received, st, "");
                            auto body = JsonPredictResponse(resp.outputs, row_format);
                            if (!body.ok()) return Finish(respond, name, "predict", received, body.status(), "");
                            Finish(respond, name, "predict", received, Status::OK(), std::move(body).value());
                          });
}

void RestApi::ExamplesCall(HttpRequest&& request, const ModelSpec& spec, bool classify, Responder respond) {
  const Clock::time_point received = request.received;
  const char* api = classify ? "classify" : "regress";
  auto fail = [&](const Status& s) { Finish(respond, spec.name, api, received, s, ""); };
  auto servable = predictor_->Resolve(spec);
  if (!servable.ok()) return fail(servable.status());
  JsonRequest json;
  Status s = json.Parse(request.body);
  if (!s.ok()) return fail(s);
  auto sig_name = json.SignatureName();
  if (!sig_name.ok()) return fail(sig_name.status());
  if (!(*servable)->FindSignature(*sig_name))
    return fail(InvalidArgumentError("Serving signature name: \"", sig_name->empty() ? kDefaultSignature : *sig_name,
                                     "\" not found in signature def"));
  ModelSpec full = spec;
  full.signature_name = *sig_name;
  ExampleInput input;
  s = json.Examples(api, &input);
  if (!s.ok()) return fail(s);
  if (classify) {
    ClassifyRequest req{full, std::move(input), RequestDeadline(request, options_.timeout_ms)};
    ClassifyResponse resp;
    s = predictor_->ClassifyWith(**servable, req, &resp);
    return Finish(respond, spec.name, api, received, s, s.ok() ? JsonClassifyResponse(resp) : "");
  }
  RegressRequest req{full, std::move(input), RequestDeadline(request, options_.timeout_ms)};
  RegressResponse resp;
  s = predictor_->RegressWith(**servable, req, &resp);
  Finish(respond, spec.name, api, received, s, s.ok() ? JsonRegressResponse(resp) : "");
}

}  // namespace strata::serve
