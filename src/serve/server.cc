// strata::serve::Server: reads the config files, starts the model manager, the batcher and the listeners.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/file_util.h"
#include "core/logging.h"
#include "core/parallel.h"
#include "serve/api/config_text.h"
#include "serve/core/batcher.h"
#include "serve/core/manager.h"
#include "serve/core/predictor.h"
#include "serve/http/http_server.h"
#include "serve/http/rest_api.h"
#include "serve/metrics.h"
#include "serve/warmup.h"
#include "strata/serve.h"
#ifdef STRATA_SERVE_WITH_GRPC
#include "serve/grpc/grpc_server.h"
#endif

namespace strata::serve {

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<ServingMetrics> metrics;
  std::unique_ptr<ModelManager> manager;
  std::unique_ptr<BatchScheduler> batcher;
  std::unique_ptr<Predictor> predictor;
  std::unique_ptr<RestApi> rest;
  std::unique_ptr<HttpServer> http;
#ifdef STRATA_SERVE_WITH_GRPC
  std::unique_ptr<GrpcServer> grpc;
#endif
  std::shared_ptr<graph::Profiler> profiler;  // --profile_dir
  std::thread config_poller;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool stopped = false;

  void PollConfigFile();
};

namespace {

Status ValidateOptions(const ServerOptions& o) {
  if (o.model_base_path.empty() && o.model_config_file.empty())
    return InvalidArgumentError("Both --model_base_path and --model_config_file are empty; give one of them");
  if (!o.batching_parameters_file.empty() && !o.enable_batching)
    return InvalidArgumentError("--batching_parameters_file is set without --enable_batching");
  if (o.adaptive_batch_timeout && !o.enable_batching)
    return InvalidArgumentError("--adaptive_batch_timeout is set without --enable_batching");
  if (o.grpc_port == 0 && o.rest_port == 0) return InvalidArgumentError("--port and --rest_api_port are both 0");
  if (o.plan_cache_max_plans < 1)
    return InvalidArgumentError("--plan_cache_max_plans must be at least 1, got ", o.plan_cache_max_plans);
  if (o.plan_cache_max_bytes < 0)
    return InvalidArgumentError("--plan_cache_max_bytes must be 0 (no byte bound) or positive, got ",
                                o.plan_cache_max_bytes);
  if (o.rest_max_inflight_body_bytes <= 0)
    return InvalidArgumentError("--rest_api_max_inflight_body_bytes must be positive, got ",
                                o.rest_max_inflight_body_bytes);
  STRATA_RETURN_IF_ERROR(graph::ParseConvAlgorithm(o.conv_algorithm, "--conv_algorithm").status());
  if (!o.input_signature.empty())
    STRATA_RETURN_IF_ERROR(graph::ParseInputSignature(o.input_signature, "--input_signature").status());
  if (o.profile_requests < 0 || (o.profile_requests > 0 && o.profile_dir.empty()))
    return InvalidArgumentError("--profile_requests needs --profile_dir and a count >= 0, got ", o.profile_requests,
                                o.profile_dir.empty() ? " without --profile_dir" : "");
  STRATA_RETURN_IF_ERROR(graph::ParsePrecision(o.precision, "--precision").status());
  return Status::OK();
}

StatusOr<std::vector<ModelConfig>> InitialModels(const ServerOptions& o) {
  if (!o.model_config_file.empty()) {
    if (!o.model_base_path.empty()) LogWarning("--model_base_path is ignored because --model_config_file is set");
    return ReadModelServerConfigFile(o.model_config_file);
  }
  ModelConfig m;
  m.name = o.model_name;
  m.base_path = o.model_base_path;
  m.platform = "tensorflow";
  std::vector<ModelConfig> list = {m};
  STRATA_RETURN_IF_ERROR(ValidateModelConfigList(list));
  return list;
}

void AddCollectors(ServingMetrics* metrics, ModelManager* manager, BatchScheduler* batcher) {
  metrics->AddCollector([manager, batcher](ServingMetrics& m) {
    m.process_rss_bytes.Set({}, static_cast<double>(ProcessRssBytes()));
    std::map<std::vector<std::string>, double> memory, misses, evictions, plan_bytes, states;
    for (const auto& s : manager->AvailableServables()) {
      const std::vector<std::string> key = {s->name(), std::to_string(s->version())};
      memory[key] = static_cast<double>(s->weight_bytes());
      const graph::RunStats stats = s->session().stats();
      misses[key] = static_cast<double>(stats.plan_cache_misses);
      evictions[key] = static_cast<double>(stats.plan_cache_evictions);
      plan_bytes[key] = static_cast<double>(stats.plan_cache_bytes);
    }
    for (const ModelSummary& sum : manager->Summaries())
      for (const VersionStatus& v : sum.versions)
        states[{sum.name, std::to_string(v.version), std::string(VersionStateName(v.state))}] = 1;
    m.model_memory_bytes.Reset(std::move(memory));
    m.plan_cache_misses.Reset(std::move(misses));
    m.plan_cache_evictions.Reset(std::move(evictions));
    m.plan_cache_bytes.Reset(std::move(plan_bytes));
    m.model_version_state.Reset(std::move(states));
    if (batcher) m.batch_queue_tasks.Set({}, static_cast<double>(batcher->queued_tasks()));
  });
}

// Arms the profiler for the next `requests` executions; the trace goes to <profile_dir>/plugins/profile/<time>/.
StatusOr<std::string> StartProfile(const std::shared_ptr<graph::Profiler>& profiler, const std::string& dir,
                                   int64_t requests) {
  if (profiler->active()) return FailedPreconditionError("a profile is being recorded already");
  profiler->Clear();
  profiler->StartForRuns(requests, [dir](graph::Profiler& p) {
    auto path = p.WriteTensorBoardTrace(dir);
    if (path.ok()) {
      LogInfo("profile: ", p.num_events(), " trace events in ", *path);
    } else {
      LogError("profile: ", path.status().message());
    }
  });
  LogInfo("profile: recording the next ", requests, " executions into ", dir);
  return JoinPath(JoinPath(dir, "plugins"), "profile");
}

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<Server> server(new Server());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.options = options;
  ServerOptions& o = impl.options;
  STRATA_ASSIGN_OR_RETURN(std::vector<ModelConfig> models, InitialModels(o));
  if (!o.monitoring_config_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(MonitoringOptions mon, ReadMonitoringConfigFile(o.monitoring_config_file));
    o.metrics_enabled = mon.prometheus_enable;
    if (!mon.prometheus_path.empty()) o.metrics_path = mon.prometheus_path;
  }
  if (o.intra_op_threads > 0) SetIntraOpThreads(o.intra_op_threads);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl.metrics = std::make_unique<ServingMetrics>();
  ServingMetrics* metrics = impl.metrics.get();

