// onnx.TensorProto <-> Tensor. Only src/onnx includes the generated onnx protobuf headers.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "strata/tensor.h"

namespace strata::onnx {

// `base_dir` resolves external data (empty: external data is an error). `where` prefixes errors.
StatusOr<Tensor> TensorFromProto(const ::onnx::TensorProto& proto, const std::string& base_dir,
                                 std::string_view where);
void TensorToProto(const Tensor& t, ::onnx::TensorProto* proto);

}  // namespace strata::onnx
