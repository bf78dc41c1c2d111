// The gRPC front end: tensorflow.serving.PredictionService and ModelService over the Predictor. No gRPC headers
// here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/core/config.h"
#include "serve/core/predictor.h"
#include "serve/metrics.h"

namespace strata::serve {

struct GrpcOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0 = pick a free port
  int64_t max_message_bytes = 2147483647;
  int max_threads = 0;  // 0 = gRPC's default
  std::string channel_arguments;  // "k=v,k2=v2": ints as ints, other values as strings
  SslOptions ssl;
  bool use_ssl = false;
  bool tensor_content = false;  // responses in tensor_content instead of *_val
  bool access_log = false;      // one log line per call (request_id, method, status, duration_ms)
};

// Applies a new model list (HandleReloadConfigRequest); blocks until the new models settle.
using ReloadConfigFn = std::function<Status(const std::vector<ModelConfig>& configs)>;

class GrpcServer {
 public:
  static StatusOr<std::unique_ptr<GrpcServer>> Start(const GrpcOptions& options, Predictor* predictor,
                                                     ServingMetrics* metrics, ReloadConfigFn reload);
  ~GrpcServer();
  int port() const;
  // Stops accepting calls and waits (at most `grace`) for running ones.
  void Shutdown(std::chrono::milliseconds grace);

  struct Impl;

 private:
  GrpcServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::serve
