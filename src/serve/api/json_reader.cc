// JSON request bodies → tensors, with simdjson's DOM parser (one parser per thread, reused).
#include <cmath>
#include <limits>

#include "serve/api/json_internal.h"

namespace strata::serve {

namespace dom = simdjson::dom;

namespace {
// Parsers are reused across requests on a thread (their buffers grow to the largest body seen).
thread_local std::vector<std::unique_ptr<dom::parser>> t_parsers;
}  // namespace

namespace json_detail {

std::string_view JsonTypeName(const dom::element& e) {
  switch (e.type()) {
    case dom::element_type::ARRAY: return "Array";
    case dom::element_type::OBJECT: return "Object";
    case dom::element_type::STRING: return "String";
    case dom::element_type::BOOL: return e.get_bool().value_unsafe() ? "True" : "False";
    case dom::element_type::NULL_VALUE: return "Null";
    default: return "Number";
  }
}

std::string Truncated(const dom::element& e) {
  std::string s = simdjson::minify(e);
  if (s.size() > 256) s = s.substr(0, 256) + "...";
  return s;
}

Status TypeError(const dom::element& e, DType dtype) {
  return InvalidArgumentError("JSON Value: ", Truncated(e), " Type: ", JsonTypeName(e), " is not of expected type: ",
                              TfDataTypeShortName(TfDataTypeOf(dtype)));
}

bool IsB64(const dom::element& e, std::string_view* text) {
  if (e.type() != dom::element_type::OBJECT) return false;
  dom::object o = e.get_object().value_unsafe();
  if (o.size() != 1) return false;
  auto kv = *o.begin();
  if (kv.key != "b64" || kv.value.type() != dom::element_type::STRING) return false;
  *text = kv.value.get_string().value_unsafe();
  return true;
}

}  // namespace json_detail

namespace {

using json_detail::IsB64;
using json_detail::JsonTypeName;
using json_detail::Truncated;
using json_detail::TypeError;

bool IsNamedObject(const dom::element& e) {
  std::string_view unused;
  return e.type() == dom::element_type::OBJECT && !IsB64(e, &unused);
}

// Non-finite tokens (NaN, Infinity, -Infinity, Inf, -Inf) are not JSON; TF Serving accepts them. When a body fails to
// parse and holds such tokens outside strings, they are quoted and the body parsed again; float inputs accept the
// quoted forms.
bool QuoteNonFinite(std::string_view in, std::string* out) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "-Inf", "Inf", "NaN", "-NaN"};
  bool in_string = false, changed = false;
  out->clear();
  out->reserve(in.size() + 16);
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (in_string) {
      out->push_back(c);
      if (c == '\\' && i + 1 < in.size()) out->push_back(in[++i]);
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out->push_back(c);
      continue;
    }
    bool matched = false;
    if (c == 'N' || c == 'I' || c == '-') {
      for (std::string_view tok : kTokens) {
        if (in.compare(i, tok.size(), tok) == 0) {
          const size_t end = i + tok.size();
          if (end < in.size() && (std::isalnum(static_cast<unsigned char>(in[end])) || in[end] == '_')) continue;
          out->push_back('"');
          out->append(tok);
          out->push_back('"');
          i = end - 1;
          matched = changed = true;
          break;
        }
      }
    }
    if (!matched) out->push_back(c);
  }
  return changed;
}

bool NonFiniteString(std::string_view s, double* v) {
  if (s == "NaN" || s == "-NaN") *v = std::numeric_limits<double>::quiet_NaN();
  else if (s == "Infinity" || s == "Inf") *v = std::numeric_limits<double>::infinity();
  else if (s == "-Infinity" || s == "-Inf") *v = -std::numeric_limits<double>::infinity();
  else return false;
  return true;
}

// ---- scalar conversion by dtype ----

Status ToDouble(const dom::element& e, DType dtype, double* v) {
  switch (e.type()) {
    case dom::element_type::DOUBLE: *v = e.get_double().value_unsafe(); return Status::OK();
    case dom::element_type::INT64: *v = static_cast<double>(e.get_int64().value_unsafe()); return Status::OK();
    case dom::element_type::UINT64: *v = static_cast<double>(e.get_uint64().value_unsafe()); return Status::OK();
    case dom::element_type::STRING:
      if (NonFiniteString(e.get_string().value_unsafe(), v)) return Status::OK();
      return TypeError(e, dtype);
    default: return TypeError(e, dtype);
  }
}

