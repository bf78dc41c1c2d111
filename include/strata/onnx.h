// ONNX interchange: load any ONNX model (IR v3-v8, opsets 7-17) into the strata IR and write the IR back as an
// ONNX ModelProto that onnx's checker accepts.
#pragma once

#include <string>
#include <string_view>

#include "strata/graph.h"

namespace strata::onnx {

// Reads and converts a .onnx file. External data files are resolved relative to the model's directory and must
// stay inside it (a `location` that escapes it is rejected). The model and its external data must be regular files:
// a FIFO, device or directory in their place is an error at once, never a blocked or unbounded read. Sizes in the
// file are checked against the bytes present before anything is allocated. Errors say what is wrong and where.
StatusOr<graph::Model> LoadModel(const std::string& path);
// Converts serialised ModelProto bytes; `base_dir` is where external data is looked up ("" = none allowed).
StatusOr<graph::Model> ParseModel(std::string_view bytes, const std::string& base_dir, std::string_view where);

// Serialises the IR as an ONNX ModelProto (tensors as raw_data).
StatusOr<std::string> SerializeModel(const graph::Model& model);
Status SaveModel(const graph::Model& model, const std::string& path);
// Runs onnx's own checker (libonnx) on serialised model bytes.
Status CheckModel(std::string_view bytes);

// Reads a serialised onnx.TensorProto (the ONNX backend test data format).
StatusOr<Tensor> ReadTensorProtoFile(const std::string& path);
StatusOr<Tensor> ParseTensorProto(std::string_view bytes, std::string_view where);
StatusOr<std::string> SerializeTensorProto(const Tensor& t, const std::string& name);

}  // namespace strata::onnx
