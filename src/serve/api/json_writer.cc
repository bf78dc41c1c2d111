// JSON responses, written by hand: TF Serving's layouts, floats shortest round-trip.
#include <charconv>
#include <cmath>
#include <cstring>

#include "serve/api/json_codec.h"

namespace strata::serve {

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (u < 0x20) {
          *out += "\\u00";
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

namespace {

template <typename T>
void AppendFloating(std::string* out, T v) {
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    *out += v > 0 ? "Infinity" : "-Infinity";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  const size_t n = static_cast<size_t>(r.ptr - buf);
  out->append(buf, n);
  if (!std::memchr(buf, '.', n) && !std::memchr(buf, 'e', n)) *out += ".0";
}

template <typename T>
void AppendInteger(std::string* out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendElement(std::string* out, const Tensor& t, int64_t i, bool bytes_as_b64) {
  switch (t.dtype()) {
    case DType::kFloat32: AppendFloating(out, t.data<float>()[i]); break;
    case DType::kFloat64: AppendFloating(out, t.data<double>()[i]); break;
    case DType::kFloat16: AppendFloating(out, static_cast<float>(t.data<Float16>()[i])); break;
    case DType::kBFloat16: AppendFloating(out, static_cast<float>(t.data<BFloat16>()[i])); break;
    case DType::kInt8: AppendInteger(out, t.data<int8_t>()[i]); break;
    case DType::kUInt8: AppendInteger(out, t.data<uint8_t>()[i]); break;
    case DType::kInt16: AppendInteger(out, t.data<int16_t>()[i]); break;
    case DType::kUInt16: AppendInteger(out, t.data<uint16_t>()[i]); break;
    case DType::kInt32: AppendInteger(out, t.data<int32_t>()[i]); break;
    case DType::kUInt32: AppendInteger(out, t.data<uint32_t>()[i]); break;
    case DType::kInt64: AppendInteger(out, t.data<int64_t>()[i]); break;
    case DType::kUInt64: AppendInteger(out, t.data<uint64_t>()[i]); break;
    case DType::kBool: *out += t.data<bool>()[i] ? "true" : "false"; break;
    case DType::kString:
      if (bytes_as_b64) {
        *out += "{\"b64\": ";
        AppendJsonString(out, Base64Encode(t.data<std::string>()[i]));
        out->push_back('}');
      } else {
        AppendJsonString(out, t.data<std::string>()[i]);
      }
      break;
    case DType::kUndefined: *out += "null"; break;
  }
}

// Elements [offset, offset + prod(dims[dim:])) as nested lists over dims[dim:].
void AppendNested(std::string* out, const Tensor& t, int dim, int64_t offset, bool b64) {
  if (dim == t.rank()) return AppendElement(out, t, offset, b64);
  const int64_t n = t.dim(dim);
  const int64_t stride = t.shape().Product(dim + 1, t.rank());
  out->push_back('[');
  for (int64_t i = 0; i < n; ++i) {
    if (i) out->push_back(',');
    AppendNested(out, t, dim + 1, offset + i * stride, b64);
  }
  out->push_back(']');
}

bool EndsWithBytes(const std::string& alias) {
  return alias.size() >= 6 && alias.compare(alias.size() - 6, 6, "_bytes") == 0;
}

void AppendStatus(std::string* out, const Status& s) {
  *out += "{\"error_code\": \"";
  *out += StatusCodeName(s.code());
  *out += "\", \"error_message\": ";
  AppendJsonString(out, s.ok() ? std::string_view() : std::string_view(s.message()));
  out->push_back('}');
}

void AppendVersionStatus(std::string* out, const VersionStatus& v) {
  *out += "{\"version\": \"" + std::to_string(v.version) + "\", \"state\": \"";
  *out += VersionStateName(v.state);
  *out += "\", \"status\": ";
  AppendStatus(out, v.status);
  out->push_back('}');
}

void AppendTensorInfoMap(std::string* out, const std::vector<TensorInfo>& infos) {
  out->push_back('{');
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorInfo& t = infos[i];
    if (i) *out += ", ";
    AppendJsonString(out, t.alias);
    *out += ": {\"dtype\": \"" + TfDataTypeName(TfDataTypeOf(t.dtype)) + "\", \"tensor_shape\": {\"dim\": [";
    for (size_t d = 0; d < t.shape.dims.size(); ++d) {
      if (d) *out += ", ";
      const int64_t size = t.shape.dims[d].known() ? t.shape.dims[d].value : -1;
      *out += "{\"size\": \"" + std::to_string(size) + "\", \"name\": \"\"}";
    }
    *out += "], \"unknown_rank\": ";
    *out += t.shape.rank_known ? "false" : "true";
    *out += "}, \"name\": ";
    AppendJsonString(out, t.name);
    out->push_back('}');
  }
  out->push_back('}');
}

}  // namespace

void AppendJsonFloat(std::string* out, float v) { AppendFloating(out, v); }
void AppendJsonElement(std::string* out, const Tensor& t, int64_t i) { AppendElement(out, t, i, false); }
void AppendJsonDouble(std::string* out, double v) { AppendFloating(out, v); }

std::string JsonError(std::string_view message) {
  std::string out = "{\"error\": ";
  AppendJsonString(&out, message);
  out += "}";
  return out;
}

StatusOr<std::string> JsonPredictResponse(const NamedTensors& outputs, bool row_format) {
  std::string out;
  out.reserve(64);
  if (!row_format) {
    out += "{\"outputs\": ";
    if (outputs.size() == 1) {
      AppendNested(&out, outputs[0].second, 0, 0, EndsWithBytes(outputs[0].first));
    } else {
      out.push_back('{');
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (i) out += ", ";
        AppendJsonString(&out, outputs[i].first);
        out += ": ";
        AppendNested(&out, outputs[i].second, 0, 0, EndsWithBytes(outputs[i].first));
      }
      out.push_back('}');
    }
    out.push_back('}');
    return out;
  }
  int64_t batch = -1;
  for (const auto& [alias, t] : outputs) {
    if (t.rank() == 0)
      return InvalidArgumentError("Tensor name: ", alias, " has no shape information (it is a scalar, and the "
                                  "'instances' row format needs a batch dimension on every output); send the request "
                                  "in the columnar form {\"inputs\": ...} to get {\"outputs\": ...}");
    if (batch >= 0 && t.dim(0) != batch)
      return InvalidArgumentError("Tensor name: ", alias, " has inconsistent batch size: ", t.dim(0),
                                  " expecting: ", batch, " (the 'instances' row format needs the same dimension 0 on "
                                  "every output); send the request in the columnar form {\"inputs\": ...}");
    batch = t.dim(0);
  }
  out += "{\"predictions\": [";
  for (int64_t r = 0; r < batch; ++r) {
    if (r) out.push_back(',');
    if (outputs.size() == 1) {
      const Tensor& t = outputs[0].second;
      AppendNested(&out, t, 1, r * t.shape().Product(1, t.rank()), EndsWithBytes(outputs[0].first));
      continue;
    }
    out.push_back('{');
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = outputs[i].second;
      if (i) out += ", ";
      AppendJsonString(&out, outputs[i].first);
      out += ": ";
      AppendNested(&out, t, 1, r * t.shape().Product(1, t.rank()), EndsWithBytes(outputs[i].first));
    }
    out.push_back('}');
  }
  out += "]}";
  return out;
}

