// Open Inference Protocol (KServe v2) REST bodies, with simdjson's DOM parser for requests.
#include "serve/api/kserve_codec.h"

#include <cstring>
#include <limits>

#include "serve/api/json_internal.h"

namespace strata::serve {

namespace dom = simdjson::dom;

namespace {

struct V2Type {
  const char* name;
  DType dtype;
};
constexpr V2Type kV2Types[] = {
    {"BOOL", DType::kBool},     {"UINT8", DType::kUInt8},   {"UINT16", DType::kUInt16}, {"UINT32", DType::kUInt32},
    {"UINT64", DType::kUInt64}, {"INT8", DType::kInt8},     {"INT16", DType::kInt16},   {"INT32", DType::kInt32},
    {"INT64", DType::kInt64},   {"FP16", DType::kFloat16},  {"FP32", DType::kFloat32},  {"FP64", DType::kFloat64},
    {"BYTES", DType::kString},  {"BF16", DType::kBFloat16},
};

thread_local std::unique_ptr<dom::parser> t_parser;

std::string ShapeString(const std::vector<int64_t>& dims) { return StrCat("[", StrJoin(dims, ","), "]"); }

void CountLeaves(const dom::element& e, int64_t* count) {
  if (e.type() != dom::element_type::ARRAY) {
    ++*count;
    return;
  }
  dom::array a = e.get_array().value_unsafe();
  for (dom::element child : a) CountLeaves(child, count);
}

// Leaves of a (possibly nested) array into `t`, in row-major order; at most `limit` are written.
Status FillLeaves(const dom::element& e, DType dtype, Tensor* t, int64_t* pos, int64_t limit) {
  if (e.type() == dom::element_type::ARRAY) {
    dom::array a = e.get_array().value_unsafe();
    for (dom::element child : a) STRATA_RETURN_IF_ERROR(FillLeaves(child, dtype, t, pos, limit));
    return Status::OK();
  }
  if (*pos < limit) STRATA_RETURN_IF_ERROR(json_detail::WriteJsonScalar(e, dtype, t, *pos));
  ++*pos;
  return Status::OK();
}

StatusOr<std::vector<int64_t>> ParseShape(const dom::element& e, std::string_view input) {
  if (e.type() != dom::element_type::ARRAY)
    return InvalidArgumentError("input '", input, "': 'shape' must be an array of non-negative integers, found ",
                                json_detail::Truncated(e));
  std::vector<int64_t> dims;
  dom::array a = e.get_array().value_unsafe();
  for (dom::element d : a) {
    int64_t v = -1;
    if (d.type() == dom::element_type::INT64) v = d.get_int64().value_unsafe();
    else if (d.type() == dom::element_type::UINT64 && d.get_uint64().value_unsafe() < (uint64_t{1} << 62))
      v = static_cast<int64_t>(d.get_uint64().value_unsafe());
    if (v < 0)
      return InvalidArgumentError("input '", input, "': 'shape' must be an array of non-negative integers, found ",
                                  json_detail::Truncated(e));
    dims.push_back(v);
  }
  return dims;
}

// Strings of a BYTES tensor in binary form: each a 4-byte little-endian length, then the bytes.
Status FillBytes(std::string_view chunk, std::string_view input, Tensor* t) {
  const int64_t n = t->num_elements();
  int64_t i = 0;
  size_t at = 0;
  while (at < chunk.size()) {
    uint32_t len = 0;
    if (chunk.size() - at < 4)
      return InvalidArgumentError("input '", input, "' (BYTES): element ", i, " has a truncated 4-byte length prefix (",
                                  chunk.size() - at, " bytes left of its binary_data_size)");
    std::memcpy(&len, chunk.data() + at, 4);
    at += 4;
    if (chunk.size() - at < len)
      return InvalidArgumentError("input '", input, "' (BYTES): element ", i, " declares ", len, " bytes but only ",
                                  chunk.size() - at, " remain of its binary_data_size");
    if (i < n) t->data<std::string>()[i] = std::string(chunk.substr(at, len));
    at += len;
    ++i;
  }
  if (i != n)
    return InvalidArgumentError("input '", input, "' (BYTES): shape ", t->shape().ToString(), " needs ", n,
                                " elements, the binary data holds ", i);
  return Status::OK();
}

Status FillBinary(std::string_view chunk, std::string_view input, std::string_view datatype, Tensor* t) {
  if (t->dtype() == DType::kString) return FillBytes(chunk, input, t);
  const size_t need = t->byte_size();
  if (chunk.size() != need)
    return InvalidArgumentError("input '", input, "' (", datatype, ", shape ", t->shape().ToString(), ") needs ", need,
                                " bytes of binary data, its binary_data_size is ", chunk.size());
  if (t->dtype() == DType::kBool) {
    bool* out = t->data<bool>();
    for (size_t i = 0; i < need; ++i) out[i] = chunk[i] != 0;
  } else if (need > 0) {
    std::memcpy(t->raw_data(), chunk.data(), need);
  }
  return Status::OK();
}

StatusOr<int64_t> BinarySize(const dom::element& params, std::string_view input) {
  dom::element size;
  if (params.type() != dom::element_type::OBJECT || params.get_object().value_unsafe()["binary_data_size"].get(size))
    return int64_t{-1};
  if (size.type() == dom::element_type::INT64 && size.get_int64().value_unsafe() >= 0)
    return size.get_int64().value_unsafe();
  return InvalidArgumentError("input '", input, "': parameters.binary_data_size must be a non-negative integer, found ",
                              json_detail::Truncated(size));
}

struct BinaryCursor {
  std::string_view bytes;
  size_t offset = 0;
};

Status ParseInput(const dom::element& e, size_t index, BinaryCursor* binary, NamedTensors* inputs) {
  if (e.type() != dom::element_type::OBJECT)
    return InvalidArgumentError("'inputs' element ", index, " must be an object, found ", json_detail::Truncated(e));
  dom::object o = e.get_object().value_unsafe();
  std::string_view name;
  if (o["name"].get(name))
    return InvalidArgumentError("'inputs' element ", index, " has no string 'name': ", json_detail::Truncated(e));
  dom::element shape_el, data, params;
  std::string_view datatype;
  if (o["shape"].get(shape_el)) return InvalidArgumentError("input '", name, "' has no 'shape'");
  if (o["datatype"].get(datatype)) return InvalidArgumentError("input '", name, "' has no string 'datatype'");
  auto dtype_or = DTypeFromV2Datatype(datatype);
  if (!dtype_or.ok()) return InvalidArgumentError("input '", name, "': ", dtype_or.status().message());
  const DType dtype = *dtype_or;
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ParseShape(shape_el, name));
  const bool has_data = !o["data"].get(data);
  int64_t binary_size = -1;
  if (!o["parameters"].get(params)) {
    STRATA_ASSIGN_OR_RETURN(binary_size, BinarySize(params, name));
  }
  if (has_data && binary_size >= 0)
    return InvalidArgumentError("input '", name, "' has both 'data' and parameters.binary_data_size; send one");
  if (!has_data && binary_size < 0)
    return InvalidArgumentError("input '", name, "' has neither 'data' nor parameters.binary_data_size");
  // The element count, checked against what was sent before anything is allocated.
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > (int64_t{1} << 48) / d)
      return InvalidArgumentError("input '", name, "': shape ", ShapeString(dims), " has more than 2^48 elements");
    n *= d;
  }
  Tensor t;
  if (binary_size >= 0) {
    const size_t left = binary->bytes.size() - binary->offset;
    if (static_cast<uint64_t>(binary_size) > left)
      return InvalidArgumentError("input '", name, "': binary_data_size is ", binary_size, " but only ", left,
                                  " bytes of binary data follow the JSON (Inference-Header-Content-Length)");
    const uint64_t need = static_cast<uint64_t>(n) * (dtype == DType::kString ? 4 : DTypeSize(dtype));
    const uint64_t have = static_cast<uint64_t>(binary_size);
    if (dtype == DType::kString ? need > have : need != have)
      return InvalidArgumentError("input '", name, "' (", datatype, ", shape ", ShapeString(dims), ") needs ",
                                  dtype == DType::kString ? "at least " : "", need,
                                  " bytes of binary data, its binary_data_size is ", binary_size);
    STRATA_ASSIGN_OR_RETURN(t, Tensor::Create(dtype, Shape(dims)));
    STRATA_RETURN_IF_ERROR(FillBinary(binary->bytes.substr(binary->offset, binary_size), name, datatype, &t));
    binary->offset += binary_size;
  } else {
    int64_t count = 0;
    CountLeaves(data, &count);
    if (count != n)
      return InvalidArgumentError("input '", name, "': shape ", ShapeString(dims), " needs ", n,
                                  " elements, 'data' holds ", count);
    STRATA_ASSIGN_OR_RETURN(t, Tensor::Create(dtype, Shape(dims)));
    count = 0;
    Status s = FillLeaves(data, dtype, &t, &count, n);
    if (!s.ok()) return Status(s.code(), StrCat("input '", name, "' (", datatype, "): ", s.message()));
  }
  inputs->emplace_back(std::string(name), std::move(t));
  return Status::OK();
}

