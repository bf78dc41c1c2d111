#include "serve/core/signature.h"

#include <algorithm>

namespace strata::serve {

int TfDataTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return kDtFloat;
    case DType::kUInt8: return kDtUint8;
    case DType::kInt8: return kDtInt8;
    case DType::kUInt16: return kDtUint16;
    case DType::kInt16: return kDtInt16;
    case DType::kInt32: return kDtInt32;
    case DType::kInt64: return kDtInt64;
    case DType::kString: return kDtString;
    case DType::kBool: return kDtBool;
    case DType::kFloat16: return kDtHalf;
    case DType::kFloat64: return kDtDouble;
    case DType::kUInt32: return kDtUint32;
    case DType::kUInt64: return kDtUint64;
    case DType::kBFloat16: return kDtBfloat16;
    case DType::kUndefined: return kDtInvalid;
  }
  return kDtInvalid;
}

StatusOr<DType> DTypeFromTf(int tf) {
  switch (tf) {
    case kDtFloat: return DType::kFloat32;
    case kDtDouble: return DType::kFloat64;
    case kDtInt32: return DType::kInt32;
    case kDtUint8: return DType::kUInt8;
    case kDtInt16: return DType::kInt16;
    case kDtInt8: return DType::kInt8;
    case kDtString: return DType::kString;
    case kDtInt64: return DType::kInt64;
    case kDtBool: return DType::kBool;
    case kDtBfloat16: return DType::kBFloat16;
    case kDtUint16: return DType::kUInt16;
    case kDtHalf: return DType::kFloat16;
    case kDtUint32: return DType::kUInt32;
    case kDtUint64: return DType::kUInt64;
    default: break;
  }
  if (tf == kDtInvalid) return InvalidArgumentError("tensor dtype is DT_INVALID");
  return UnimplementedError("tensor dtype ", TfDataTypeName(tf), " is not supported by this server");
}

namespace {
struct TfTypeNames {
  int number;
  const char* enum_name;
  const char* short_name;
};
constexpr TfTypeNames kTfTypes[] = {
    {0, "DT_INVALID", "invalid"},     {1, "DT_FLOAT", "float"},         {2, "DT_DOUBLE", "double"},
    {3, "DT_INT32", "int32"},         {4, "DT_UINT8", "uint8"},         {5, "DT_INT16", "int16"},
    {6, "DT_INT8", "int8"},           {7, "DT_STRING", "string"},       {8, "DT_COMPLEX64", "complex64"},
    {9, "DT_INT64", "int64"},         {10, "DT_BOOL", "bool"},          {11, "DT_QINT8", "qint8"},
    {12, "DT_QUINT8", "quint8"},      {13, "DT_QINT32", "qint32"},      {14, "DT_BFLOAT16", "bfloat16"},
    {15, "DT_QINT16", "qint16"},      {16, "DT_QUINT16", "quint16"},    {17, "DT_UINT16", "uint16"},
    {18, "DT_COMPLEX128", "complex128"}, {19, "DT_HALF", "half"},       {20, "DT_RESOURCE", "resource"},
    {21, "DT_VARIANT", "variant"},    {22, "DT_UINT32", "uint32"},      {23, "DT_UINT64", "uint64"},
};
}  // namespace

std::string TfDataTypeName(int tf) {
  for (const auto& t : kTfTypes)
    if (t.number == tf) return t.enum_name;
  return StrCat("DT_", tf);
}

std::string TfDataTypeShortName(int tf) {
  for (const auto& t : kTfTypes)
    if (t.number == tf) return t.short_name;
  return StrCat("unknown dtype ", tf);
}

const TensorInfo* SignatureDef::FindInput(std::string_view alias) const {
  for (const auto& t : inputs)
    if (t.alias == alias) return &t;
  return nullptr;
}