std::string JsonModelStatus(const std::vector<VersionStatus>& versions) {
  std::string out = "{\"model_version_status\": [";
  for (size_t i = 0; i < versions.size(); ++i) {
    if (i) out += ", ";
    AppendVersionStatus(&out, versions[i]);
  }
  out += "]}";
  return out;
}

std::string JsonModelMetadata(const std::string& name, int64_t version, const SignatureMap& signatures) {
  std::string out = "{\"model_spec\": {\"name\": ";
  AppendJsonString(&out, name);
  out += ", \"signature_name\": \"\", \"version\": \"" + std::to_string(version) + "\"}, ";
  out += "\"metadata\": {\"signature_def\": {\"signature_def\": {";
  bool first = true;
  for (const auto& [key, sig] : signatures) {
    if (!first) out += ", ";
    first = false;
    AppendJsonString(&out, key);
    out += ": {\"inputs\": ";
    AppendTensorInfoMap(&out, sig.inputs);
    out += ", \"outputs\": ";
    AppendTensorInfoMap(&out, sig.outputs);
    out += ", \"method_name\": ";
    AppendJsonString(&out, sig.method_name);
    out += ", \"defaults\": {}}";
  }
  out += "}}}}";
  return out;
}

std::string JsonClassifyResponse(const ClassifyResponse& response) {
  std::string out = "{\"results\": [";
  for (size_t i = 0; i < response.classifications.size(); ++i) {
    if (i) out += ", ";
    out.push_back('[');
    const auto& classes = response.classifications[i];
    for (size_t j = 0; j < classes.size(); ++j) {
      if (j) out += ", ";
      out.push_back('[');
      AppendJsonString(&out, classes[j].first);
      out += ", ";
      AppendFloating(&out, classes[j].second);
      out.push_back(']');
    }
    out.push_back(']');
  }
  out += "]}";
  return out;
}

std::string JsonRegressResponse(const RegressResponse& response) {
  std::string out = "{\"results\": [";
  for (size_t i = 0; i < response.values.size(); ++i) {
    if (i) out += ", ";
    AppendFloating(&out, response.values[i]);
  }
  out += "]}";
  return out;
}

std::string JsonModelList(const std::vector<ModelSummary>& models) {
  std::string out = "{\"models\": [";
  bool first = true;
  for (const ModelSummary& m : models) {
    if (!m.in_config) continue;
    if (!first) out += ", ";
    first = false;
    out += "{\"name\": ";
    AppendJsonString(&out, m.name);
    out += ", \"base_path\": ";
    AppendJsonString(&out, m.base_path);
    out += ", \"platform\": ";
    AppendJsonString(&out, m.platform);
    out += ", \"version_policy\": ";
    AppendJsonString(&out, m.policy.ToString());
    out += ", \"ready\": ";
    out += m.ready ? "true" : "false";
    out += ", \"labels\": {";
    bool lf = true;
    for (const auto& [label, v] : m.labels) {
      if (!lf) out += ", ";
      lf = false;
      AppendJsonString(&out, label);
      out += ": \"" + std::to_string(v) + "\"";
    }
    out += "}, \"model_version_status\": [";
    for (size_t i = 0; i < m.versions.size(); ++i) {
      if (i) out += ", ";
      AppendVersionStatus(&out, m.versions[i]);
    }
    out += "]";
    if (!m.problem.ok()) {
      out += ", \"problem\": ";
      AppendJsonString(&out, m.problem.message());
    }
    out.push_back('}');
  }
  out += "]}";
  return out;
}

// ---- base64 ----

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool Base64Decode(std::string_view in, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;
  out->clear();
  out->reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

}  // namespace strata::serve
