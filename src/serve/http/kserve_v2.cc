#include "serve/http/kserve_v2.h"

#include <charconv>
#include <vector>

#include "serve/api/json_codec.h"
#include "serve/api/kserve_codec.h"
#include "serve/http/rest_url.h"
#include "serve/metrics.h"

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse ErrorResponse(const Status& s) { return JsonResponse(HttpStatusFor(s.code()), JsonError(s.message())); }

HttpResponse MethodNotAllowed(const HttpRequest& request, const std::string& path, const char* allowed) {
  HttpResponse r = JsonResponse(405, JsonError(StrCat(request.method, " ", path, " is not allowed; use ", allowed)));
  r.headers.emplace_back("Allow", allowed);
  return r;
}

std::vector<std::string> SplitPath(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find('/', pos), s.size());
    parts.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

}  // namespace

void KserveV2Api::Handle(HttpRequest&& request, const std::string& path, Deadline deadline, Responder respond) {
  const bool get = request.method == "GET";
  if (path == "/v2" || path == "/v2/") {
    if (!get) return respond(MethodNotAllowed(request, path, "GET"));
    return respond(JsonResponse(200, V2ServerMetadata()));
  }
  if (path == "/v2/health/live") {
    if (!get) return respond(MethodNotAllowed(request, path, "GET"));
    return respond(JsonResponse(200, "{\"live\":true}"));
  }
  if (path == "/v2/health/ready") {
    if (!get) return respond(MethodNotAllowed(request, path, "GET"));
    std::string why;
    if (predictor_->manager()->AllReady(&why)) return respond(JsonResponse(200, "{\"ready\":true}"));
    std::string body = "{\"ready\":false,\"error\":";
    AppendJsonString(&body, why);
    return respond(JsonResponse(503, body + "}"));
  }
  constexpr std::string_view kModels = "/v2/models/";
  const auto unknown = [&] {
    respond(JsonResponse(404, JsonError(StrCat("no Open Inference Protocol route ", request.method, " ", path,
                                               "; the routes are /v2, /v2/health/live, /v2/health/ready and "
                                               "/v2/models/{name}[/versions/{version}][/ready|/infer]"))));
  };
  if (path.compare(0, kModels.size(), kModels) != 0) return unknown();
  std::vector<std::string> parts = SplitPath(path.substr(kModels.size()));
  ModelSpec spec;
  spec.name = UrlUnescape(parts[0]);
  if (spec.name.empty()) return unknown();
  size_t i = 1;
  if (i < parts.size() && parts[i] == "versions") {
    if (i + 1 >= parts.size()) return unknown();
    const std::string& v = parts[i + 1];
    int64_t version = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), version);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || version <= 0)
      return respond(ErrorResponse(InvalidArgumentError("model version in ", path,
                                                        " must be a positive integer, found '", v, "'")));
    spec.version = version;
    i += 2;
  }
  const std::string action = i < parts.size() ? parts[i] : "";
  if (i + 1 < parts.size() || (i < parts.size() && action != "ready" && action != "infer")) return unknown();
  if (action == "infer") {
    if (request.method != "POST") return respond(MethodNotAllowed(request, path, "POST"));
    return Infer(std::move(request), spec, deadline, std::move(respond));
  }
  if (!get) return respond(MethodNotAllowed(request, path, "GET"));
  if (action.empty()) return ModelMetadata(spec, respond);
  auto servable = predictor_->Resolve(spec);
  if (!servable.ok()) return respond(ErrorResponse(servable.status()));
  std::string body = "{\"name\":";
  AppendJsonString(&body, spec.name);
  respond(JsonResponse(200, body + ",\"ready\":true}"));
}

void KserveV2Api::ModelMetadata(const ModelSpec& spec, const Responder& respond) {
  auto servable = predictor_->Resolve(spec);
  if (!servable.ok()) return respond(ErrorResponse(servable.status()));
  auto sig = Predictor::ResolveSignature(**servable, "");
  if (!sig.ok()) return respond(ErrorResponse(sig.status()));
  std::vector<int64_t> versions;
  auto status = predictor_->manager()->GetStatus(spec.name, std::nullopt);
  if (status.ok())
    for (const VersionStatus& v : *status)
      if (v.state == VersionState::kAvailable) versions.push_back(v.version);
  // Every servable is an ONNX model run by strata's executor, whatever model_platform the config names.
  respond(JsonResponse(200, V2ModelMetadata(spec.name, versions, "onnx", **sig)));
}

void KserveV2Api::Infer(HttpRequest&& request, const ModelSpec& spec, Deadline deadline, Responder respond) {
  const Clock::time_point received = request.received;
  ServingMetrics* metrics = predictor_->metrics();
  auto finish = [metrics, name = spec.name, received, respond](const Status& s, HttpResponse r) {
    if (metrics) metrics->CountRequest(name, s, "infer", "REST", received);
    respond(s.ok() ? std::move(r) : ErrorResponse(s));
  };
  std::string_view body = request.body, binary;
  if (!request.inference_header_content_length.empty()) {
    const std::string& h = request.inference_header_content_length;
    size_t n = 0;
    auto r = std::from_chars(h.data(), h.data() + h.size(), n);
    if (r.ec != std::errc() || r.ptr != h.data() + h.size() || n > body.size())
      return finish(InvalidArgumentError("Inference-Header-Content-Length must be a byte count of at most the body's ",
                                         body.size(), " bytes, found '", h, "'"),
                    {});
    binary = body.substr(n);
    body = body.substr(0, n);
  }
  auto servable = predictor_->Resolve(spec);
  if (!servable.ok()) return finish(servable.status(), {});
  auto parsed = ParseV2InferRequest(body, binary);
  if (!parsed.ok())
    return finish(Status(parsed.status().code(), StrCat("model '", spec.name, "': ", parsed.status().message())), {});
  PredictRequest req;
  req.model_spec = spec;
  req.deadline = deadline;
  req.inputs = std::move(parsed->inputs);
  std::vector<bool> binary_outputs;
  for (const V2RequestedOutput& o : parsed->outputs) {
    req.output_filter.push_back(o.name);
    binary_outputs.push_back(o.binary);
  }
  const bool binary_default = parsed->binary_data_output;
  predictor_->PredictWith(
      std::move(servable).value(), std::move(req),
      [finish, binary_outputs, binary_default, id = parsed->id](Status st, PredictResponse resp) mutable {
        if (!st.ok()) return finish(st, {});
        if (binary_outputs.empty()) binary_outputs.assign(resp.outputs.size(), binary_default);
        size_t json_size = 0;
        HttpResponse r;
        r.body = V2InferResponse(resp.model_spec.name, resp.model_spec.version.value_or(0), id, resp.outputs,
                                 binary_outputs, &json_size);
        if (json_size != r.body.size()) {
          r.content_type = "application/octet-stream";
          r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(json_size));
        }
        finish(Status::OK(), std::move(r));
      });
}

}  // namespace strata::serve
