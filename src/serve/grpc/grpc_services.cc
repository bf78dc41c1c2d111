#include "serve/grpc/grpc_services.h"

#include <future>
#include <set>

#include "serve/api/proto_codec.h"

namespace strata::serve {

using Clock = std::chrono::steady_clock;
namespace pb = tensorflow::serving;

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  std::string msg = s.message();
  if (msg.size() > 1024) msg = msg.substr(0, 1024) + "...TRUNCATED";
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())), msg);
}

Deadline ClientDeadline(const grpc::ServerContextBase* ctx) {
  const auto d = ctx->deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) return NoDeadline();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(d - std::chrono::system_clock::now());
}

grpc::Status PredictionServiceImpl::Count(const std::string& model, const char* api, Clock::time_point start,
                                          const Status& s) {
  if (metrics_) metrics_->CountRequest(model, s, api, "GRPC", start);
  return ToGrpcStatus(s);
}

grpc::ServerUnaryReactor* PredictionServiceImpl::Predict(grpc::CallbackServerContext* ctx,
                                                         const pb::PredictRequest* req, pb::PredictResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const auto start = Clock::now();
  auto request = PredictRequestFromProto(*req);
  if (!request.ok()) {
    reactor->Finish(Count(req->model_spec().name(), "Predict", start, request.status()));
    return reactor;
  }
  request->deadline = ClientDeadline(ctx);
  // `req` and `resp` live until Finish.
  predictor_->Predict(std::move(request).value(), [this, reactor, req, resp, start](Status s, PredictResponse r) {
    if (s.ok()) PredictResponseToProto(r, tensor_content_, resp);
    reactor->Finish(Count(req->model_spec().name(), "Predict", start, s));
  });
  return reactor;
}

grpc::Status PredictionServiceImpl::Classify(grpc::ServerContext* ctx, const pb::ClassificationRequest* req,
                                             pb::ClassificationResponse* resp) {
  const auto start = Clock::now();
  const std::string& model = req->model_spec().name();
  auto input = ExampleInputFromProto(req->input());
  if (!input.ok()) return Count(model, "Classify", start, input.status());
  ClassifyRequest r{ModelSpecFromProto(req->model_spec()), std::move(input).value(), ClientDeadline(ctx)};
  ClassifyResponse out;
  Status s = predictor_->Classify(r, &out);
  if (s.ok()) ClassifyResponseToProto(out, resp);
  return Count(model, "Classify", start, s);
}

grpc::Status PredictionServiceImpl::Regress(grpc::ServerContext* ctx, const pb::RegressionRequest* req,
                                            pb::RegressionResponse* resp) {
  const auto start = Clock::now();
  const std::string& model = req->model_spec().name();
  auto input = ExampleInputFromProto(req->input());
  if (!input.ok()) return Count(model, "Regress", start, input.status());
  RegressRequest r{ModelSpecFromProto(req->model_spec()), std::move(input).value(), ClientDeadline(ctx)};
  RegressResponse out;
  Status s = predictor_->Regress(r, &out);
  if (s.ok()) RegressResponseToProto(out, resp);
  return Count(model, "Regress", start, s);
}

grpc::Status PredictionServiceImpl::MultiInference(grpc::ServerContext* ctx, const pb::MultiInferenceRequest* req,
                                                   pb::MultiInferenceResponse* resp) {
  if (req->tasks_size() == 0) return ToGrpcStatus(InvalidArgumentError("Inference task list is empty."));
  auto input = ExampleInputFromProto(req->input());
  if (!input.ok()) return ToGrpcStatus(input.status());
  const std::string model = req->tasks(0).model_spec().name();
  std::set<std::string> signatures;
  for (const auto& task : req->tasks()) {
    if (task.model_spec().name() != model)
      return ToGrpcStatus(InvalidArgumentError("All ModelSpecs in a MultiInferenceRequest must access the same model "
                                               "name."));
    if (!signatures.insert(task.model_spec().signature_name()).second)
      return ToGrpcStatus(InvalidArgumentError("Duplicate evaluation of signature: ",
                                               task.model_spec().signature_name()));
    if (task.method_name() != "tensorflow/serving/classify" && task.method_name() != "tensorflow/serving/regress")
      return ToGrpcStatus(UnimplementedError("Unsupported signature method_name: ", task.method_name()));
  }
  for (const auto& task : req->tasks()) {
    auto* result = resp->add_results();
    const ModelSpec spec = ModelSpecFromProto(task.model_spec());
    if (task.method_name() == "tensorflow/serving/classify") {
      ClassifyResponse out;
      Status s = predictor_->Classify({spec, *input, ClientDeadline(ctx)}, &out);
      if (!s.ok()) return ToGrpcStatus(s);
      pb::ClassificationResponse tmp;
      ClassifyResponseToProto(out, &tmp);
      *result->mutable_model_spec() = tmp.model_spec();
      *result->mutable_classification_result() = tmp.result();
    } else {
      RegressResponse out;
      Status s = predictor_->Regress({spec, *input, ClientDeadline(ctx)}, &out);
      if (!s.ok()) return ToGrpcStatus(s);
      pb::RegressionResponse tmp;
      RegressResponseToProto(out, &tmp);
      *result->mutable_model_spec() = tmp.model_spec();
      *result->mutable_regression_result() = tmp.result();
    }
  }
  return grpc::Status::OK;
}