Status ParseOutputs(const dom::element& e, std::vector<V2RequestedOutput>* outputs, bool binary_default) {
  if (e.type() != dom::element_type::ARRAY)
    return InvalidArgumentError("'outputs' must be an array of {\"name\": ...} objects, found ",
                                json_detail::Truncated(e));
  dom::array a = e.get_array().value_unsafe();
  for (dom::element out : a) {
    std::string_view name;
    if (out.type() != dom::element_type::OBJECT || out.get_object().value_unsafe()["name"].get(name))
      return InvalidArgumentError("'outputs' element has no string 'name': ", json_detail::Truncated(out));
    V2RequestedOutput r{std::string(name), binary_default};
    dom::element params;
    bool binary = false;
    if (!out.get_object().value_unsafe()["parameters"].get(params) && params.type() == dom::element_type::OBJECT &&
        !params.get_object().value_unsafe()["binary_data"].get(binary))
      r.binary = binary;
    outputs->push_back(std::move(r));
  }
  return Status::OK();
}

}  // namespace

std::string_view V2DatatypeName(DType dtype) {
  for (const V2Type& t : kV2Types)
    if (t.dtype == dtype) return t.name;
  return "";
}

StatusOr<DType> DTypeFromV2Datatype(std::string_view name) {
  for (const V2Type& t : kV2Types)
    if (name == t.name) return t.dtype;
  std::vector<std::string> names;
  for (const V2Type& t : kV2Types) names.push_back(t.name);
  return InvalidArgumentError("unknown datatype '", name, "'; expected one of ", StrJoin(names, ", "));
}