  if (o.enable_batching) {
    BatchingOptions bo;
    if (!o.batching_parameters_file.empty()) {
      STRATA_ASSIGN_OR_RETURN(bo, ReadBatchingParametersFile(o.batching_parameters_file));
    } else {
      bo.thread_pool_name = "model_server_batch_threads";
    }
    if (bo.num_batch_threads <= 0) bo.num_batch_threads = o.inter_op_threads > 0 ? o.inter_op_threads : cores;
    bo.adaptive_batch_timeout = o.adaptive_batch_timeout;
    impl.batcher = std::make_unique<BatchScheduler>(bo, metrics);
    LogInfo("batching on: max_batch_size ", bo.max_batch_size, ", batch_timeout_micros ", bo.batch_timeout_micros,
            ", max_enqueued_batches ", bo.max_enqueued_batches, ", num_batch_threads ", bo.num_batch_threads,
            bo.allowed_batch_sizes.empty() ? std::string() : StrCat(", allowed_batch_sizes ", StrJoin(bo.allowed_batch_sizes, ",")),
            bo.enable_large_batch_splitting ? ", large requests split" : ", large requests rejected",
            bo.adaptive_batch_timeout ? ", adaptive batch timeout" : "");
  }

  ManagerOptions mo;
  mo.file_system_poll_wait_seconds = o.file_system_poll_wait_seconds;
  mo.version_stability_ms = o.version_stability_ms;
  mo.max_num_load_retries = o.max_num_load_retries;
  mo.retry_initial_ms = std::max<int64_t>(1, o.load_retry_interval_micros / 1000);
  mo.num_load_threads = o.num_load_threads > 0 ? o.num_load_threads : 2;
  mo.max_status_history = o.max_status_history;
  mo.unload_drain_ms = std::max<int64_t>(o.shutdown_grace_ms, 1000);
  LoadOptions lo{o.intra_op_threads, o.model_memory_limit_bytes, o.plan_cache_max_plans, o.plan_cache_max_bytes,
                 graph::ParseConvAlgorithm(o.conv_algorithm).value(),  // validated by ValidateOptions
                 graph::ParsePrecision(o.precision).value()};
  if (!o.input_signature.empty()) lo.input_signature = graph::ParseInputSignature(o.input_signature).value();
  if (!o.profile_dir.empty()) {
    impl.profiler = std::make_shared<graph::Profiler>();
    lo.profiler = impl.profiler;
  }
  WarmupOptions wo{o.enable_model_warmup, o.num_request_iterations_for_warmup};
  mo.loader = [lo, wo, metrics](const std::string& name, int64_t version,
                                const std::string& dir) -> StatusOr<std::shared_ptr<Servable>> {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Servable> s, Servable::Load(name, version, dir, lo));
    STRATA_RETURN_IF_ERROR(RunWarmup(*s, wo, metrics));
    return s;
  };
  mo.on_load = [metrics](const std::string& dir, const Status& result, int64_t micros) {
    metrics->load_attempt_count.Add({dir, result.ok() ? "success" : "fail"});
    metrics->load_latency.Add({dir}, micros);
  };
  impl.manager = std::make_unique<ModelManager>(std::move(mo));
  impl.predictor = std::make_unique<Predictor>(impl.manager.get(), impl.batcher.get(), metrics);
  AddCollectors(metrics, impl.manager.get(), impl.batcher.get());
  // Failed requests count under their model's name only when the model is configured (see CountRequest).
  metrics->SetKnownModelFilter([manager = impl.manager.get()](const std::string& name) {
    for (const ModelConfig& c : manager->config())
      if (c.name == name) return true;
    return false;
  });

  // Listeners open at once; models are served as they become AVAILABLE.
  if (o.rest_port > 0 && o.rest_port == o.grpc_port) {
    LogError("--rest_api_port equals --port (", o.rest_port, "); the REST API is not started");
    o.rest_port = 0;
  }
  // --ssl_config_file, read once: gRPC's TLS and (unless --rest_api_tls=false) REST's HTTPS.
  std::optional<SslOptions> ssl;
  if (!o.ssl_config_file.empty() && (o.grpc_port != 0 || (o.rest_port != 0 && o.rest_tls))) {
    STRATA_ASSIGN_OR_RETURN(ssl, ReadSslConfigFile(o.ssl_config_file));
  }
  if (o.rest_port != 0) {
    RestOptions ro{o.rest_timeout_ms, o.rest_cors, o.metrics_enabled, o.metrics_path};
    if (impl.profiler)
      ro.start_profile = [profiler = impl.profiler, dir = o.profile_dir](int64_t n) {
        return StartProfile(profiler, dir, n);
      };
    impl.rest = std::make_unique<RestApi>(impl.predictor.get(), metrics, ro);
    HttpServerOptions ho;
    ho.access_log = o.log_requests;
    ho.host = o.host;
    ho.port = o.rest_port < 0 ? 0 : o.rest_port;
    ho.threads = o.rest_num_threads > 0 ? o.rest_num_threads
                                         : (o.inter_op_threads > 0 ? o.inter_op_threads : std::max(2, cores));
    ho.body_limit = o.max_request_bytes;
    ho.inflight_body_limit = o.rest_max_inflight_body_bytes;
    if (o.rest_tls) ho.tls = ssl;
    RestApi* rest = impl.rest.get();
    STRATA_ASSIGN_OR_RETURN(impl.http,
                            HttpServer::Start(ho, [rest](HttpRequest&& r, Responder done) {
                              rest->Handle(std::move(r), std::move(done));
                            }));
    HttpServer* http = impl.http.get();
    metrics->AddCollector([http](ServingMetrics& m) {
      m.rest_body_bytes_in_flight.Set({}, static_cast<double>(http->body_bytes_in_flight()));
    });
    LogInfo("REST API listening on ", o.host, ":", impl.http->port(), " (", ho.tls ? "HTTPS, " : "", ho.threads,
            " threads",
            o.metrics_enabled ? StrCat(", Prometheus metrics at ", o.metrics_path) : std::string(), ")");
  }
