// Private to src/serve/grpc: the service implementations (includes generated gRPC headers).
#pragma once

#include "serve/core/predictor.h"
#include "serve/grpc/grpc_server.h"
#include "serve/metrics.h"
#include "tensorflow_serving/apis/model_service.grpc.pb.h"
#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace strata::serve {

// Status → grpc::Status; messages over 1024 characters are cut and end in "...TRUNCATED" as TF Serving's.
grpc::Status ToGrpcStatus(const Status& s);
// The client's deadline as a steady-clock time point (none when the client set none).
Deadline ClientDeadline(const grpc::ServerContextBase* ctx);

// Predict uses gRPC's callback API: the request is handled on the thread that read it and answered from the thread
// that ran the model (a batch thread under --enable_batching), with no gRPC worker thread blocked in between. The
// other methods stay synchronous.
class PredictionServiceImpl final
    : public tensorflow::serving::PredictionService::WithCallbackMethod_Predict<
          tensorflow::serving::PredictionService::Service> {
 public:
  PredictionServiceImpl(Predictor* predictor, ServingMetrics* metrics, bool tensor_content)
      : predictor_(predictor), metrics_(metrics), tensor_content_(tensor_content) {}

  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* ctx, const tensorflow::serving::PredictRequest* req,
                                    tensorflow::serving::PredictResponse* resp) override;
  grpc::Status Classify(grpc::ServerContext* ctx, const tensorflow::serving::ClassificationRequest* req,
                        tensorflow::serving::ClassificationResponse* resp) override;
  grpc::Status Regress(grpc::ServerContext* ctx, const tensorflow::serving::RegressionRequest* req,
                       tensorflow::serving::RegressionResponse* resp) override;
  grpc::Status MultiInference(grpc::ServerContext* ctx, const tensorflow::serving::MultiInferenceRequest* req,
                              tensorflow::serving::MultiInferenceResponse* resp) override;
  grpc::Status GetModelMetadata(grpc::ServerContext* ctx, const tensorflow::serving::GetModelMetadataRequest* req,
                                tensorflow::serving::GetModelMetadataResponse* resp) override;

 private:
  grpc::Status Count(const std::string& model, const char* api, std::chrono::steady_clock::time_point start,
                     const Status& s);
  Predictor* predictor_;
  ServingMetrics* metrics_;
  bool tensor_content_;
};

class ModelServiceImpl final : public tensorflow::serving::ModelService::Service {
 public:
  ModelServiceImpl(Predictor* predictor, ServingMetrics* metrics, ReloadConfigFn reload)
      : predictor_(predictor), metrics_(metrics), reload_(std::move(reload)) {}

  grpc::Status GetModelStatus(grpc::ServerContext* ctx, const tensorflow::serving::GetModelStatusRequest* req,
                              tensorflow::serving::GetModelStatusResponse* resp) override;
  grpc::Status HandleReloadConfigRequest(grpc::ServerContext* ctx, const tensorflow::serving::ReloadConfigRequest* req,
                                         tensorflow::serving::ReloadConfigResponse* resp) override;

 private:
  Predictor* predictor_;
  ServingMetrics* metrics_;
  ReloadConfigFn reload_;
};

}  // namespace strata::serve
