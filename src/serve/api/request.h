// Transport-neutral request and response structs: the REST (JSON) and gRPC (protobuf) adapters convert to and from
// these, and the Predictor serves them. No heavy headers here.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "strata/tensor.h"

namespace strata::serve {

using Deadline = std::chrono::steady_clock::time_point;
inline Deadline NoDeadline() { return Deadline::max(); }

// tensorflow.serving.ModelSpec
struct ModelSpec {
  std::string name;
  std::optional<int64_t> version;
  std::string version_label;
  std::string signature_name;  // "" = serving_default
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct PredictRequest {
  ModelSpec model_spec;
  NamedTensors inputs;                  // by signature alias
  std::vector<std::string> output_filter;  // aliases; empty = all outputs
  Deadline deadline = NoDeadline();
};

struct PredictResponse {
  ModelSpec model_spec;  // name, resolved version, resolved signature name
  NamedTensors outputs;  // by alias, in signature order
};

// tf.train.Feature: exactly one of the three lists.
struct Feature {
  enum class Kind { kNone, kBytes, kFloat, kInt64 };
  Kind kind = Kind::kNone;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  size_t size() const {
    return kind == Kind::kBytes ? bytes.size() : kind == Kind::kFloat ? floats.size() : ints.size();
  }
};
using Example = std::map<std::string, Feature>;

// tensorflow.serving.Input: ExampleList, or ExampleListWithContext when `context` is set.
struct ExampleInput {
  std::vector<Example> examples;
  std::optional<Example> context;
};

struct ClassifyRequest {
  ModelSpec model_spec;
  ExampleInput input;
  Deadline deadline = NoDeadline();
};
struct ClassifyResponse {
  ModelSpec model_spec;
  // One list of (label, score) per example.
  std::vector<std::vector<std::pair<std::string, float>>> classifications;
};

struct RegressRequest {
  ModelSpec model_spec;
  ExampleInput input;
  Deadline deadline = NoDeadline();
};
struct RegressResponse {
  ModelSpec model_spec;
  std::vector<float> values;
};

}  // namespace strata::serve
