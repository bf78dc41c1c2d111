#include "serve/api/proto_codec.h"

#include <cstring>
#include <limits>

namespace strata::serve {

namespace {

// Copies `count` typed values into `out` (n elements): extra values are ignored, missing ones repeat the last value,
// no values leave zeros (TF's Tensor::FromProto).
template <typename Dst, typename Field>
void FillFrom(const Field& field, int64_t n, Dst* out) {
  const int64_t count = field.size();
  for (int64_t i = 0; i < n; ++i)
    out[i] = count == 0 ? Dst{} : static_cast<Dst>(field.Get(static_cast<int>(std::min(i, count - 1))));
}

template <typename Wrapper, typename Field>
void FillBits(const Field& field, int64_t n, Wrapper* out) {
  const int64_t count = field.size();
  for (int64_t i = 0; i < n; ++i)
    out[i] = Wrapper::FromBits(count == 0 ? 0 : static_cast<uint16_t>(field.Get(static_cast<int>(std::min(i, count - 1)))));
}

}  // namespace

StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& p, int64_t max_bytes) {
  STRATA_ASSIGN_OR_RETURN(DType dtype, DTypeFromTf(p.dtype()));
  if (p.tensor_shape().unknown_rank()) return InvalidArgumentError("tensor shape has unknown_rank set");
  Shape shape;
  int64_t n = 1;
  for (const auto& d : p.tensor_shape().dim()) {
    if (d.size() < 0) return InvalidArgumentError("tensor shape has a negative dimension ", d.size());
    if (d.size() > 0 && n > std::numeric_limits<int64_t>::max() / d.size())
      return InvalidArgumentError("tensor shape is too large");
    n *= d.size();
    shape.PushBack(d.size());
  }
  const int64_t elem = dtype == DType::kString ? 32 : static_cast<int64_t>(DTypeSize(dtype));
  if (n > max_bytes / std::max<int64_t>(elem, 1))
    return InvalidArgumentError("tensor of shape ", shape.ToString(), " ", DTypeName(dtype), " is larger than the ",
                                max_bytes, "-byte limit");
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  if (!p.tensor_content().empty()) {
    if (dtype == DType::kString) return InvalidArgumentError("tensor_content is not allowed for DT_STRING tensors");
    if (p.tensor_content().size() != t.byte_size())
      return InvalidArgumentError("tensor_content has ", p.tensor_content().size(), " bytes, but shape ",
                                  shape.ToString(), " of ", DTypeName(dtype), " needs ", t.byte_size());
    if (t.byte_size()) std::memcpy(t.raw_data(), p.tensor_content().data(), t.byte_size());
    return t;
  }
  switch (dtype) {
    case DType::kFloat32: FillFrom(p.float_val(), n, t.data<float>()); break;
    case DType::kFloat64: FillFrom(p.double_val(), n, t.data<double>()); break;
    case DType::kInt32: FillFrom(p.int_val(), n, t.data<int32_t>()); break;
    case DType::kInt16: FillFrom(p.int_val(), n, t.data<int16_t>()); break;
    case DType::kInt8: FillFrom(p.int_val(), n, t.data<int8_t>()); break;
    case DType::kUInt8: FillFrom(p.int_val(), n, t.data<uint8_t>()); break;
    case DType::kUInt16: FillFrom(p.int_val(), n, t.data<uint16_t>()); break;
    case DType::kInt64: FillFrom(p.int64_val(), n, t.data<int64_t>()); break;
    case DType::kUInt32: FillFrom(p.uint32_val(), n, t.data<uint32_t>()); break;
    case DType::kUInt64: FillFrom(p.uint64_val(), n, t.data<uint64_t>()); break;
    case DType::kBool: FillFrom(p.bool_val(), n, t.data<bool>()); break;
    case DType::kFloat16: FillBits(p.half_val(), n, t.data<Float16>()); break;
    case DType::kBFloat16: FillBits(p.half_val(), n, t.data<BFloat16>()); break;
    case DType::kString: {
      const int64_t count = p.string_val_size();
      std::string* out = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = count == 0 ? std::string() : p.string_val(static_cast<int>(std::min(i, count - 1)));
      break;
    }
    case DType::kUndefined: return InvalidArgumentError("tensor dtype is undefined");
  }
  return t;
}

