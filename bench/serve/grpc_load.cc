#include "grpc_load.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>

#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace strata::serve::bench {

using Clock = std::chrono::steady_clock;

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

  std::mutex mu;
  std::vector<double> latencies;
  LoadResult result;
  const auto start = Clock::now();
  const auto measure_from = start + options.warmup;
  const auto end = measure_from + options.duration;
  auto worker = [&](int index) {
    auto& stub = *stubs[static_cast<size_t>(index) % stubs.size()];
    std::vector<double> mine;
    int64_t ok = 0, failed = 0;
    std::vector<std::string> errors;
    tensorflow::serving::PredictResponse response;
    while (true) {
      const auto t0 = Clock::now();
      if (t0 >= end) break;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      response.Clear();
      const grpc::Status s = stub.Predict(&ctx, request, &response);
      const auto t1 = Clock::now();
      if (t0 < measure_from) continue;
      mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (s.ok() && !response.outputs().empty()) {
        ++ok;
      } else {
        ++failed;
        if (errors.size() < 5) errors.push_back(s.ok() ? "empty response" : s.error_message());
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
    result.ok += ok;
    result.failed += failed;
    for (auto& e : errors)
      if (result.errors.size() < 10) result.errors.push_back(std::move(e));
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < options.callers; ++i) threads.emplace_back(worker, i);
  for (auto& th : threads) th.join();
  const auto finished = Clock::now();
  result.seconds = finished < measure_from ? 0 : std::chrono::duration<double>(finished - measure_from).count();
  result.requests = static_cast<int64_t>(latencies.size());
  SummarizeLatencies(latencies, result);
  return result;
}

}  // namespace strata::serve::bench