#ifdef STRATA_SERVE_WITH_GRPC
  if (o.grpc_port != 0) {
    GrpcOptions go;
    go.access_log = o.log_requests;
    go.host = o.host;
    go.port = o.grpc_port < 0 ? 0 : o.grpc_port;
    go.max_message_bytes = o.grpc_max_message_bytes;
    go.max_threads = o.grpc_max_threads;
    go.channel_arguments = o.grpc_channel_arguments;
    go.tensor_content = o.tensor_content;
    if (ssl) {
      go.ssl = *ssl;
      go.use_ssl = true;
    }
    ModelManager* manager = impl.manager.get();
    STRATA_ASSIGN_OR_RETURN(impl.grpc, GrpcServer::Start(go, impl.predictor.get(), metrics,
                                                         [manager](const std::vector<ModelConfig>& configs) {
                                                           return manager->ReloadConfig(configs, true,
                                                                                        std::chrono::minutes(5));
                                                         }));
    LogInfo("gRPC API listening on ", o.host, ":", impl.grpc->port(), go.use_ssl ? " (TLS)" : "");
  }
#else
  if (o.grpc_port != 0) LogWarning("this build has no gRPC support (STRATA_WITH_GRPC=OFF); --port is ignored");
#endif
  LogInfo("threads: intra-op ", IntraOpThreads(), ", REST workers ", impl.http ? std::to_string(o.rest_num_threads > 0 ? o.rest_num_threads : 0) : "-",
          impl.batcher ? StrCat(", batch threads ", impl.batcher->options().num_batch_threads) : std::string());
  STRATA_RETURN_IF_ERROR(impl.manager->Start(models));
  // (Model warmup runs of versions still loading count as executions too.)
  if (impl.profiler && o.profile_requests > 0)
    STRATA_RETURN_IF_ERROR(StartProfile(impl.profiler, o.profile_dir, o.profile_requests).status());
  for (const ModelConfig& m : models)
    LogInfo("serving model '", m.name, "' from ", m.base_path, " (version policy ", m.policy.ToString(), ")");
  if (!o.model_config_file.empty() && o.model_config_file_poll_wait_seconds > 0)
    impl.config_poller = std::thread([&impl] { impl.PollConfigFile(); });
  return server;
}