template <typename T>
Status ToInteger(const dom::element& e, DType dtype, T* v) {
  if (e.type() == dom::element_type::INT64) {
    const int64_t x = e.get_int64().value_unsafe();
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (x > 0 && static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      return InvalidArgumentError("JSON Value: ", x, " is out of range for type: ", TfDataTypeShortName(TfDataTypeOf(dtype)));
    *v = static_cast<T>(x);
    return Status::OK();
  }
  if (e.type() == dom::element_type::UINT64) {
    const uint64_t x = e.get_uint64().value_unsafe();
    if (x > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      return InvalidArgumentError("JSON Value: ", x, " is out of range for type: ", TfDataTypeShortName(TfDataTypeOf(dtype)));
    *v = static_cast<T>(x);
    return Status::OK();
  }
  return TypeError(e, dtype);
}

Status WriteScalar(const dom::element& e, DType dtype, Tensor* t, int64_t i) {
  switch (dtype) {
    case DType::kFloat32: {
      double v;
      STRATA_RETURN_IF_ERROR(ToDouble(e, dtype, &v));
      t->data<float>()[i] = static_cast<float>(v);
      return Status::OK();
    }
    case DType::kFloat64: return ToDouble(e, dtype, &t->data<double>()[i]);
    case DType::kFloat16:
    case DType::kBFloat16: {
      double v;
      STRATA_RETURN_IF_ERROR(ToDouble(e, dtype, &v));
      if (dtype == DType::kFloat16) t->data<Float16>()[i] = Float16(static_cast<float>(v));
      else t->data<BFloat16>()[i] = BFloat16(static_cast<float>(v));
      return Status::OK();
    }
    case DType::kInt8: return ToInteger(e, dtype, &t->data<int8_t>()[i]);
    case DType::kUInt8: return ToInteger(e, dtype, &t->data<uint8_t>()[i]);
    case DType::kInt16: return ToInteger(e, dtype, &t->data<int16_t>()[i]);
    case DType::kUInt16: return ToInteger(e, dtype, &t->data<uint16_t>()[i]);
    case DType::kInt32: return ToInteger(e, dtype, &t->data<int32_t>()[i]);
    case DType::kUInt32: return ToInteger(e, dtype, &t->data<uint32_t>()[i]);
    case DType::kInt64: return ToInteger(e, dtype, &t->data<int64_t>()[i]);
    case DType::kUInt64: return ToInteger(e, dtype, &t->data<uint64_t>()[i]);
    case DType::kBool:
      if (e.type() != dom::element_type::BOOL) return TypeError(e, dtype);
      t->data<bool>()[i] = e.get_bool().value_unsafe();
      return Status::OK();
    case DType::kString: {
      std::string_view b64;
      if (e.type() == dom::element_type::STRING) {
        t->data<std::string>()[i] = std::string(e.get_string().value_unsafe());
        return Status::OK();
      }
      if (IsB64(e, &b64)) {
        if (!Base64Decode(b64, &t->data<std::string>()[i])) return InvalidArgumentError("Unable to base64 decode");
        return Status::OK();
      }
      return TypeError(e, dtype);
    }
    default:
      return UnimplementedError("Conversion of JSON Value: ", Truncated(e), " to type: ", DTypeName(dtype));
  }
}

// ---- shapes and filling ----

// Shape from the nesting, following the first element at each level; b64 objects are scalars.
void ShapeOf(dom::element e, std::vector<int64_t>* dims) {
  while (e.type() == dom::element_type::ARRAY) {
    dom::array a = e.get_array().value_unsafe();
    const size_t n = a.size();
    dims->push_back(static_cast<int64_t>(n));
    if (n == 0) return;
    e = *a.begin();
  }
}

std::string DimsString(const std::vector<int64_t>& d, size_t from = 0) {
  std::vector<int64_t> tail(d.begin() + static_cast<std::ptrdiff_t>(from), d.end());
  return StrCat("[", StrJoin(tail, ","), "]");
}

Status Fill(const dom::element& e, const std::vector<int64_t>& dims, size_t level, DType dtype, Tensor* t,
            int64_t* pos) {
  if (level < dims.size()) {
    if (e.type() != dom::element_type::ARRAY)
      return InvalidArgumentError("Encountered data at unexpected level: expected a list of ", dims[level],
                                  " values at depth ", level, " (shape ", DimsString(dims), "), found ",
                                  Truncated(e));
    dom::array a = e.get_array().value_unsafe();
    const size_t n = a.size();
    if (static_cast<int64_t>(n) != dims[level])
      return InvalidArgumentError("Encountered list at unexpected size: ", n, " at depth ", level,
                                  ", expected ", dims[level], " (shape ", DimsString(dims), ")");
    for (dom::element child : a) STRATA_RETURN_IF_ERROR(Fill(child, dims, level + 1, dtype, t, pos));
    return Status::OK();
  }
  if (e.type() == dom::element_type::ARRAY)
    return InvalidArgumentError("Encountered list at unexpected level: scalar expected at depth ", level, " (shape ",
                                DimsString(dims), "), found ", Truncated(e));
  return WriteScalar(e, dtype, t, (*pos)++);
}

// One tensor from one JSON value (columnar format).
StatusOr<Tensor> TensorFromJson(const dom::element& e, DType dtype) {
  std::vector<int64_t> dims;
  ShapeOf(e, &dims);
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, Shape(dims)));
  int64_t pos = 0;
  STRATA_RETURN_IF_ERROR(Fill(e, dims, 0, dtype, &t, &pos));
  return t;
}

}  // namespace

