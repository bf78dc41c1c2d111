// The strata model server: TensorFlow Serving's REST and gRPC APIs, config files and flags, serving ONNX models
// laid out as <base_path>/<version>/model.onnx.
//
//   serve::ServerOptions opt;
//   opt.model_name = "iris";
//   opt.model_base_path = "/models/iris";
//   STRATA_ASSIGN_OR_RETURN(auto server, serve::Server::Start(opt));   // ports are open when this returns
//   ...
//   server->Stop();                                                      // drains in-flight requests
//
// Start() opens the ports at once; models load in the background and are served as they become AVAILABLE.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/status.h"

namespace strata::serve {

struct ServerOptions {
  // ---- listeners (TF Serving flag names in comments) ----
  std::string host = "0.0.0.0";   // address both listeners bind; tests use 127.0.0.1
  int grpc_port = 8500;           // --port; 0 = no gRPC listener; -1 = pick a free port (read it back)
  int rest_port = 8501;           // --rest_api_port; on by default here (TF Serving: 0 = off); 0 = off; -1 = free port
  int rest_num_threads = 0;       // --rest_api_num_threads; 0 = one per core (min 2)
  int64_t rest_timeout_ms = 30000;  // --rest_api_timeout_in_ms: deadline of a REST inference (→ 504)
  bool rest_cors = false;           // --rest_api_enable_cors_support
  int64_t max_request_bytes = 256ll << 20;  // REST body limit (413 above it); gzip bodies: 100 MiB decompressed
  // REST request-body bytes being received at once, over all connections (503 + Retry-After above it).
  int64_t rest_max_inflight_body_bytes = 1ll << 30;
  int64_t grpc_max_message_bytes = 2147483647;  // gRPC max receive/send message size (TF Serving: INT32_MAX)
  int grpc_max_threads = 0;         // --grpc_max_threads; 0 = gRPC's default
  std::string grpc_channel_arguments;  // --grpc_channel_arguments: "k=v,k2=v2"
  std::string ssl_config_file;         // --ssl_config_file: text SSLConfig (PEM contents)
  // --rest_api_tls: with --ssl_config_file, the REST API is served over HTTPS with the same certificate (and client
  // verification). false = plaintext REST, as TF Serving (whose SSLConfig covers gRPC only).
  bool rest_tls = true;
  bool tensor_content = false;         // --enable_serialization_as_tensor_content

  // ---- models ----
  std::string model_name = "default";  // --model_name (single-model mode)
  std::string model_base_path;         // --model_base_path (single-model mode)
  std::string model_config_file;       // --model_config_file: text ModelServerConfig
  int model_config_file_poll_wait_seconds = 0;  // > 0: re-read the config file every N s
  int file_system_poll_wait_seconds = 1;        // version scan period; 0 = scan once (and on every reload)
  int64_t version_stability_ms = 1000;  // a version dir is loaded once nothing in it changed for this long
  int max_num_load_retries = -1;        // -1 = retry for as long as the version is aspired
  int64_t load_retry_interval_micros = 1000000;  // first retry delay; doubles per failure up to 5 min
  int num_load_threads = 0;             // parallel loads; 0 = 2
  int max_status_history = 8;           // END versions kept per model in the status API (TF Serving keeps all)
  bool allow_version_labels_for_unavailable_models = false;

  // ---- execution ----
  int intra_op_threads = 0;       // --tensorflow_intra_op_parallelism (0 = one per core)
  int inter_op_threads = 0;       // --tensorflow_inter_op_parallelism (0 = auto; concurrent requests)
  int64_t model_memory_limit_bytes = 0;  // per loaded version: executor arena limit (0 = none) → 429 when exceeded
  // Per loaded version: compiled plans kept (one per distinct input shape, least recently used evicted first) and the
  // bytes they may hold (arenas; 0 = no bound of that kind).
  int64_t plan_cache_max_plans = 32;
  int64_t plan_cache_max_bytes = int64_t{1} << 30;
  std::string conv_algorithm = "auto";   // --conv_algorithm: auto (Winograd where it pays) or direct
  std::string precision = "fp32";        // --precision: fp32, or bf16 (convolutions and matmuls in bfloat16)
  bool enable_batching = false;          // --enable_batching
  std::string batching_parameters_file;  // --batching_parameters_file: text BatchingParameters
  // --adaptive_batch_timeout (strata): an open batch runs one estimated arrival gap before batch_timeout_micros, at
  // once when requests arrive more slowly than the timeout (docs/serving.md, "Batching").
  bool adaptive_batch_timeout = false;
  bool enable_model_warmup = true;       // --enable_model_warmup
  int num_request_iterations_for_warmup = 0;  // --num_request_iterations_for_warmup

  // --input_signature (graph::ParseInputSignature): input shapes fixed up front for every model served (each must
  // have the inputs it names); requests that do not fit get INVALID_ARGUMENT before any plan is compiled.
  std::string input_signature;

  // ---- monitoring ----
  // --profile_dir: enables POST /monitoring/profile?requests=N, which records the next N executions (requests, or
  // batches under --enable_batching) of every model and writes a Chrome trace to
  // <profile_dir>/plugins/profile/<time>/<host>.trace.json.gz (TensorBoard's profile plugin layout).
  // --profile_requests N > 0 arms it once at start.
  std::string profile_dir;
  int64_t profile_requests = 0;
  std::string monitoring_config_file;  // --monitoring_config_file: text MonitoringConfig
  // Prometheus metrics are on by default at this path (TF Serving: off unless the monitoring config enables them).
  bool metrics_enabled = true;
  std::string metrics_path = "/monitoring/prometheus/metrics";
  // --log_requests: one access log line per REST request and gRPC call (request_id, method, path, status,
  // duration_ms); in JSON with --log_format json. Every response carries X-Request-Id (gRPC: x-request-id) either way.
  bool log_requests = false;

  // ---- shutdown ----
  int64_t shutdown_grace_ms = 10000;  // Stop(): how long in-flight requests may take to finish
};

class Server {
 public:
  // Validates the options, reads the config files, opens the listeners and starts loading models. Errors are the
  // startup errors of tensorflow_model_server (missing base path and config file, bad config files, ...).
  static StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();  // calls Stop()

  // The bound ports (useful with port -1); 0 when that listener is off.
  int rest_port() const;
  int grpc_port() const;

  // Blocks until every configured model has a version AVAILABLE (OK) or until the timeout (DeadlineExceeded,
  // naming the models that are not ready and why). For tests and scripts.
  Status WaitUntilReady(std::chrono::milliseconds timeout);

  // Stops accepting connections, lets in-flight requests finish (at most shutdown_grace_ms), unloads the models.
  // Idempotent and thread-safe.
  void Stop();

  struct Impl;

 private:
  Server() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::serve