void TensorToProto(const Tensor& t, bool tensor_content, tensorflow::TensorProto* p) {
  p->set_dtype(static_cast<tensorflow::DataType>(TfDataTypeOf(t.dtype())));
  auto* shape = p->mutable_tensor_shape();
  for (int i = 0; i < t.rank(); ++i) shape->add_dim()->set_size(t.dim(i));
  const int64_t n = t.num_elements();
  if (tensor_content && t.dtype() != DType::kString) {
    p->set_tensor_content(std::string(static_cast<const char*>(t.raw_data()), t.byte_size()));
    return;
  }
  auto add_all = [n](auto* field, const auto* data) {
    field->Reserve(static_cast<int>(n));
    for (int64_t i = 0; i < n; ++i) field->Add(data[i]);
  };
  switch (t.dtype()) {
    case DType::kFloat32: add_all(p->mutable_float_val(), t.data<float>()); break;
    case DType::kFloat64: add_all(p->mutable_double_val(), t.data<double>()); break;
    case DType::kInt32: add_all(p->mutable_int_val(), t.data<int32_t>()); break;
    case DType::kInt16: add_all(p->mutable_int_val(), t.data<int16_t>()); break;
    case DType::kInt8: add_all(p->mutable_int_val(), t.data<int8_t>()); break;
    case DType::kUInt8: add_all(p->mutable_int_val(), t.data<uint8_t>()); break;
    case DType::kUInt16: add_all(p->mutable_int_val(), t.data<uint16_t>()); break;
    case DType::kInt64: add_all(p->mutable_int64_val(), t.data<int64_t>()); break;
    case DType::kUInt32: add_all(p->mutable_uint32_val(), t.data<uint32_t>()); break;
    case DType::kUInt64: add_all(p->mutable_uint64_val(), t.data<uint64_t>()); break;
    case DType::kBool: add_all(p->mutable_bool_val(), t.data<bool>()); break;
    case DType::kFloat16:
      for (int64_t i = 0; i < n; ++i) p->add_half_val(t.data<Float16>()[i].bits);
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) p->add_half_val(t.data<BFloat16>()[i].bits);
      break;
    case DType::kString:
      for (int64_t i = 0; i < n; ++i) p->add_string_val(t.data<std::string>()[i]);
      break;
    case DType::kUndefined: break;
  }
}

ModelSpec ModelSpecFromProto(const tensorflow::serving::ModelSpec& p) {
  ModelSpec s;
  s.name = p.name();
  if (p.has_version()) s.version = p.version().value();
  if (p.version_choice_case() == tensorflow::serving::ModelSpec::kVersionLabel) s.version_label = p.version_label();
  s.signature_name = p.signature_name();
  return s;
}

void ModelSpecToProto(const ModelSpec& s, tensorflow::serving::ModelSpec* p) {
  p->set_name(s.name);
  if (s.version) p->mutable_version()->set_value(*s.version);
  else if (!s.version_label.empty()) p->set_version_label(s.version_label);
  p->set_signature_name(s.signature_name);
}

StatusOr<PredictRequest> PredictRequestFromProto(const tensorflow::serving::PredictRequest& p,
                                                 int64_t max_tensor_bytes) {
  PredictRequest r;
  r.model_spec = ModelSpecFromProto(p.model_spec());
  // Map order is unspecified on the wire; sort by alias so that errors and batching keys are stable.
  std::vector<std::string> aliases;
  for (const auto& [alias, t] : p.inputs()) aliases.push_back(alias);
  std::sort(aliases.begin(), aliases.end());
  for (const std::string& alias : aliases) {
    auto t = TensorFromProto(p.inputs().at(alias), max_tensor_bytes);
    if (!t.ok()) return Status(t.status().code(), StrCat("input '", alias, "': ", t.status().message()));
    r.inputs.emplace_back(alias, std::move(t).value());
  }
  r.output_filter.assign(p.output_filter().begin(), p.output_filter().end());
  return r;
}

void PredictResponseToProto(const PredictResponse& r, bool tensor_content, tensorflow::serving::PredictResponse* p) {
  ModelSpecToProto(r.model_spec, p->mutable_model_spec());
  for (const auto& [alias, t] : r.outputs) TensorToProto(t, tensor_content, &(*p->mutable_outputs())[alias]);
}

}  // namespace strata::serve
