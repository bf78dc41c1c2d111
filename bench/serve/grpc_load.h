// A closed-loop gRPC load generator for TF Serving's PredictionService/Predict: N concurrent callers, each sending
// the next request as soon as the previous answer arrived, over a few channels (HTTP/2 connections). The request is
// one float32 tensor in tensor_content. Used by `strata_serve_load --grpc` (BENCHMARKS.md "Serving cost").
#pragma once

#include <string>
#include <vector>

#include "load_gen.h"

namespace strata::serve::bench {

struct GrpcLoadOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string model;                  // model_spec.name
  std::string signature_name;         // "" = serving_default
  std::string input_name = "input";  // the inputs map key
  std::vector<int64_t> shape;         // the request tensor's full shape (batch first)
  int callers = 32;                   // concurrent requests in flight
  int channels = 4;                   // HTTP/2 connections the callers share
  std::chrono::milliseconds duration{5000};
  std::chrono::milliseconds warmup{0};
};

LoadResult RunGrpcLoad(const GrpcLoadOptions& options);

}  // namespace strata::serve::bench
