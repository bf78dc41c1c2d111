// The OpenAPI 3.0 description of strata serve's REST API, served at /v1/openapi.json. Written by hand from
// specs/tf-serving.md and the JSON writers in src/serve/api; tests/peer/openapi_check.py validates the live server's
// answers against it, so a route or field that drifts fails there.
#include "serve/http/openapi.h"

namespace strata::serve {

namespace {

constexpr const char kOpenApi[] = R"JSON({
  "openapi": "3.0.3",
  "info": {
    "title": "strata serve REST API",
    "version": "1",
    "description": "TensorFlow Serving's REST API (predict, classify, regress, model status and metadata) plus strata's model list, health and readiness routes. Every version-specific route also exists with /labels/{label} in place of /versions/{version}, and without either (the latest version). Errors are {\"error\": message} with TF Serving's HTTP status for the canonical code. The Open Inference Protocol (KServe v2) routes under /v2 (health, metadata, ready, infer with JSON or the binary tensor data extension) use the same error shape."
  },
  "paths": {
    "/v1/models": {
      "get": {"summary": "The configured models with their versions, labels and readiness (strata)",
              "responses": {"200": {"description": "models", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ModelList"}}}}}}
    },
    "/v1/models/{model_name}": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "get": {"summary": "Status of every version of the model (GetModelStatus)", "responses": {"200": {"$ref": "#/components/responses/Status"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/versions/{version}": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}],
      "get": {"summary": "Status of one version", "responses": {"200": {"$ref": "#/components/responses/Status"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/labels/{label}": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Label"}],
      "get": {"summary": "Status of every version (a label is ignored here, as in TF Serving)", "responses": {"200": {"$ref": "#/components/responses/Status"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/metadata": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "get": {"summary": "Signatures of the latest version (GetModelMetadata)", "responses": {"200": {"$ref": "#/components/responses/Metadata"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/versions/{version}/metadata": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}],
      "get": {"summary": "Signatures of one version", "responses": {"200": {"$ref": "#/components/responses/Metadata"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}:predict": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "post": {"summary": "Predict with the latest version", "requestBody": {"$ref": "#/components/requestBodies/Predict"}, "responses": {"200": {"$ref": "#/components/responses/Predict"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "501": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/versions/{version}:predict": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}],
      "post": {"summary": "Predict with one version", "requestBody": {"$ref": "#/components/requestBodies/Predict"}, "responses": {"200": {"$ref": "#/components/responses/Predict"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "501": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}/labels/{label}:predict": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Label"}],
      "post": {"summary": "Predict with the version a label names", "requestBody": {"$ref": "#/components/requestBodies/Predict"}, "responses": {"200": {"$ref": "#/components/responses/Predict"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "501": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}:classify": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "post": {"summary": "Classify tf.Examples", "requestBody": {"$ref": "#/components/requestBodies/Examples"}, "responses": {"200": {"$ref": "#/components/responses/Classify"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/models/{model_name}:regress": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "post": {"summary": "Regress tf.Examples", "requestBody": {"$ref": "#/components/requestBodies/Examples"}, "responses": {"200": {"$ref": "#/components/responses/Regress"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/healthz": {
      "get": {"summary": "Liveness: the process answers (strata)",
              "responses": {"200": {"description": "alive", "content": {"application/json": {"schema": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["ok"]}}}}}}}}
    },
    "/readyz": {
      "get": {"summary": "Readiness: every configured model has an available version (strata)",
              "responses": {"200": {"description": "ready", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}}}},
                            "503": {"description": "not ready, and why", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}}}}}}
    },
    "/monitoring/profile": {
      "post": {"summary": "Record the next N model executions as a Chrome trace in --profile_dir (strata; 404 without --profile_dir)",
               "parameters": [{"name": "requests", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1}}],
               "responses": {"200": {"description": "recording", "content": {"application/json": {"schema": {"type": "object", "required": ["profiling_requests", "profile_dir"], "properties": {"profiling_requests": {"type": "integer"}, "profile_dir": {"type": "string"}}}}}},
                             "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
                             "405": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/monitoring/prometheus/metrics": {
      "get": {"summary": "Prometheus text exposition (the path is --monitoring_config_file's)",
              "responses": {"200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}
    },
    "/v2": {
      "get": {"summary": "Open Inference Protocol (KServe v2): server metadata",
              "responses": {"200": {"description": "server", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/V2ServerMetadata"}}}}}}
    },
    "/v2/health/live": {
      "get": {"summary": "Open Inference Protocol: liveness",
              "responses": {"200": {"description": "alive", "content": {"application/json": {"schema": {"type": "object", "required": ["live"], "properties": {"live": {"type": "boolean"}}}}}}}}
    },
    "/v2/health/ready": {
      "get": {"summary": "Open Inference Protocol: readiness (every configured model has an available version)",
              "responses": {"200": {"description": "ready", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}}}},
                            "503": {"description": "not ready, and why", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}}}}}}
    },
    "/v2/models/{model_name}": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "get": {"summary": "Open Inference Protocol: model metadata (the latest version's serving_default signature)", "responses": {"200": {"$ref": "#/components/responses/V2ModelMetadata"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v2/models/{model_name}/versions/{version}": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}],
      "get": {"summary": "Open Inference Protocol: metadata of one version", "responses": {"200": {"$ref": "#/components/responses/V2ModelMetadata"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v2/models/{model_name}/ready": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}],
      "get": {"summary": "Open Inference Protocol: the model has an available version", "responses": {"200": {"$ref": "#/components/responses/V2ModelReady"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v2/models/{model_name}/versions/{version}/ready": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}],
      "get": {"summary": "Open Inference Protocol: the version is available", "responses": {"200": {"$ref": "#/components/responses/V2ModelReady"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v2/models/{model_name}/infer": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/InferenceHeaderContentLength"}],
      "post": {"summary": "Open Inference Protocol: inference with the latest version", "requestBody": {"$ref": "#/components/requestBodies/V2Infer"}, "responses": {"200": {"$ref": "#/components/responses/V2Infer"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}}}
    },
    "/v2/models/{model_name}/versions/{version}/infer": {
      "parameters": [{"$ref": "#/components/parameters/ModelName"}, {"$ref": "#/components/parameters/Version"}, {"$ref": "#/components/parameters/InferenceHeaderContentLength"}],
      "post": {"summary": "Open Inference Protocol: inference with one version", "requestBody": {"$ref": "#/components/requestBodies/V2Infer"}, "responses": {"200": {"$ref": "#/components/responses/V2Infer"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/openapi.json": {
      "get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.0", "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "paths"]}}}}}}
    }
  },
  "components": {
    "parameters": {
      "ModelName": {"name": "model_name", "in": "path", "required": true, "schema": {"type": "string"}},
      "Version": {"name": "version", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}},
      "Label": {"name": "label", "in": "path", "required": true, "schema": {"type": "string"}},
      "InferenceHeaderContentLength": {"name": "Inference-Header-Content-Length", "in": "header", "required": false, "description": "Binary tensor data extension: the length of the JSON part; the body's remaining bytes are the tensors whose parameters give binary_data_size", "schema": {"type": "integer", "minimum": 0}}
    },
    "requestBodies": {
      "Predict": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PredictRequest"}}}},
      "Examples": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExamplesRequest"}}}},
      "V2Infer": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/V2InferRequest"}},
                                                "application/octet-stream": {"schema": {"type": "string", "format": "binary", "description": "the JSON request (Inference-Header-Content-Length bytes) followed by binary tensor data"}}}}
    },
    "responses": {
      "Error": {"description": "what was wrong", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Status": {"description": "versions", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ModelStatus"}}}},
      "Metadata": {"description": "signatures", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ModelMetadata"}}}},
      "Predict": {"description": "row (predictions) or columnar (outputs) results, as the request was", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PredictResponse"}}}},
      "Classify": {"description": "per example, [label, score] pairs", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ClassifyResponse"}}}},
      "Regress": {"description": "one value per example", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RegressResponse"}}}},
      "V2ModelMetadata": {"description": "name, versions, platform, inputs and outputs", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/V2ModelMetadata"}}}},
      "V2ModelReady": {"description": "ready", "content": {"application/json": {"schema": {"type": "object", "required": ["name", "ready"], "properties": {"name": {"type": "string"}, "ready": {"type": "boolean"}}}}}},
      "V2Infer": {"description": "the outputs; with binary outputs, the JSON (Inference-Header-Content-Length bytes, header in the response) followed by their bytes",
                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/V2InferResponse"}},
                              "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
    },
    "schemas": {
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
      "Ready": {"type": "object", "required": ["ready"], "properties": {"ready": {"type": "boolean"}, "error": {"type": "string"}}},
      "Status": {"type": "object", "required": ["error_code", "error_message"],
                 "properties": {"error_code": {"type": "string"}, "error_message": {"type": "string"}}},
      "VersionStatus": {"type": "object", "required": ["version", "state", "status"],
                        "properties": {"version": {"type": "string", "pattern": "^[0-9]+$"},
                                       "state": {"type": "string", "enum": ["UNKNOWN", "START", "LOADING", "AVAILABLE", "UNLOADING", "END"]},
                                       "status": {"$ref": "#/components/schemas/Status"}}},
      "ModelStatus": {"type": "object", "required": ["model_version_status"],
                      "properties": {"model_version_status": {"type": "array", "items": {"$ref": "#/components/schemas/VersionStatus"}}}},
      "ModelList": {"type": "object", "required": ["models"],
                    "properties": {"models": {"type": "array", "items": {"type": "object", "required": ["name", "ready", "model_version_status"],
                                   "properties": {"name": {"type": "string"}, "base_path": {"type": "string"}, "platform": {"type": "string"},
                                                  "version_policy": {"type": "string"}, "ready": {"type": "boolean"},
                                                  "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                                  "model_version_status": {"type": "array", "items": {"$ref": "#/components/schemas/VersionStatus"}}}}}}},
      "ModelMetadata": {"type": "object", "required": ["model_spec", "metadata"],
                        "properties": {"model_spec": {"type": "object", "required": ["name", "version"],
                                                      "properties": {"name": {"type": "string"}, "signature_name": {"type": "string"}, "version": {"type": "string"}}},
                                       "metadata": {"type": "object", "required": ["signature_def"],
                                                    "properties": {"signature_def": {"type": "object", "required": ["signature_def"],
                                                                   "properties": {"signature_def": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/SignatureDef"}}}}}}}},
      "TensorInfo": {"type": "object", "required": ["dtype", "tensor_shape", "name"],
                     "properties": {"dtype": {"type": "string", "pattern": "^DT_"}, "name": {"type": "string"},
                                    "tensor_shape": {"type": "object", "properties": {"dim": {"type": "array", "items": {"type": "object", "properties": {"size": {"type": "string"}, "name": {"type": "string"}}}}, "unknown_rank": {"type": "boolean"}}}}},
      "SignatureDef": {"type": "object", "required": ["inputs", "outputs", "method_name"],
                       "properties": {"inputs": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/TensorInfo"}},
                                      "outputs": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/TensorInfo"}},
                                      "method_name": {"type": "string"}}},
      "PredictRequest": {"type": "object",
                         "properties": {"signature_name": {"type": "string"}, "instances": {"type": "array"}, "inputs": {}},
                         "oneOf": [{"required": ["instances"]}, {"required": ["inputs"]}]},
      "PredictResponse": {"type": "object", "oneOf": [{"required": ["predictions"]}, {"required": ["outputs"]}],
                          "properties": {"predictions": {"type": "array"}, "outputs": {}}},
      "ExamplesRequest": {"type": "object", "required": ["examples"],
                          "properties": {"signature_name": {"type": "string"}, "context": {"type": "object"}, "examples": {"type": "array", "items": {"type": "object"}}}},
      "ClassifyResponse": {"type": "object", "required": ["results"],
                           "properties": {"results": {"type": "array", "items": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2}}}}},
      "V2Datatype": {"type": "string", "enum": ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"]},
      "V2TensorMetadata": {"type": "object", "required": ["name", "datatype", "shape"],
                           "properties": {"name": {"type": "string"}, "datatype": {"$ref": "#/components/schemas/V2Datatype"},
                                          "shape": {"type": "array", "description": "-1 for a dimension of unknown size", "items": {"type": "integer", "minimum": -1}}}},
      "V2ServerMetadata": {"type": "object", "required": ["name", "version", "extensions"],
                           "properties": {"name": {"type": "string"}, "version": {"type": "string"}, "extensions": {"type": "array", "items": {"type": "string"}}}},
      "V2ModelMetadata": {"type": "object", "required": ["name", "platform", "inputs", "outputs"],
                          "properties": {"name": {"type": "string"}, "versions": {"type": "array", "items": {"type": "string"}}, "platform": {"type": "string"},
                                         "inputs": {"type": "array", "items": {"$ref": "#/components/schemas/V2TensorMetadata"}},
                                         "outputs": {"type": "array", "items": {"$ref": "#/components/schemas/V2TensorMetadata"}}}},
      "V2InferRequest": {"type": "object", "required": ["inputs"],
                         "properties": {"id": {"type": "string"},
                                        "parameters": {"type": "object", "properties": {"binary_data_output": {"type": "boolean"}}},
                                        "inputs": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["name", "shape", "datatype"],
                                                   "properties": {"name": {"type": "string"}, "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                                                                  "datatype": {"$ref": "#/components/schemas/V2Datatype"},
                                                                  "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer", "minimum": 0}}},
                                                                  "data": {"description": "row-major elements, flat or nested; absent when binary_data_size is given"}}}},
                                        "outputs": {"type": "array", "items": {"type": "object", "required": ["name"],
                                                    "properties": {"name": {"type": "string"}, "parameters": {"type": "object", "properties": {"binary_data": {"type": "boolean"}}}}}}}},
      "V2InferResponse": {"type": "object", "required": ["model_name", "outputs"],
                          "properties": {"model_name": {"type": "string"}, "model_version": {"type": "string"}, "id": {"type": "string"},
                                         "outputs": {"type": "array", "items": {"type": "object", "required": ["name", "datatype", "shape"],
                                                     "properties": {"name": {"type": "string"}, "datatype": {"$ref": "#/components/schemas/V2Datatype"},
                                                                    "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}}, "data": {"type": "array"},
                                                                    "parameters": {"type": "object", "properties": {"binary_data_size": {"type": "integer", "minimum": 0}}}}}}}},
      "RegressResponse": {"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": {"type": "number"}}}}
    }
  }
}
)JSON";

}  // namespace

std::string_view OpenApiJson() { return kOpenApi; }

}  // namespace strata::serve
