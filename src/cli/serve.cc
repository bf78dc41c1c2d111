// strata serve: a drop-in for tensorflow_model_server. Takes its flags (--port, --rest_api_port, --model_name,
// --model_base_path, --model_config_file, ...), serves ONNX models laid out as <base_path>/<version>/model.onnx,
// and exits 0 after SIGTERM/SIGINT once in-flight requests finished (bounded by --shutdown_grace_ms).
#include <csignal>
#include <cstdio>
#include <map>
#include <pthread.h>

#include "cli/commands.h"
#include "core/logging.h"
#include "strata/serve.h"

namespace strata::cli {
namespace {

struct ServeArgs {
  serve::ServerOptions opt;
  int64_t session_parallelism = 0;
  bool version = false;
  bool enable_metrics = true;
  std::string log_format = "text";
};

// TF Serving flags that make no sense for an ONNX server: accepted so deployment scripts keep working, and logged.
const std::map<std::string, std::string>& IgnoredFlags() {
  static const std::map<std::string, std::string> flags = {
      {"saved_model_tags", "ONNX models have no MetaGraph tags"},
      {"per_process_gpu_memory_fraction", "strata serves on the CPU"},
      {"xla_cpu_compilation_enabled", "no XLA here"},
      {"xla_gpu_compilation_enabled", "no XLA here"},
      {"prefer_tflite_model", "no TFLite here"},
      {"num_tflite_pools", "no TFLite here"},
      {"num_tflite_interpreters_per_pool", "no TFLite here"},
      {"tensorflow_session_config_file", "TF ConfigProto does not apply to ONNX"},
      {"platform_config_file", "TF-specific"},
      {"enable_profiler", "no TF profiler service"},
      {"flush_filesystem_caches", "nothing to flush"},
      {"remove_unused_fields_from_bundle_metagraph", "no MetaGraph"},
      {"mixed_precision", "run the model's own dtypes"},
      {"skip_initialize_tpu", "no TPU"},
      {"thread_pool_factory_config_file", "not supported"},
      {"enable_grpc_healthcheck_service", "use GET /healthz and /readyz on the REST port"},
      {"grpc_socket_path", "UNIX-socket gRPC is not supported; use --port"},
      {"use_alts_credentials", "ALTS is not supported; use --ssl_config_file"},
      {"enable_per_model_batching_parameters", "one --batching_parameters_file applies to every model"},
      {"enable_signature_method_name_check", "signatures are synthesized with method_name predict"},
      {"num_unload_threads", "unloads run on the load threads"},
      {"model_base_path_prefix", "not supported"},
  };
  return flags;
}

// Warns about extra arguments: known TF Serving flags that are ignored, and unknown ones ("unknown argument: X", as
// tensorflow_model_server prints; the server still starts).
void WarnAboutExtras(const std::vector<std::string>& extras) {
  for (const std::string& arg : extras) {
    std::string name = arg;
    while (!name.empty() && name[0] == '-') name.erase(0, 1);
    name = name.substr(0, name.find('='));
    auto it = IgnoredFlags().find(name);
    if (it != IgnoredFlags().end())
      LogWarning("flag --", name, " is accepted for compatibility and ignored: ", it->second);
    else
      LogWarning("unknown argument: ", arg);
  }
}

int RunServer(ServeArgs& args) {
  if (args.version) {
    std::printf("TensorFlow ModelServer: strata-0.1.0 (TF Serving API compatible)\nTensorFlow Library: none "
                "(models are ONNX, run by strata's executor)\n");
    return 0;
  }
  serve::ServerOptions& o = args.opt;
  auto log_format = ParseLogFormat(args.log_format);
  if (!log_format.ok()) return ReportError(log_format.status());
  SetLogFormat(*log_format);
  if (o.intra_op_threads > 0 && o.inter_op_threads > 0 && args.session_parallelism > 0)
    return ReportError(InvalidArgumentError(
        "Failed to start server. Error: Either configure --tensorflow_session_parallelism or "
        "(--tensorflow_intra_op_parallelism, --tensorflow_inter_op_parallelism), not both"));
  if (args.session_parallelism > 0 && o.intra_op_threads <= 0 && o.inter_op_threads <= 0)
    o.intra_op_threads = o.inter_op_threads = static_cast<int>(args.session_parallelism);
  if (!args.enable_metrics) o.metrics_enabled = false;
  // Block the stop signals in every thread; this thread waits for them below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto server = serve::Server::Start(o);
  if (!server.ok()) {
    if (GetLogFormat() == LogFormat::kJson)  // every stderr line one JSON object
      LogError("Failed to start server. Error: ", server.status().ToString());
    else
      std::fprintf(stderr, "Failed to start server. Error: %s\n", server.status().ToString().c_str());
    ExitCode() = 1;
    return 1;
  }
  if (GetLogFormat() == LogFormat::kJson)
    LogInfo("strata serve: REST on port ", (*server)->rest_port(), ", gRPC on port ", (*server)->grpc_port(),
            "; SIGTERM or Ctrl-C stops");
  else
    std::fprintf(stderr, "strata serve: REST on port %d, gRPC on port %d; SIGTERM or Ctrl-C stops\n",
                 (*server)->rest_port(), (*server)->grpc_port());
  int sig = 0;
  sigwait(&signals, &sig);
  LogInfo("received ", sig == SIGTERM ? "SIGTERM" : "SIGINT", "; stopping");
  (*server)->Stop();
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  serve::ServerOptions& o = args->opt;
  auto* cmd = app.add_subcommand("serve", "Serve ONNX models with TensorFlow Serving's REST and gRPC APIs");
  cmd->allow_extras();
  // tensorflow_model_server's flags.
  cmd->add_option("--port", o.grpc_port, "gRPC port (default 8500; 0 = off)");
  cmd->add_option("--rest_api_port", o.rest_port, "REST port (default 8501 here; TF Serving's default 0 = off)");
  cmd->add_option("--rest_api_num_threads", o.rest_num_threads, "REST worker threads (0 = one per core)");
  cmd->add_option("--rest_api_timeout_in_ms", o.rest_timeout_ms, "Deadline of a REST inference (default 30000)");
  cmd->add_flag("--rest_api_enable_cors_support", o.rest_cors, "CORS headers on /v1 responses");
  cmd->add_option("--model_name", o.model_name, "Model name in single-model mode (default \"default\")");
  cmd->add_option("--model_base_path", o.model_base_path, "Absolute directory holding <version>/model.onnx");
  cmd->add_option("--model_config_file", o.model_config_file, "Text ModelServerConfig");
  cmd->add_option("--model_config_file_poll_wait_seconds", o.model_config_file_poll_wait_seconds,
                  "Re-read the config file every N seconds (0 = once)");
  cmd->add_option("--file_system_poll_wait_seconds", o.file_system_poll_wait_seconds,
                  "Scan base paths for versions every N seconds (default 1; 0 = once)");
  cmd->add_flag("--enable_batching", o.enable_batching, "Server-side batching");
  cmd->add_option("--batching_parameters_file", o.batching_parameters_file, "Text BatchingParameters");
  cmd->add_flag("--adaptive_batch_timeout", o.adaptive_batch_timeout,
                "Batching: run an open batch one estimated arrival gap before its timeout (strata extension)");
  cmd->add_flag("--allow_version_labels_for_unavailable_models", o.allow_version_labels_for_unavailable_models,
                "Accepted; labels may always point at versions that are not loaded yet");
  cmd->add_option("--monitoring_config_file", o.monitoring_config_file, "Text MonitoringConfig");
  cmd->add_flag("--enable_model_warmup", o.enable_model_warmup, "Replay assets.extra warmup requests (default true)");
  cmd->add_option("--num_request_iterations_for_warmup", o.num_request_iterations_for_warmup,
                  "Replay each warmup record N times");
  cmd->add_option("--tensorflow_intra_op_parallelism", o.intra_op_threads, "Threads inside one op (0 = cores)");
  cmd->add_option("--tensorflow_inter_op_parallelism", o.inter_op_threads,
                  "Model runs at once: REST workers and batch threads when those are not set (0 = cores)");
  cmd->add_option("--tensorflow_session_parallelism", args->session_parallelism, "Sets intra and inter when unset");
  cmd->add_option("--num_load_threads", o.num_load_threads, "Parallel model loads (default 2)");
  cmd->add_option("--max_num_load_retries", o.max_num_load_retries,
                  "Load retries after a failure (-1, the default here, = while the version is aspired)");
  cmd->add_option("--load_retry_interval_micros", o.load_retry_interval_micros,
                  "First retry delay; doubles per failure up to 5 minutes (default 1 s)");
  cmd->add_option("--ssl_config_file", o.ssl_config_file,
                  "Text SSLConfig: TLS for gRPC, and HTTPS for the REST API unless --rest_api_tls=false");
  cmd->add_option("--rest_api_tls", o.rest_tls,
                  "With --ssl_config_file, serve REST over HTTPS too (default true; false = plaintext REST, as TF "
                  "Serving)");
  cmd->add_option("--grpc_channel_arguments", o.grpc_channel_arguments, "k=v,k2=v2 gRPC server arguments");
  cmd->add_option("--grpc_max_threads", o.grpc_max_threads, "gRPC thread cap");
  cmd->add_flag("--enable_serialization_as_tensor_content", o.tensor_content,
                "gRPC Predict responses use tensor_content");
  cmd->add_flag("--version", args->version, "Print the version and exit");
  // strata additions.
  cmd->add_option("--grpc_max_message_bytes", o.grpc_max_message_bytes, "gRPC max message size (default 2 GiB)");
  cmd->add_option("--rest_api_max_request_bytes", o.max_request_bytes, "REST body limit (default 256 MiB; 413)");
  cmd->add_option("--rest_api_max_inflight_body_bytes", o.rest_max_inflight_body_bytes,
                  "REST request-body bytes being received at once, all connections (default 1 GiB; 503 above it)");
  cmd->add_option("--host", o.host, "Address both listeners bind (default 0.0.0.0)");
  cmd->add_option("--version_stability_ms", o.version_stability_ms,
                  "Load a version dir once nothing in it changed for this long (default 1000)");
  cmd->add_option("--model_memory_limit_bytes", o.model_memory_limit_bytes,
                  "Executor memory limit per loaded version (0 = none; over it: 429)");
  cmd->add_option("--plan_cache_max_plans", o.plan_cache_max_plans,
                  "Compiled plans kept per loaded version, one per input shape, least recently used evicted (default 32)");
  cmd->add_option("--plan_cache_max_bytes", o.plan_cache_max_bytes,
                  "Bytes those plans may hold per loaded version (default 1 GiB; 0 = count bound only)");
  cmd->add_option("--input_signature,--input-signature", o.input_signature,
                  "Fix input shapes up front for the served models: NAME:[-1,28,28,1]:float32 (-1/?/None: any size; "
                  "';' between inputs), [None,28,28,1] for a one-input model, or JSON. Requests that do not fit get "
                  "INVALID_ARGUMENT (naming input, expected and found shape) and compile no plan");
  cmd->add_option("--profile_dir", o.profile_dir,
                  "Enable POST /monitoring/profile?requests=N: a Chrome trace of the next N executions goes to "
                  "DIR/plugins/profile/<time>/<host>.trace.json.gz (TensorBoard profile plugin, chrome://tracing)");
  cmd->add_option("--profile_requests", o.profile_requests,
                  "With --profile_dir: record the first N executions after start (0 = wait for the endpoint)");
  cmd->add_option("--conv_algorithm", o.conv_algorithm,
                  "auto: Winograd for the 3x3 convolutions where it measured faster; direct: direct kernels only")
      ->check(CLI::IsMember({"auto", "direct"}));
  cmd->add_option("--precision", o.precision,
                  "fp32 (default); bf16: convolutions and matmuls in bfloat16 with float32 accumulation (float32 with "
                  "a warning on a CPU without avx512_bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--max_status_history", o.max_status_history, "END versions kept per model in status (default 8)");
  cmd->add_option("--shutdown_grace_ms", o.shutdown_grace_ms, "How long SIGTERM waits for in-flight requests");
  cmd->add_option("--log_format", args->log_format,
                  "text (default) or json: one JSON object per line (time, level, msg, fields) for log collectors")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--log_requests", o.log_requests,
                "An access log line per REST request and gRPC call: request_id, method, path, status, duration_ms "
                "(responses carry X-Request-Id either way)");
  cmd->add_flag("--enable_metrics", args->enable_metrics,
                "Prometheus metrics at /monitoring/prometheus/metrics without a monitoring config (default true)");
  cmd->callback([args, cmd] {
    WarnAboutExtras(cmd->remaining());
    RunServer(*args);
  });
}

}  // namespace strata::cli
