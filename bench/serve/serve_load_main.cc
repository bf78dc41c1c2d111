// strata_serve_load: closed-loop load against a TF-Serving-compatible REST endpoint (strata serve or
// tensorflow_model_server). Prints requests/s and latency percentiles.
//
//   strata_serve_load --port 8501 --target /v1/models/cnn:predict --instance_shape 1,28,28 --connections 32
//   strata_serve_load --port 8501 --target /v1/models/half:predict --body '{"instances": [1.0]}'
//   strata_serve_load --grpc --port 8500 --model cnn --input_name input --instance_shape 1,28,28 --connections 32
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "load_gen.h"
#ifdef STRATA_LOAD_WITH_GRPC
#include "grpc_load.h"
#endif

namespace {

// {"instances": [<one instance of shape dims, uniform [0,1) floats>, ... x batch]}
std::string RandomInstances(const std::vector<int64_t>& dims, int batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::string out = "{\"instances\": [";
  std::function<void(size_t)> emit = [&](size_t level) {
    if (level == dims.size()) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.4f", u(rng));
      out += buf;
      return;
    }
    out.push_back('[');
    for (int64_t i = 0; i < dims[level]; ++i) {
      if (i) out.push_back(',');
      emit(level + 1);
    }
    out.push_back(']');
  };
  for (int b = 0; b < batch; ++b) {
    if (b) out.push_back(',');
    emit(0);
  }
  return out + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  strata::serve::bench::LoadOptions o;
  std::string body_file, shape;
  int batch = 1;
  double duration_s = 10, warmup_s = 1;
  bool json = false;
  bool grpc = false;
  std::string model, input_name = "input", signature_name;
  int channels = 4;
  CLI::App app{"Closed-loop REST load generator for TF-Serving-compatible servers (loopback)"};
  app.add_option("--host", o.host, "Server address (default 127.0.0.1)");
  app.add_option("--port", o.port, "REST port")->required();
  app.add_option("--target", o.target, "Request path, e.g. /v1/models/cnn:predict (REST)");
  app.add_flag("--grpc", grpc, "gRPC PredictionService/Predict instead of REST (tensor_content; needs --model and "
               "--instance_shape)");
  app.add_option("--model", model, "gRPC: model_spec.name");
  app.add_option("--signature_name", signature_name, "gRPC: model_spec.signature_name (default serving_default)");
  app.add_option("--input_name", input_name, "gRPC: the input tensor's name (default input)");
  app.add_option("--channels", channels, "gRPC: HTTP/2 connections shared by the callers (default 4)");
  app.add_option("--method", o.method, "HTTP method (default POST)");
  app.add_option("--body", o.body, "Request body");
  app.add_option("--body_file", body_file, "Read the request body from a file");
  app.add_option("--instance_shape", shape, "Generate {\"instances\": ...} of random floats with this shape, e.g. 1,28,28");
  app.add_option("--batch", batch, "Instances per request with --instance_shape (default 1)");
  app.add_option("--connections", o.connections, "Concurrent keep-alive connections (default 32)");
  app.add_option("--duration", duration_s, "Measured seconds (default 10)");
  app.add_option("--warmup", warmup_s, "Unmeasured seconds first (default 1)");
  app.add_flag("--json", json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (!grpc && o.target.empty()) {
    std::fprintf(stderr, "--target is required for REST load (or pass --grpc)\n");
    return 2;
  }
  if (!body_file.empty()) {
    std::ifstream f(body_file);
    std::stringstream ss;
    ss << f.rdbuf();
    o.body = ss.str();
  } else if (!shape.empty()) {
    std::vector<int64_t> dims;
    std::stringstream ss(shape);
    for (std::string d; std::getline(ss, d, ',');) dims.push_back(std::stoll(d));
    o.body = RandomInstances(dims, batch, 42);
  }
  o.duration = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  o.warmup = std::chrono::milliseconds(static_cast<int64_t>(warmup_s * 1000));
  strata::serve::bench::LoadResult r;
  if (grpc) {
#ifdef STRATA_LOAD_WITH_GRPC
    strata::serve::bench::GrpcLoadOptions g;
    g.host = o.host;
    g.port = o.port;
    g.model = model;
    g.signature_name = signature_name;
    g.input_name = input_name;
    std::stringstream ss(shape);
    for (std::string d; std::getline(ss, d, ',');) g.shape.push_back(std::stoll(d));
    if (model.empty() || g.shape.empty()) {
      std::fprintf(stderr, "--grpc needs --model and --instance_shape\n");
      return 2;
    }
    g.shape.insert(g.shape.begin(), batch);
    g.callers = o.connections;
    g.channels = channels;
    g.duration = o.duration;
    g.warmup = o.warmup;
    r = strata::serve::bench::RunGrpcLoad(g);
#else
    std::fprintf(stderr, "this build has no gRPC (STRATA_WITH_GRPC=OFF)\n");
    return 2;
#endif
  } else {
    r = strata::serve::bench::RunLoad(o);
  }
  if (json) {
    std::printf("{\"connections\": %d, \"requests\": %lld, \"ok\": %lld, \"failed\": %lld, \"seconds\": %.2f, "
                "\"requests_per_second\": %.1f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
                o.connections, static_cast<long long>(r.requests), static_cast<long long>(r.ok),
                static_cast<long long>(r.failed), r.seconds, r.requests_per_second, r.p50_ms, r.p90_ms, r.p99_ms,
                r.max_ms);
  } else {
    std::printf("connections: %d\nrequests:    %lld in %.2f s (%lld ok, %lld failed)\nthroughput:  %.1f requests/s\n"
                "latency:     p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                o.connections, static_cast<long long>(r.requests), r.seconds, static_cast<long long>(r.ok),
                static_cast<long long>(r.failed), r.requests_per_second, r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms);
    for (const auto& e : r.errors) std::printf("error: %s\n", e.c_str());
  }
  return r.failed == 0 ? 0 : 1;
}
