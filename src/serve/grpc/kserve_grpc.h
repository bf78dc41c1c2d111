// Private to src/serve/grpc: the Open Inference Protocol (KServe v2) gRPC service, inference.GRPCInferenceService
// (proto/inference/grpc_service.proto), beside TF Serving's services on the same port. It shares the REST v2
// route's codec (serve/api/kserve_codec.h) and the Predictor.
#pragma once

#include "inference/grpc_service.grpc.pb.h"
#include "serve/core/predictor.h"
#include "serve/metrics.h"

namespace strata::serve {

class InferenceServiceImpl final : public inference::GRPCInferenceService::Service {
 public:
  InferenceServiceImpl(Predictor* predictor, ServingMetrics* metrics) : predictor_(predictor), metrics_(metrics) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* resp) override;
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* resp) override;
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* resp) override;
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* resp) override;
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* resp) override;
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* resp) override;

 private:
  Predictor* predictor_;
  ServingMetrics* metrics_;
};

}  // namespace strata::serve