namespace json_detail {
Status WriteJsonScalar(const dom::element& e, DType dtype, Tensor* t, int64_t i) { return WriteScalar(e, dtype, t, i); }
}  // namespace json_detail

JsonRequest::Impl::~Impl() {
  if (parser) t_parsers.push_back(std::move(parser));
}

JsonRequest::JsonRequest() : impl_(std::make_unique<Impl>()) {
  if (!t_parsers.empty()) {
    impl_->parser = std::move(t_parsers.back());
    t_parsers.pop_back();
  } else {
    impl_->parser = std::make_unique<dom::parser>();
  }
}

JsonRequest::~JsonRequest() = default;

Status JsonRequest::Parse(std::string_view body) {
  size_t start = 0;
  while (start < body.size() && std::isspace(static_cast<unsigned char>(body[start]))) ++start;
  if (start == body.size()) return InvalidArgumentError("JSON Parse error: The document is empty");
  auto err = impl_->parser->parse(body.data(), body.size(), true).get(impl_->root);
  // Out of memory is the server's state, not the request's fault: RESOURCE_EXHAUSTED (429, retry), not 400. Checked
  // before the NaN/Infinity rewrite below, which would copy the body (and throw std::bad_alloc) when memory is out.
  auto out_of_memory = [&] {
    return ResourceExhaustedError("out of memory parsing a JSON body of ", body.size(), " bytes; retry later");
  };
  if (err == simdjson::MEMALLOC) return out_of_memory();
  if (err && QuoteNonFinite(body, &impl_->rewritten))
    err = impl_->parser->parse(impl_->rewritten.data(), impl_->rewritten.size(), true).get(impl_->root);
  if (err == simdjson::MEMALLOC) return out_of_memory();
  if (err) return InvalidArgumentError("JSON Parse error: ", simdjson::error_message(err));
  if (impl_->root.type() != dom::element_type::OBJECT)
    return InvalidArgumentError("JSON Parse error: the request body must be a JSON object. Is not object");
  return Status::OK();
}

StatusOr<std::string> JsonRequest::SignatureName() const {
  dom::element v;
  if (impl_->root.get_object().value_unsafe()["signature_name"].get(v)) return std::string();
  if (v.type() != dom::element_type::STRING)
    return InvalidArgumentError("'signature_name' key must be a string value.");
  return std::string(v.get_string().value_unsafe());
}

namespace {

// Row format: every element is that input's value for one instance; stacked along a new dimension 0.
StatusOr<Tensor> StackInstances(const dom::array& instances, const TensorInfo& in, bool named) {
  const int64_t n = static_cast<int64_t>(instances.size());
  auto value_of = [&](const dom::element& e) -> dom::element {
    return named ? e.get_object().value_unsafe()[in.alias].value_unsafe() : e;
  };
  std::vector<int64_t> elem_dims;
  ShapeOf(value_of(*instances.begin()), &elem_dims);
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), elem_dims.begin(), elem_dims.end());
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(in.dtype, Shape(dims)));
  int64_t pos = 0, i = 0;
  for (dom::element e : instances) {
    Status s = Fill(value_of(e), elem_dims, 0, in.dtype, &t, &pos);
    if (!s.ok()) {
      std::vector<int64_t> got;
      ShapeOf(value_of(e), &got);
      std::string msg = got != elem_dims ? StrCat("Expecting shape ", DimsString(elem_dims), " but got: ",
                                                  DimsString(got), " (every instance must have the same shape)")
                                         : s.message();
      return Status(s.code(), StrCat("Failed to process element: ", i, named ? StrCat(" key: ", in.alias) : "",
                                     " of 'instances' list. Error: ", msg));
    }
    ++i;
  }
  return t;
}

