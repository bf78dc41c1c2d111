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
  std::vector<graph::SignatureEntry> input_signature;  // SessionOptions::input_signature
  std::shared_ptr<graph::Profiler> profiler;           // SessionOptions::profiler
};

class Servable {
 public:
  // Loads <dir>/model.onnx, or a TensorFlow SavedModel (<dir>/saved_model.pb + variables/) when the directory holds
  // one and no model.onnx: each of its SignatureDefs is imported (src/tf) and compiled into its own session; or
  // <dir>/model.tflite (a float32 TensorFlow Lite model, src/tf/tflite_import.cc) when there is neither. Errors
  // explain a wrong layout: a differently named .onnx file, an empty directory.
  static StatusOr<std::shared_ptr<Servable>> Load(const std::string& name, int64_t version, const std::string& dir,
                                                  const LoadOptions& options);
  // Wraps an already built session (tests, tools).
  static std::shared_ptr<Servable> FromSession(const std::string& name, int64_t version, const std::string& dir,
                                               std::unique_ptr<graph::Session> session);

  const std::string& name() const { return name_; }
  int64_t version() const { return version_; }
  const std::string& dir() const { return dir_; }
  const SignatureMap& signatures() const { return signatures_; }
  // The default signature's session (the only one of an ONNX model).
  graph::Session& session() const { return *session_; }
  // Bytes of weights held by this version (initializers), for the per-model memory metric.
  int64_t weight_bytes() const { return weight_bytes_; }

  // Resolves a signature key ("" = serving_default). Nullptr when absent.
  const SignatureDef* FindSignature(const std::string& key) const;

  // Runs the session whose inputs are exactly the fed names and whose outputs include `fetch` (graph outputs; empty =
  // all). A SavedModel has one session per signature; an ONNX model has one.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetch,
             std::vector<Tensor>* outputs) const;

 private:
  Servable() = default;
  std::string name_;
  int64_t version_ = 0;
  std::string dir_;
  SignatureMap signatures_;
  std::unique_ptr<graph::Session> session_;
  std::vector<std::unique_ptr<graph::Session>> more_sessions_;  // the other signatures of a SavedModel
  int64_t weight_bytes_ = 0;

  static StatusOr<std::shared_ptr<Servable>> LoadSavedModel(const std::string& name, int64_t version,
                                                            const std::string& dir, const graph::SessionOptions& so);
};

}  // namespace strata::serve