StatusOr<V2InferRequest> ParseV2InferRequest(std::string_view json, std::string_view binary) {
  if (!t_parser) t_parser = std::make_unique<dom::parser>();
  dom::element root;
  if (auto err = t_parser->parse(json.data(), json.size(), true).get(root))
    return InvalidArgumentError("JSON parse error in the inference request: ", simdjson::error_message(err));
  if (root.type() != dom::element_type::OBJECT)
    return InvalidArgumentError("the inference request must be a JSON object, found ", json_detail::Truncated(root));
  dom::object o = root.get_object().value_unsafe();
  V2InferRequest req;
  dom::element el;
  if (!o["id"].get(el)) {
    if (el.type() != dom::element_type::STRING)
      return InvalidArgumentError("'id' must be a string, found ", json_detail::Truncated(el));
    req.id = std::string(el.get_string().value_unsafe());
  }
  if (!o["parameters"].get(el) && el.type() == dom::element_type::OBJECT) {
    bool b = false;
    if (!el.get_object().value_unsafe()["binary_data_output"].get(b)) req.binary_data_output = b;
  }
  if (o["inputs"].get(el) || el.type() != dom::element_type::ARRAY || el.get_array().value_unsafe().size() == 0)
    return InvalidArgumentError("the inference request needs a non-empty 'inputs' array");
  BinaryCursor cursor{binary, 0};
  size_t index = 0;
  dom::array inputs = el.get_array().value_unsafe();
  for (dom::element in : inputs)
    STRATA_RETURN_IF_ERROR(ParseInput(in, index++, &cursor, &req.inputs));
  if (cursor.offset != binary.size())
    return InvalidArgumentError(binary.size(), " bytes of binary data follow the JSON (Inference-Header-Content-",
                                "Length) but the inputs' binary_data_size add up to ", cursor.offset);
  if (!o["outputs"].get(el)) STRATA_RETURN_IF_ERROR(ParseOutputs(el, &req.outputs, req.binary_data_output));
  return req;
}

