// Helpers shared by the model subcommands (run, bench, inspect).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "strata/graph.h"

namespace strata::cli {

struct LoadedModel {
  std::shared_ptr<graph::Model> model;
  std::unique_ptr<graph::Session> session;
  // A SavedModel's signature: alias -> tensor name of its inputs and outputs (empty for ONNX files).
  std::map<std::string, std::string> input_aliases, output_aliases;
};

// Loads a model for the CLI: an .onnx file, or a TensorFlow SavedModel directory (saved_model.pb + variables/),
// whose `signature` ("" = serving_default) is imported.
StatusOr<std::shared_ptr<graph::Model>> LoadAnyModel(const std::string& path, const std::string& signature,
                                                     LoadedModel* aliases = nullptr);

// Loads an .onnx file (or a SavedModel directory, its default signature) and compiles a Session; errors name the
// file.
// `input_signature` (--input_signature, graph::ParseInputSignature; SavedModel input aliases accepted) fixes input
// shapes up front; `profiler` is attached to the session (SessionOptions::profiler).
StatusOr<LoadedModel> LoadModelSession(const std::string& path, int threads, size_t memory_limit_bytes = 0,
                                       graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto,
                                       graph::Precision precision = graph::Precision::kFp32,
                                       const std::string& input_signature = "",
                                       std::shared_ptr<graph::Profiler> profiler = nullptr);

// Adds --input_signature and --profile FILE to run/bench (stored in `signature` and `profile`).
void AddSignatureAndProfileOptions(CLI::App* cmd, std::string* signature, std::string* profile);
// Writes the profiler's trace to `path` (.gz: gzip-compressed) and says where on stderr.
Status WriteProfile(const graph::Profiler& profiler, const std::string& path);

// Parses "NAME=VALUE" (e.g. --input x=a.npy, --shape x=1,3,224,224).
StatusOr<std::pair<std::string, std::string>> SplitAssignment(const std::string& arg, const char* flag);
StatusOr<std::vector<int64_t>> ParseDims(const std::string& text, const std::string& where);

// Concrete input shapes: the signature's dims with unknown/symbolic leading dims set to `batch`; `overrides` (by
// input name) win. Other unknown dims are an error that says which --shape to pass.
StatusOr<std::vector<std::pair<std::string, Shape>>> ResolveInputShapes(
    const std::vector<graph::SignatureEntry>& inputs, int64_t batch,
    const std::map<std::string, std::vector<int64_t>>& overrides);

// Deterministic random tensor: floats uniform in [0, 1), integers in [0, 10), bools alternate.
StatusOr<Tensor> RandomInput(DType dtype, const Shape& shape, uint64_t seed);

// A file-name-safe version of a tensor name.
std::string SafeFileName(const std::string& name);

}  // namespace strata::cli
