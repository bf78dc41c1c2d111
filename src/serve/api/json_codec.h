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

// ---- the common Predict body, without a document (json_fast.cc) ----

// Predict's most common body read in one pass, the numbers parsed from the text into a reused buffer, without a
// JSON document: {"instances": V} or {"inputs": V}, optionally with "signature_name": "<printable ASCII>", where V
// is a number (columnar form only) or non-empty rectangular nested lists of numbers, for a signature whose single
// input is float32 or float64. Parse() is false for every other body, malformed or not; the caller then reads it
// with JsonRequest, which accepts the other forms and words every error. Where Parse() and Inputs() accept a body,
// the tensor is the one JsonRequest makes from it, bit for bit (tests/serve/json_test.cc and the rest_body fuzzer
// check both readers against each other).
class NumericPredictBody {
 public:
  bool Parse(std::string_view body);
  // After a successful Parse(): the "signature_name" value ("" when absent) and whether the body was row format.
  const std::string& signature_name() const { return signature_name_; }
  bool row_format() const { return row_format_; }
  // The input tensor, keyed by the alias, when `sig` has exactly one input and it is float32 or float64; false
  // (and nothing appended) otherwise.
  bool Inputs(const SignatureDef& sig, NamedTensors* inputs) const;
  // Frees the buffers when a large body made them large (they are kept for reuse otherwise).
  void Trim();

 private:
  bool ReadValue(const char*& p, const char* end, size_t level);
  bool ReadNumber(const char*& p, const char* end);

  std::string signature_name_;
  bool row_format_ = true;
  std::vector<int64_t> dims_;
  int64_t leaf_level_ = -1;
  std::vector<double> values_;
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
