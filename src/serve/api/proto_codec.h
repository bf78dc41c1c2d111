// Protobuf ↔ request structs and tensors (TensorProto with typed *_val fields and tensor_content, following TF's
// Tensor::FromProto semantics). Includes generated protobuf headers: include only from .cc files of src/serve/api
// and src/serve/grpc.
#pragma once

#include <vector>

#include "serve/api/request.h"
#include "serve/core/config.h"
#include "serve/core/manager.h"
#include "serve/core/signature.h"
#include "tensorflow/core/framework/tensor.pb.h"
#include "tensorflow_serving/apis/classification.pb.h"
#include "tensorflow_serving/apis/get_model_metadata.pb.h"
#include "tensorflow_serving/apis/get_model_status.pb.h"
#include "tensorflow_serving/apis/input.pb.h"
#include "tensorflow_serving/apis/model.pb.h"
#include "tensorflow_serving/apis/predict.pb.h"
#include "tensorflow_serving/apis/regression.pb.h"
#include "tensorflow_serving/config/model_server_config.pb.h"

namespace strata::serve {

// Largest tensor a request may ask for (shape × element size), so a tiny message cannot make the server allocate
// gigabytes by repeating a single *_val value over a huge shape.
inline constexpr int64_t kDefaultMaxTensorBytes = int64_t{1} << 31;

// TensorProto → Tensor. INVALID_ARGUMENT for a bad shape, a wrong tensor_content size, DT_INVALID or a tensor above
// `max_bytes`; UNIMPLEMENTED for dtypes strata has no tensor for.
StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& proto, int64_t max_bytes = kDefaultMaxTensorBytes);
// Tensor → TensorProto: dtype, shape and either the typed *_val field or (tensor_content = true, non-strings)
// the raw little-endian bytes.
void TensorToProto(const Tensor& t, bool tensor_content, tensorflow::TensorProto* proto);

ModelSpec ModelSpecFromProto(const tensorflow::serving::ModelSpec& proto);
void ModelSpecToProto(const ModelSpec& spec, tensorflow::serving::ModelSpec* proto);

StatusOr<PredictRequest> PredictRequestFromProto(const tensorflow::serving::PredictRequest& proto,
                                                 int64_t max_tensor_bytes = kDefaultMaxTensorBytes);
void PredictResponseToProto(const PredictResponse& response, bool tensor_content,
                            tensorflow::serving::PredictResponse* proto);

// Input (ExampleList / ExampleListWithContext) → examples. An empty Input is "Input is empty."
StatusOr<ExampleInput> ExampleInputFromProto(const tensorflow::serving::Input& proto);
void ClassifyResponseToProto(const ClassifyResponse& response, tensorflow::serving::ClassificationResponse* proto);
void RegressResponseToProto(const RegressResponse& response, tensorflow::serving::RegressionResponse* proto);

void SignatureMapToProto(const SignatureMap& signatures, tensorflow::serving::SignatureDefMap* proto);
void VersionStatusToProto(const VersionStatus& status, tensorflow::serving::ModelVersionStatus* proto);

// ModelServerConfig → model list; rejects custom_model_config and both/neither model_type and model_platform.
StatusOr<std::vector<ModelConfig>> ModelConfigsFromProto(const tensorflow::serving::ModelServerConfig& proto);

}  // namespace strata::serve
