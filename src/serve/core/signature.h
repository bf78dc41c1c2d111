// SignatureDefs synthesized from ONNX graph inputs/outputs (specs/tf-serving.md Appendix A), TF DataType numbers
// and names, and the rules that decide whether a signature can serve Classify and Regress.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/graph.h"
#include "strata/tensor.h"

namespace strata::serve {

inline constexpr char kDefaultSignature[] = "serving_default";
inline constexpr char kPredictMethod[] = "tensorflow/serving/predict";
inline constexpr char kClassifyMethod[] = "tensorflow/serving/classify";
inline constexpr char kRegressMethod[] = "tensorflow/serving/regress";

// tensorflow.DataType numbers (types.proto).
enum TfDataType : int {
  kDtInvalid = 0, kDtFloat = 1, kDtDouble = 2, kDtInt32 = 3, kDtUint8 = 4, kDtInt16 = 5, kDtInt8 = 6,
  kDtString = 7, kDtComplex64 = 8, kDtInt64 = 9, kDtBool = 10, kDtBfloat16 = 14, kDtUint16 = 17,
  kDtComplex128 = 18, kDtHalf = 19, kDtUint32 = 22, kDtUint64 = 23,
};

// ONNX/strata dtype → TF DataType number (DT_INVALID for kUndefined).
int TfDataTypeOf(DType dtype);
// TF DataType number → strata dtype; Unimplemented for types strata has no tensor for (complex, quantized, ...).
StatusOr<DType> DTypeFromTf(int tf_dtype);
// "DT_FLOAT", "DT_INT64", ...; "DT_<number>" for numbers outside the enum.
std::string TfDataTypeName(int tf_dtype);
// "float", "int64", "half", ... (TF's DataTypeString, used in TF Serving's messages).
std::string TfDataTypeShortName(int tf_dtype);

struct TensorInfo {
  std::string alias;  // key in the signature's inputs/outputs map
  std::string name;   // the ONNX tensor name
  DType dtype = DType::kUndefined;
  PartialShape shape;  // symbolic/unknown dims are -1 on the wire; unknown rank → unknown_rank
};

// How Classify/Regress map tf.Examples onto the model (see docs/serving.md "Classify and Regress"):
// every model input is fed by the feature of the same name, one row per example.
struct ExampleMapping {
  bool classify = false;
  bool regress = false;
  std::string classify_why_not;  // filled when !classify
  std::string regress_why_not;   // filled when !regress
  std::string scores_output;     // classify: float [batch, k] (or [batch])
  std::string classes_output;    // classify: optional string/integer [batch, k]
  std::string regress_output;    // regress: float [batch] or [batch, 1]
  std::vector<int64_t> feature_sizes;  // per feature input: values each example supplies (product of dims 1..)
  // The model inputs the examples fill, one per feature (alias = feature key, name = model input). Empty: the
  // signature's own inputs (an ONNX model). A SavedModel signature that takes serialized tf.Examples lists the dense
  // features its ParseExample op parses here.
  std::vector<TensorInfo> features;
  const std::vector<TensorInfo>& FeatureInputs(const std::vector<TensorInfo>& inputs) const {
    return features.empty() ? inputs : features;
  }
};

struct SignatureDef {
  std::string method_name = kPredictMethod;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  ExampleMapping examples;
  // Requests must fit the inputs' shapes. False for SavedModel signatures: TF Serving does not check a fed tensor
  // against the placeholder's declared shape (TF's half_plus_two TF2 declares [1] and serves [3]), and the imported
  // graph checks ranks itself.
  bool strict_shapes = true;

  const TensorInfo* FindInput(std::string_view alias) const;
  const TensorInfo* FindOutput(std::string_view alias) const;
};

using SignatureMap = std::map<std::string, SignatureDef>;

// One "serving_default" signature from the session's graph inputs and outputs.
SignatureMap SynthesizeSignatures(const std::vector<graph::SignatureEntry>& inputs,
                                  const std::vector<graph::SignatureEntry>& outputs);

// Fills sig->examples (whether Classify/Regress can use the signature, and how) from its inputs (or
// sig->examples.features) and outputs.
void MapExamples(SignatureDef* sig);

// Levenshtein distance; used to suggest the closest input name.
size_t EditDistance(std::string_view a, std::string_view b);
// The entry of `candidates` closest to `name` ("" when there are none).
std::string ClosestName(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace strata::serve