std::string V2InferResponse(const std::string& model_name, int64_t version, const std::string& id,
                            const NamedTensors& outputs, const std::vector<bool>& binary, size_t* json_size) {
  std::string out = "{\"model_name\":";
  AppendJsonString(&out, model_name);
  out += ",\"model_version\":\"" + std::to_string(version) + "\"";
  if (!id.empty()) {
    out += ",\"id\":";
    AppendJsonString(&out, id);
  }
  out += ",\"outputs\":[";
  std::string tail;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i].second;
    if (i) out.push_back(',');
    out += "{\"name\":";
    AppendJsonString(&out, outputs[i].first);
    out += ",\"datatype\":\"";
    out += V2DatatypeName(t.dtype());
    out += "\",\"shape\":" + ShapeString(t.shape().ToVector());
    const int64_t n = t.num_elements();
    if (i < binary.size() && binary[i]) {
      const size_t before = tail.size();
      AppendV2Raw(t, &tail);
      out += ",\"parameters\":{\"binary_data_size\":" + std::to_string(tail.size() - before) + "}}";
      continue;
    }
    out += ",\"data\":[";
    for (int64_t k = 0; k < n; ++k) {
      if (k) out.push_back(',');
      AppendJsonElement(&out, t, k);
    }
    out += "]}";
  }
  out += "]}";
  *json_size = out.size();
  out += tail;
  return out;
}

namespace {

void AppendTensorMetadata(std::string* out, const std::vector<TensorInfo>& infos) {
  out->push_back('[');
  for (size_t i = 0; i < infos.size(); ++i) {
    if (i) out->push_back(',');
    *out += "{\"name\":";
    AppendJsonString(out, infos[i].alias);
    *out += ",\"datatype\":\"";
    *out += V2DatatypeName(infos[i].dtype);
    *out += "\",\"shape\":[";
    if (!infos[i].shape.rank_known) *out += "-1";
    for (size_t d = 0; d < infos[i].shape.dims.size(); ++d) {
      if (d) out->push_back(',');
      const Dim& dim = infos[i].shape.dims[d];
      *out += std::to_string(dim.known() ? dim.value : -1);
    }
    *out += "]}";
  }
  out->push_back(']');
}

}  // namespace

std::string V2ModelMetadata(const std::string& name, const std::vector<int64_t>& versions, const std::string& platform,
                            const SignatureDef& signature) {
  std::string out = "{\"name\":";
  AppendJsonString(&out, name);
  out += ",\"versions\":[";
  for (size_t i = 0; i < versions.size(); ++i) out += (i ? ",\"" : "\"") + std::to_string(versions[i]) + "\"";
  out += "],\"platform\":";
  AppendJsonString(&out, platform);
  out += ",\"inputs\":";
  AppendTensorMetadata(&out, signature.inputs);
  out += ",\"outputs\":";
  AppendTensorMetadata(&out, signature.outputs);
  out += "}";
  return out;
}

Status V2FillRaw(std::string_view bytes, std::string_view input, std::string_view datatype, Tensor* t) {
  return FillBinary(bytes, input, datatype, t);
}

void AppendV2Raw(const Tensor& t, std::string* out) {
  if (t.dtype() == DType::kString) {
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      const std::string& s = t.data<std::string>()[k];
      const uint32_t len = static_cast<uint32_t>(s.size());
      out->append(reinterpret_cast<const char*>(&len), 4);
      *out += s;
    }
  } else if (t.dtype() == DType::kBool) {
    for (int64_t k = 0; k < t.num_elements(); ++k) out->push_back(t.data<bool>()[k] ? 1 : 0);
  } else {
    out->append(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
}

std::string V2ServerMetadata() {
  return R"({"name":"strata","version":"0.1.0","extensions":["binary_tensor_data"]})";
}

}  // namespace strata::serve
