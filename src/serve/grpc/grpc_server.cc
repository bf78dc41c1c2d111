#include "serve/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/server_interceptor.h>
#ifdef STRATA_HAVE_ABSL_SYNCHRONIZATION
#include <absl/synchronization/mutex.h>
#endif

#include <charconv>
#include <cstdio>
#include <future>
#include <string_view>
#include <utility>

#include "core/logging.h"
#include "serve/grpc/grpc_services.h"
#include "serve/grpc/kserve_grpc.h"
#include "serve/http/http_server.h"

namespace strata::serve {

struct GrpcServer::Impl {
  std::unique_ptr<PredictionServiceImpl> prediction;
  std::unique_ptr<ModelServiceImpl> model;
  std::unique_ptr<InferenceServiceImpl> inference;  // Open Inference Protocol (KServe v2)
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  bool stopped = false;
};

namespace {

void AddChannelArguments(const std::string& args, grpc::ServerBuilder* builder) {
  size_t pos = 0;
  while (pos < args.size()) {
    size_t end = args.find(',', pos);
    if (end == std::string::npos) end = args.size();
    const std::string kv = args.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      LogWarning("--grpc_channel_arguments: ignoring '", kv, "' (expected key=value)");
      continue;
    }
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    int v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec == std::errc() && r.ptr == value.data() + value.size())
      builder->AddChannelArgument(key, v);
    else
      builder->AddChannelArgument(key, value);
  }
}

// The request message of each method ("/tensorflow.serving.PredictionService/Predict" → "PredictRequest"). A table
// rather than a descriptor lookup: the descriptors of the service files are not linked in (nothing references them).
std::string RequestTypeName(const char* method) {
  static constexpr std::pair<std::string_view, std::string_view> kRequestTypes[] = {
      {"/tensorflow.serving.PredictionService/Classify", "ClassificationRequest"},
      {"/tensorflow.serving.PredictionService/Regress", "RegressionRequest"},
      {"/tensorflow.serving.PredictionService/Predict", "PredictRequest"},
      {"/tensorflow.serving.PredictionService/MultiInference", "MultiInferenceRequest"},
      {"/tensorflow.serving.PredictionService/GetModelMetadata", "GetModelMetadataRequest"},
      {"/tensorflow.serving.ModelService/GetModelStatus", "GetModelStatusRequest"},
      {"/tensorflow.serving.ModelService/HandleReloadConfigRequest", "ReloadConfigRequest"},
      {"/inference.GRPCInferenceService/ModelInfer", "ModelInferRequest"},
      {"/inference.GRPCInferenceService/ModelMetadata", "ModelMetadataRequest"},
      {"/inference.GRPCInferenceService/ModelReady", "ModelReadyRequest"},
  };
  const std::string_view m = method ? method : "";
  for (const auto& [path, type] : kRequestTypes)
    if (path == m) return std::string(type);
  return "the request message";
}

// Every call passes through this interceptor:
// - A request whose bytes do not parse as the method's request message never reaches the handler: gRPC answers
//   INTERNAL with an empty message. The interceptor sees the failed parse (no received message) and answers
//   INVALID_ARGUMENT "could not parse PredictRequest" instead.
// - The request id: the client's x-request-id metadata (a plain token of at most 128 characters) or one made here,
//   sent back in the initial metadata and put on the access log line (with --log_requests).
class CallInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallInterceptor(grpc::experimental::ServerRpcInfo* info, bool access_log)
      : info_(info), access_log_(access_log), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_INITIAL_METADATA)) {
      std::string_view client;
      if (auto* md = methods->GetRecvInitialMetadata()) {
        auto it = md->find("x-request-id");
        if (it != md->end()) client = std::string_view(it->second.data(), it->second.size());
      }
      id_ = RequestIdFor(client);
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
      if (id_.empty()) id_ = RequestIdFor("");
      if (auto* md = methods->GetSendInitialMetadata()) md->emplace("x-request-id", id_);
    }
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) && methods->GetRecvMessage() == nullptr)
      parse_failed_ = true;
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      // gRPC's own answer to a body that does not parse: INTERNAL from a synchronous method, UNIMPLEMENTED with no
      // message from a callback one (Predict).
      const grpc::StatusCode code = methods->GetSendStatus().error_code();
      if (parse_failed_ && (code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNIMPLEMENTED))
        methods->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                               StrCat("could not parse ", RequestTypeName(info_->method()))));
      if (access_log_) {
        LogFields(LogLevel::kInfo, "request",
                  {{"request_id", id_.empty() ? RequestIdFor("") : id_},
                   {"protocol", "GRPC"},
                   {"method", info_->method() ? info_->method() : ""},
                   {"status", std::to_string(static_cast<int>(methods->GetSendStatus().error_code())), true},
                   {"duration_ms", MillisecondsSince(start_), true}});
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  bool access_log_;
  std::chrono::steady_clock::time_point start_;
  std::string id_;
  bool parse_failed_ = false;
};

class CallInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallInterceptorFactory(bool access_log) : access_log_(access_log) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new CallInterceptor(info, access_log_);
  }

 private:
  bool access_log_;
};

// The services whose health is reported by name, besides the whole server's ("").
constexpr const char* kHealthServices[] = {"tensorflow.serving.PredictionService", "tensorflow.serving.ModelService",
                                           "inference.GRPCInferenceService"};

std::shared_ptr<grpc::ServerCredentials> Credentials(const GrpcOptions& o) {
  if (!o.use_ssl) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(o.ssl.client_verify
                                            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                            : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_root_certs = o.ssl.custom_ca;
  ssl.pem_key_cert_pairs.push_back({o.ssl.server_key, o.ssl.server_cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const GrpcOptions& options, Predictor* predictor,
                                                        ServingMetrics* metrics, ReloadConfigFn reload) {
#ifdef STRATA_HAVE_ABSL_SYNCHRONIZATION
  // Debian's absl is built without NDEBUG, so absl::Mutex checks lock order (a graph of every mutex held together,
  // GraphCycles) on each of gRPC's internal locks: about 3 us of CPU per Predict call in a profile. TF Serving's
  // release builds run with it off; so does strata's server.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  std::unique_ptr<GrpcServer> server(new GrpcServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.prediction = std::make_unique<PredictionServiceImpl>(predictor, metrics, options.tensor_content);
  impl.model = std::make_unique<ModelServiceImpl>(predictor, metrics, std::move(reload));
  impl.inference = std::make_unique<InferenceServiceImpl>(predictor, metrics);
  // The standard grpc.health.v1.Health service (Kubernetes' gRPC probes, grpc_health_probe) and server reflection
  // (grpcurl, grpc_cli list): both are read by the builder, so they are switched on before it is made.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = StrCat(options.host, ":", options.port);
  builder.AddListeningPort(address, Credentials(options), &impl.port);
  const int max_message = static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  if (options.max_threads > 0) {
    grpc::ResourceQuota quota("strata_grpc");
    quota.SetMaxThreads(options.max_threads);
    builder.SetResourceQuota(quota);
  }
  AddChannelArguments(options.channel_arguments, &builder);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<CallInterceptorFactory>(options.access_log));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(impl.prediction.get());
  builder.RegisterService(impl.model.get());
  builder.RegisterService(impl.inference.get());
  impl.server = builder.BuildAndStart();
  if (!impl.server || impl.port == 0)
    return UnavailableError("cannot listen for gRPC on ", address, " (port in use or bad address)");
  if (grpc::HealthCheckServiceInterface* health = impl.server->GetHealthCheckService()) {
    health->SetServingStatus(true);  // the server as a whole ("")
    for (const char* service : kHealthServices) health->SetServingStatus(service, true);
  }
  return server;
}

GrpcServer::~GrpcServer() { Shutdown(std::chrono::milliseconds(0)); }

int GrpcServer::port() const { return impl_->port; }

void GrpcServer::Shutdown(std::chrono::milliseconds grace) {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // NOT_SERVING from here on, so that load balancers stop sending while the requests in flight finish.
  if (grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService()) health->Shutdown();
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
}

}  // namespace strata::serve