const TensorInfo* SignatureDef::FindOutput(std::string_view alias) const {
  for (const auto& t : outputs)
    if (t.alias == alias) return &t;
  return nullptr;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestName(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

namespace {

// A batched output: rank >= 1 with a leading batch dim that is not fixed to something other than the batch.
bool IsFloatOutput(const TensorInfo& t) {
  return t.dtype == DType::kFloat32 || t.dtype == DType::kFloat64 || t.dtype == DType::kFloat16 ||
         t.dtype == DType::kBFloat16;
}

}  // namespace

// Fills the Classify/Regress mapping of `sig`, or says why not.
void MapExamples(SignatureDef* sig) {
  ExampleMapping& m = sig->examples;
  std::string input_problem;
  const std::vector<TensorInfo>& feature_inputs = m.FeatureInputs(sig->inputs);
  for (const TensorInfo& in : feature_inputs) {
    const bool feature_type = in.dtype == DType::kFloat32 || in.dtype == DType::kFloat64 ||
                              in.dtype == DType::kInt64 || in.dtype == DType::kInt32 || in.dtype == DType::kString;
    if (!feature_type) {
      input_problem = StrCat("input '", in.alias, "' is ", DTypeName(in.dtype),
                             ", and tf.Example features feed only float, int64/int32 and string inputs");
      break;
    }
    if (in.shape.rank() < 1) {
      input_problem = StrCat("input '", in.alias, "' has shape ", in.shape.ToString(),
                             "; feature inputs need a leading batch dimension");
      break;
    }
    int64_t size = 1;
    for (size_t i = 1; i < in.shape.dims.size(); ++i) {
      if (!in.shape.dims[i].known()) {
        input_problem = StrCat("input '", in.alias, "' has shape ", in.shape.ToString(),
                               "; every dimension after the batch must be fixed");
        break;
      }
      size *= in.shape.dims[i].value;
    }
    if (!input_problem.empty()) break;
    m.feature_sizes.push_back(size);
  }
  if (feature_inputs.empty()) input_problem = "the model has no inputs";
  if (!input_problem.empty()) {
    m.feature_sizes.clear();
    m.classify_why_not = m.regress_why_not = input_problem;
    return;
  }
  // Classify: 'scores' (float), optional 'classes'; or a single float output.
  const TensorInfo* scores = sig->FindOutput("scores");
  const TensorInfo* classes = sig->FindOutput("classes");
  if (!scores && sig->outputs.size() == 1 && IsFloatOutput(sig->outputs[0])) scores = &sig->outputs[0];
  if (scores && IsFloatOutput(*scores) && (scores->shape.rank() == 2 || scores->shape.rank() == 1 ||
                                           !scores->shape.rank_known)) {
    m.classify = true;
    m.scores_output = scores->alias;
    if (classes && (classes->dtype == DType::kString || IsInteger(classes->dtype))) m.classes_output = classes->alias;
  } else {
    m.classify_why_not =
        "classification needs an output named 'scores' (float [batch, classes]) or exactly one float output";
  }
  // Regress: 'outputs' (float), or a single float output; shape [batch] or [batch, 1].
  const TensorInfo* out = sig->FindOutput("outputs");
  if (!out && sig->outputs.size() == 1) out = &sig->outputs[0];
  const bool regress_shape = out && (!out->shape.rank_known || out->shape.rank() == 1 ||
                                     (out->shape.rank() == 2 && (!out->shape.dims[1].known() ||
                                                                 out->shape.dims[1].value == 1)));
  if (out && IsFloatOutput(*out) && regress_shape) {
    m.regress = true;
    m.regress_output = out->alias;
  } else {
    m.regress_why_not =
        "regression needs an output named 'outputs' or exactly one float output, shaped [batch] or [batch, 1]";
  }
}

SignatureMap SynthesizeSignatures(const std::vector<graph::SignatureEntry>& inputs,
                                  const std::vector<graph::SignatureEntry>& outputs) {
  SignatureDef sig;
  sig.method_name = kPredictMethod;
  for (const auto& e : inputs) sig.inputs.push_back({e.name, e.name, e.dtype, e.shape});
  for (const auto& e : outputs) sig.outputs.push_back({e.name, e.name, e.dtype, e.shape});
  MapExamples(&sig);
  SignatureMap map;
  map.emplace(kDefaultSignature, std::move(sig));
  return map;
}

}  // namespace strata::serve