grpc::Status PredictionServiceImpl::GetModelMetadata(grpc::ServerContext*, const pb::GetModelMetadataRequest* req,
                                                     pb::GetModelMetadataResponse* resp) {
  if (!req->has_model_spec()) return ToGrpcStatus(InvalidArgumentError("Missing ModelSpec"));
  if (req->metadata_field_size() == 0)
    return ToGrpcStatus(InvalidArgumentError("GetModelMetadataRequest must specify at least one metadata_field"));
  for (const auto& field : req->metadata_field())
    if (field != "signature_def")
      return ToGrpcStatus(InvalidArgumentError("Metadata field ", field, " is not supported"));
  auto servable = predictor_->Resolve(ModelSpecFromProto(req->model_spec()));
  if (!servable.ok()) return ToGrpcStatus(servable.status());
  resp->mutable_model_spec()->set_name((*servable)->name());
  resp->mutable_model_spec()->mutable_version()->set_value((*servable)->version());
  pb::SignatureDefMap map;
  SignatureMapToProto((*servable)->signatures(), &map);
  (*resp->mutable_metadata())["signature_def"].PackFrom(map);
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::GetModelStatus(grpc::ServerContext*, const pb::GetModelStatusRequest* req,
                                              pb::GetModelStatusResponse* resp) {
  if (!req->has_model_spec()) return ToGrpcStatus(InvalidArgumentError("Missing ModelSpec"));
  const ModelSpec spec = ModelSpecFromProto(req->model_spec());
  if (spec.name.empty()) return ToGrpcStatus(InvalidArgumentError("ModelSpec has no name specified."));
  auto versions = predictor_->manager()->GetStatus(spec.name, spec.version);
  if (!versions.ok()) return ToGrpcStatus(versions.status());
  for (const VersionStatus& v : *versions) VersionStatusToProto(v, resp->add_model_version_status());
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::HandleReloadConfigRequest(grpc::ServerContext*, const pb::ReloadConfigRequest* req,
                                                         pb::ReloadConfigResponse* resp) {
  if (req->config().config_case() != pb::ModelServerConfig::kModelConfigList)
    return ToGrpcStatus(InvalidArgumentError("ServerModelConfig type not supported by HandleReloadConfigRequest. Only "
                                             "ModelConfigList is currently supported"));
  auto configs = ModelConfigsFromProto(req->config());
  if (!configs.ok()) return ToGrpcStatus(configs.status());
  std::vector<std::pair<std::string, int64_t>> before;
  for (const std::string& name : req->metric_names()) {
    Counter* c = metrics_ ? metrics_->FindCounter(name) : nullptr;
    before.emplace_back(name, c ? c->Total() : 0);
  }
  Status s = reload_(*configs);
  if (!s.ok()) return ToGrpcStatus(s);
  resp->mutable_status()->set_error_code(tensorflow::error::OK);
  for (const auto& [name, value] : before) {
    Counter* c = metrics_ ? metrics_->FindCounter(name) : nullptr;
    auto* m = resp->add_metric();
    m->set_name(name);
    m->set_int64_value_increase(c ? c->Total() - value : 0);
  }
  return grpc::Status::OK;
}

}  // namespace strata::serve
