// REST bodies: TF Serving's JSON request formats parsed (with simdjson) straight into input tensors typed by the
// signature, and the JSON responses written by hand (floats shortest round-trip). specs/tf-serving.md §1.5-1.8.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api/request.h"
#include "serve/core/manager.h"
#include "serve/core/signature.h"

namespace strata::serve {

// A parsed request body. Parse once, then read the parts; the signature must be known before the inputs are
// converted, because the signature's dtypes drive the conversion (as in TF Serving).
class JsonRequest {
 public:
  JsonRequest();
  ~JsonRequest();
  JsonRequest(const JsonRequest&) = delete;
  JsonRequest& operator=(const JsonRequest&) = delete;

  // "JSON Parse error: The document is empty", "JSON Parse error: <what>", "... Is not object".
  Status Parse(std::string_view body);
  // The "signature_name" key ("" when absent); a non-string value is an error.
  StatusOr<std::string> SignatureName() const;
  // Predict: `instances` (row format) or `inputs` (columnar format) into tensors keyed by alias.
  Status PredictInputs(const SignatureDef& sig, NamedTensors* inputs, bool* row_format) const;
  // Classify/Regress: `examples` and optional `context`. `method` is "classify" or "regress" (for messages).
  Status Examples(std::string_view method, ExampleInput* input) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- writers (json_writer.cc) ----

// {"error": "<message>"}
std::string JsonError(std::string_view message);
// Predict response: {"predictions": ...} for row requests, {"outputs": ...} for columnar ones. Fails (400) when a
// row response cannot be formed, naming the output and suggesting the columnar form.
StatusOr<std::string> JsonPredictResponse(const NamedTensors& outputs, bool row_format);
// {"model_version_status": [...]} as proto3 JSON with defaults printed.
std::string JsonModelStatus(const std::vector<VersionStatus>& versions);
// {"model_spec": {...}, "metadata": {"signature_def": {"signature_def": {...}}}}
std::string JsonModelMetadata(const std::string& name, int64_t version, const SignatureMap& signatures);
// {"results": [[["label", score], ...], ...]} / {"results": [v, ...]}
std::string JsonClassifyResponse(const ClassifyResponse& response);
std::string JsonRegressResponse(const RegressResponse& response);
// GET /v1/models (strata extension): every model with its versions, states and labels.
std::string JsonModelList(const std::vector<ModelSummary>& models);

// Appends `s` as a JSON string literal (quotes, escapes; bytes >= 0x80 are passed through).
void AppendJsonString(std::string* out, std::string_view s);
// Shortest text that reads back to the same float/double; "NaN", "Infinity", "-Infinity" for non-finite values;
// ".0" appended when the text has neither '.' nor an exponent (3 → "3.0"), as TF Serving writes them.
void AppendJsonFloat(std::string* out, float v);
void AppendJsonDouble(std::string* out, double v);
// Element `i` of `t` as a JSON scalar (numbers as above, bool as true/false, strings as JSON strings).
void AppendJsonElement(std::string* out, const Tensor& t, int64_t i);

// Base64 (standard alphabet, '=' padding; decoding also accepts missing padding and the URL-safe alphabet).
std::string Base64Encode(std::string_view bytes);
bool Base64Decode(std::string_view text, std::string* out);

}  // namespace strata::serve