Status RowInputs(const dom::element& instances_el, const SignatureDef& sig, NamedTensors* inputs) {
  if (instances_el.type() != dom::element_type::ARRAY)
    return InvalidArgumentError("Expecting 'instances' to be an list/array");
  dom::array instances = instances_el.get_array().value_unsafe();
  if (instances.size() == 0) return InvalidArgumentError("'instances' is an empty list; send at least one instance");
  const bool named = IsNamedObject(*instances.begin());
  if (!named && sig.inputs.size() != 1)
    return InvalidArgumentError("instances is a plain list, but expecting list of objects as multiple input tensors "
                                "required as per tensorinfo_map");
  if (named) {
    std::vector<std::string> expected;
    for (const auto& in : sig.inputs) expected.push_back(in.alias);
    int64_t i = 0;
    for (dom::element e : instances) {
      if (!IsNamedObject(e))
        return InvalidArgumentError("Failed to process element: ", i, " of 'instances' list. Error: mixing objects "
                                    "and plain values in 'instances' is not allowed");
      dom::object o = e.get_object().value_unsafe();
      std::vector<std::string> keys;
      for (auto kv : o) keys.emplace_back(kv.key);
      std::vector<std::string> sorted_keys = keys, sorted_expected = expected;
      std::sort(sorted_keys.begin(), sorted_keys.end());
      std::sort(sorted_expected.begin(), sorted_expected.end());
      if (sorted_keys != sorted_expected) {
        std::string hint;
        for (const auto& k : sorted_keys)
          if (!std::binary_search(sorted_expected.begin(), sorted_expected.end(), k))
            hint += StrCat(" Did you mean '", ClosestName(k, expected), "' instead of '", k, "'?");
        return InvalidArgumentError("Failed to process element: ", i, " of 'instances' list. JSON object: ",
                                    Truncated(e), " keys must be equal to: ", StrJoin(sorted_expected, ","), ".",
                                    hint);
      }
      ++i;
    }
  }
  for (const TensorInfo& in : sig.inputs) {
    STRATA_ASSIGN_OR_RETURN(Tensor t, StackInstances(instances, in, named));
    inputs->emplace_back(in.alias, std::move(t));
  }
  return Status::OK();
}

Status ColumnarInputs(const dom::element& value, const SignatureDef& sig, NamedTensors* inputs) {
  if (!IsNamedObject(value)) {
    if (sig.inputs.size() != 1)
      return InvalidArgumentError("inputs is a plain value/list, but expecting an object as multiple input tensors "
                                  "required as per tensorinfo_map");
    auto t = TensorFromJson(value, sig.inputs[0].dtype);
    if (!t.ok())
      return Status(t.status().code(), StrCat(t.status().message(), " (input '", sig.inputs[0].alias, "')"));
    inputs->emplace_back(sig.inputs[0].alias, std::move(t).value());
    return Status::OK();
  }
  dom::object o = value.get_object().value_unsafe();
  std::vector<std::string> expected, sent;
  for (const auto& in : sig.inputs) expected.push_back(in.alias);
  for (auto kv : o) sent.emplace_back(kv.key);
  for (const TensorInfo& in : sig.inputs) {
    dom::element v;
    if (o[in.alias].get(v)) {
      std::vector<std::string> unknown;
      for (const auto& k : sent)
        if (!sig.FindInput(k)) unknown.push_back(k);
      std::string hint;
      if (!unknown.empty()) hint = StrCat(" Did you mean '", in.alias, "' instead of '", ClosestName(in.alias, unknown), "'?");
      return InvalidArgumentError("Missing named input: ", in.alias, " in 'inputs' object.", hint,
                                  " Expected inputs: ", StrJoin(expected, ", "), ".");
    }
    auto t = TensorFromJson(v, in.dtype);
    if (!t.ok()) return Status(t.status().code(), StrCat(t.status().message(), " (input '", in.alias, "')"));
    inputs->emplace_back(in.alias, std::move(t).value());
  }
  return Status::OK();
}

}  // namespace

Status JsonRequest::PredictInputs(const SignatureDef& sig, NamedTensors* inputs, bool* row_format) const {
  dom::object root = impl_->root.get_object().value_unsafe();
  dom::element instances, columns;
  const bool has_instances = !root["instances"].get(instances);
  const bool has_inputs = !root["inputs"].get(columns);
  if (has_instances && has_inputs)
    return InvalidArgumentError("Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist");
  if (!has_instances && !has_inputs) return InvalidArgumentError("Missing 'inputs' or 'instances' key");
  *row_format = has_instances;
  return has_instances ? RowInputs(instances, sig, inputs) : ColumnarInputs(columns, sig, inputs);
}

}  // namespace strata::serve