void Server::Impl::PollConfigFile() {
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    cv.wait_for(lock, std::chrono::seconds(options.model_config_file_poll_wait_seconds));
    if (stopping) break;
    lock.unlock();
    auto configs = ReadModelServerConfigFile(options.model_config_file);
    if (!configs.ok()) {
      LogError("keeping the current model config: ", configs.status().message());
    } else if (*configs != manager->config()) {
      LogInfo("model config file changed; reloading");
      Status s = manager->ReloadConfig(*configs, false, std::chrono::milliseconds(0));
      if (!s.ok()) LogError("config reload failed: ", s.message());
    }
    lock.lock();
  }
}

Server::~Server() { Stop(); }

int Server::rest_port() const { return impl_->http ? impl_->http->port() : 0; }

int Server::grpc_port() const {
#ifdef STRATA_SERVE_WITH_GRPC
  return impl_->grpc ? impl_->grpc->port() : 0;
#else
  return 0;
#endif
}

Status Server::WaitUntilReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  while (!impl_->manager->AllReady(&why)) {
    if (std::chrono::steady_clock::now() >= deadline)
      return DeadlineExceededError("models not ready after ", timeout.count(), " ms: ", why);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::OK();
}

void Server::Stop() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->config_poller.joinable()) impl_->config_poller.join();
  const auto grace = std::chrono::milliseconds(impl_->options.shutdown_grace_ms);
  if (!impl_->manager) return;  // Start() failed before anything ran
  LogInfo("shutting down: no new connections; waiting up to ", grace.count(), " ms for requests in flight");
#ifdef STRATA_SERVE_WITH_GRPC
  std::thread grpc_stop;
  if (impl_->grpc) grpc_stop = std::thread([this, grace] { impl_->grpc->Shutdown(grace); });
#endif
  if (impl_->http) impl_->http->Shutdown(grace);
#ifdef STRATA_SERVE_WITH_GRPC
  if (grpc_stop.joinable()) grpc_stop.join();
#endif
  if (impl_->batcher) impl_->batcher->Stop();
  if (impl_->manager) impl_->manager->Stop();
  LogInfo("server stopped");
}

}  // namespace strata::serve
