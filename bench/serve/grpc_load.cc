#include "grpc_load.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <random>
#include <thread>

#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace strata::serve::bench {

LoadResult RunGrpcLoad(const GrpcLoadOptions& options) {
  tensorflow::serving::PredictRequest request;
  request.mutable_model_spec()->set_name(options.model);
  if (!options.signature_name.empty()) request.mutable_model_spec()->set_signature_name(options.signature_name);
  tensorflow::TensorProto& t = (*request.mutable_inputs())[options.input_name];
  t.set_dtype(tensorflow::DT_FLOAT);
  int64_t n = 1;
  for (int64_t d : options.shape) {
    t.mutable_tensor_shape()->add_dim()->set_size(d);
    n *= d;
  }
  std::vector<float> values(static_cast<size_t>(n));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : values) v = u(rng);
  t.set_tensor_content(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));

  const std::string target = options.host + ":" + std::to_string(options.port);
  std::vector<std::unique_ptr<tensorflow::serving::PredictionService::Stub>> stubs;
  for (int c = 0; c < std::max(1, options.channels); ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per channel, not one shared
    args.SetMaxReceiveMessageSize(-1);
    stubs.push_back(tensorflow::serving::PredictionService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }

  return RunClosedLoop(options.callers, options.warmup, options.duration, 0, nullptr,
                       [&stubs, &request](int caller) -> RequestFn {
                         auto& stub = *stubs[static_cast<size_t>(caller) % stubs.size()];
                         auto response = std::make_shared<tensorflow::serving::PredictResponse>();
                         return [&stub, &request, response]() -> std::optional<std::string> {
                           grpc::ClientContext ctx;
                           ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
                           response->Clear();
                           const grpc::Status s = stub.Predict(&ctx, request, response.get());
                           if (!s.ok()) return s.error_message();
                           if (response->outputs().empty()) return std::string("empty response");
                           return std::nullopt;
                         };
                       });
}

}  // namespace strata::serve::bench
