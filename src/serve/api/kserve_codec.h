// Open Inference Protocol (KServe v2) REST bodies: the inference request (JSON, with the binary tensor data
// extension) parsed into input tensors, and the inference response and metadata documents written by hand.
// https://github.com/kserve/open-inference-protocol (rest.md, and Triton's binary_tensor_data extension).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api/request.h"
#include "serve/core/signature.h"

namespace strata::serve {

// "BOOL", "UINT8", ..., "FP32", "BYTES", "BF16"; "" for kUndefined.
std::string_view V2DatatypeName(DType dtype);
// The inverse; InvalidArgument naming the accepted datatypes for an unknown name.
StatusOr<DType> DTypeFromV2Datatype(std::string_view name);

struct V2RequestedOutput {
  std::string name;
  bool binary = false;  // parameters.binary_data (or the request's binary_data_output)
};

struct V2InferRequest {
  std::string id;
  NamedTensors inputs;                     // by input name, as sent
  std::vector<V2RequestedOutput> outputs;  // empty = every output
  bool binary_data_output = false;         // request parameters.binary_data_output: outputs in binary by default
};

// `json` is the request's JSON part; `binary` the bytes after it (the binary tensor data extension: the body's bytes
// past Inference-Header-Content-Length, "" without the extension). Errors (InvalidArgument) name the input and say
// what was expected and found: element count against the shape, unknown datatype, binary byte counts.
StatusOr<V2InferRequest> ParseV2InferRequest(std::string_view json, std::string_view binary);

// The inference response. Outputs whose `binary` flag is set go after the JSON as raw bytes (BYTES elements with a
// 4-byte little-endian length prefix) with parameters.binary_data_size; `*json_size` is the JSON part's length
// (the Inference-Header-Content-Length to send when any output is binary).
std::string V2InferResponse(const std::string& model_name, int64_t version, const std::string& id,
                            const NamedTensors& outputs, const std::vector<bool>& binary, size_t* json_size);

// {"name", "versions", "platform", "inputs": [{"name", "datatype", "shape"}], "outputs": [...]}; unknown dimensions
// are -1 (and an unknown rank is written as [-1]).
std::string V2ModelMetadata(const std::string& name, const std::vector<int64_t>& versions, const std::string& platform,
                            const SignatureDef& signature);
// {"name": "strata", "version": ..., "extensions": [...]}
std::string V2ServerMetadata();

// Raw tensor bytes, as the binary extension and gRPC's raw_input_contents / raw_output_contents lay them out:
// elements little-endian in row-major order; BYTES elements each a 4-byte little-endian length and the bytes.
// V2FillRaw fills `t` (already shaped) from `bytes`; errors name `input` and compare the byte counts.
Status V2FillRaw(std::string_view bytes, std::string_view input, std::string_view datatype, Tensor* t);
void AppendV2Raw(const Tensor& t, std::string* out);

}  // namespace strata::serve
