// A Servable is one loaded version of one model: the ONNX model compiled into a graph::Session plus its
// synthesized signatures. Requests hold a shared_ptr to it, so an unloaded version lives until its in-flight
// requests finish.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serve/core/signature.h"
#include "strata/graph.h"

namespace strata::serve {

struct LoadOptions {
  int intra_op_threads = 0;
  int64_t memory_limit_bytes = 0;
  int64_t plan_cache_max_plans = 32;
  int64_t plan_cache_max_bytes = int64_t{1} << 30;
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;
  graph::Precision precision = graph::Precision::kFp32;
};

class Servable {
 public:
  // Loads <dir>/model.onnx. Errors explain a wrong layout: a SavedModel instead of ONNX, a differently named .onnx
  // file, an empty directory.
  static StatusOr<std::shared_ptr<Servable>> Load(const std::string& name, int64_t version, const std::string& dir,
                                                  const LoadOptions& options);
  // Wraps an already built session (tests, tools).
  static std::shared_ptr<Servable> FromSession(const std::string& name, int64_t version, const std::string& dir,
                                               std::unique_ptr<graph::Session> session);

  const std::string& name() const { return name_; }
  int64_t version() const { return version_; }
  const std::string& dir() const { return dir_; }
  const SignatureMap& signatures() const { return signatures_; }
  graph::Session& session() const { return *session_; }
  // Bytes of weights held by this version (initializers), for the per-model memory metric.
  int64_t weight_bytes() const { return weight_bytes_; }

  // Resolves a signature key ("" = serving_default). Nullptr when absent.
  const SignatureDef* FindSignature(const std::string& key) const;

  // Runs the session; `fetch` names graph outputs (empty = all).
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetch,
             std::vector<Tensor>* outputs) const;

 private:
  Servable() = default;
  std::string name_;
  int64_t version_ = 0;
  std::string dir_;
  SignatureMap signatures_;
  std::unique_ptr<graph::Session> session_;
  int64_t weight_bytes_ = 0;
};

}  // namespace strata::serve
