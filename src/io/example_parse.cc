// Parse specs over serialized Examples (tf.io.parse_single_example / parse_example semantics): FixedLen with
// defaults, VarLen padded or ragged, for float32, int64 and string.
#include <google/protobuf/arena.h>

#include <algorithm>

#include "io/example_proto.h"
#include "strata/example.h"

namespace strata::io {

// The generated proto class (strata::io::Feature, the plain struct, is not used in this file).
using PbFeature = tensorflow::Feature;

FeatureSpec FeatureSpec::FixedLen(std::string key, DType dtype, std::vector<int64_t> shape,
                                  std::optional<Tensor> default_value) {
  FeatureSpec s;
  s.key = std::move(key);
  s.type = Type::kFixedLen;
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.default_value = std::move(default_value);
  return s;
}

FeatureSpec FeatureSpec::VarLen(std::string key, DType dtype, bool ragged) {
  FeatureSpec s;
  s.key = std::move(key);
  s.type = Type::kVarLen;
  s.dtype = dtype;
  s.ragged = ragged;
  return s;
}

namespace {

PbFeature::KindCase KindFor(DType t) {
  switch (t) {
    case DType::kFloat32: return PbFeature::kFloatList;
    case DType::kInt64: return PbFeature::kInt64List;
    default: return PbFeature::kBytesList;
  }
}

std::string_view KindName(PbFeature::KindCase k) {
  switch (k) {
    case PbFeature::kBytesList: return "bytes_list";
    case PbFeature::kFloatList: return "float_list";
    case PbFeature::kInt64List: return "int64_list";
    case PbFeature::KIND_NOT_SET: break;
  }
  return "no kind";
}

int64_t ValueCount(const PbFeature& f) {
  switch (f.kind_case()) {
    case PbFeature::kBytesList: return f.bytes_list().value_size();
    case PbFeature::kFloatList: return f.float_list().value_size();
    case PbFeature::kInt64List: return f.int64_list().value_size();
    case PbFeature::KIND_NOT_SET: break;
  }
  return 0;
}

// Copies the values of `f` (already checked to be of the dtype's kind) into dst[offset...].
void CopyValues(const PbFeature& f, Tensor* dst, int64_t offset) {
  switch (dst->dtype()) {
    case DType::kFloat32:
      if (f.kind_case() == PbFeature::kFloatList)
        std::copy(f.float_list().value().begin(), f.float_list().value().end(), dst->data<float>() + offset);
      break;
    case DType::kInt64:
      if (f.kind_case() == PbFeature::kInt64List)
        std::copy(f.int64_list().value().begin(), f.int64_list().value().end(), dst->data<int64_t>() + offset);
      break;
    default:
      if (f.kind_case() == PbFeature::kBytesList)
        std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(), dst->data<std::string>() + offset);
      break;
  }
}

// Writes `value` (a scalar) into dst[from, to).
void FillWith(const Tensor& value, Tensor* dst, int64_t from, int64_t to) {
  switch (dst->dtype()) {
    case DType::kFloat32: std::fill(dst->data<float>() + from, dst->data<float>() + to, value.data<float>()[0]); break;
    case DType::kInt64:
      std::fill(dst->data<int64_t>() + from, dst->data<int64_t>() + to, value.data<int64_t>()[0]);
      break;
    default:
      std::fill(dst->data<std::string>() + from, dst->data<std::string>() + to, value.data<std::string>()[0]);
      break;
  }
}

// Copies a default value (scalar, or exactly `n` values) into dst[offset, offset + n).
void CopyDefault(const Tensor& def, Tensor* dst, int64_t offset, int64_t n) {
  if (def.num_elements() == 1 && n != 1) return FillWith(def, dst, offset, offset + n);
  switch (dst->dtype()) {
    case DType::kFloat32: std::copy_n(def.data<float>(), n, dst->data<float>() + offset); break;
    case DType::kInt64: std::copy_n(def.data<int64_t>(), n, dst->data<int64_t>() + offset); break;
    default: std::copy_n(def.data<std::string>(), n, dst->data<std::string>() + offset); break;
  }
}

Tensor ZeroScalar(DType t) {
  switch (t) {
    case DType::kFloat32: return Tensor::Scalar<float>(0.0f);
    case DType::kInt64: return Tensor::Scalar<int64_t>(0);
    default: return Tensor::Scalar<std::string>("");
  }
}

// Checks the specs; allocates nothing unless there is an error (it runs once per parsed record).
Status ValidateSpecs(const std::vector<FeatureSpec>& specs) {
  for (size_t i = 0; i < specs.size(); ++i) {
    const FeatureSpec& s = specs[i];
    if (s.key.empty()) return InvalidArgumentError("a feature spec has an empty key");
    if (s.dtype != DType::kFloat32 && s.dtype != DType::kInt64 && s.dtype != DType::kString)
      return InvalidArgumentError("feature spec '", s.key,
                                  "': dtype must be float32, int64 or string (the three Example list kinds), got ",
                                  DTypeName(s.dtype));
    for (size_t j = 0; j < i; ++j)
      if (specs[j].output_name() == s.output_name())
        return InvalidArgumentError("feature spec '", s.key, "': output name '", s.output_name(), "' is produced twice");
    if (s.type == FeatureSpec::Type::kFixedLen) {
      int64_t n = 1;
      for (int64_t d : s.shape) {
        if (d < 0)
          return InvalidArgumentError("feature spec '", s.key, "': FixedLen shape must be fully defined, got ", s.shape);
        n *= d;
      }
      if (s.default_value) {
        const Tensor& d = *s.default_value;
        if (d.dtype() != s.dtype || (d.num_elements() != n && d.num_elements() != 1))
          return InvalidArgumentError("feature spec '", s.key, "': default_value must be ", DTypeName(s.dtype), " with ",
                                      n, " values (or a scalar), got ", d.TypeString());
      }
    } else if (s.padding_value &&
               (s.padding_value->dtype() != s.dtype || s.padding_value->num_elements() != 1)) {
      return InvalidArgumentError("feature spec '", s.key, "': padding_value must be a ", DTypeName(s.dtype),
                                  " scalar, got ", s.padding_value->TypeString());
    }
  }
  return Status::OK();
}

Status CheckKind(const PbFeature& f, const FeatureSpec& spec, std::string_view where) {
  if (f.kind_case() == PbFeature::KIND_NOT_SET || f.kind_case() == KindFor(spec.dtype)) return Status::OK();
  return InvalidArgumentError("feature '", spec.key, "' in ", where, ": spec expects ", KindName(KindFor(spec.dtype)),
                              " (dtype ", DTypeName(spec.dtype), "), found ", KindName(f.kind_case()), " with ",
                              ValueCount(f), " values");
}

// The feature for `spec`, or nullptr when absent; a present feature of the wrong kind is an error.
StatusOr<const PbFeature*> Lookup(const tensorflow::Features& features, const FeatureSpec& spec, std::string_view where) {
  const auto& map = features.feature();
  auto it = map.find(spec.key);
  if (it == map.end()) return static_cast<const PbFeature*>(nullptr);
  STRATA_RETURN_IF_ERROR(CheckKind(it->second, spec, where));
  return &it->second;
}

// One FixedLen value into dst rows [row*n, (row+1)*n).
Status FillFixed(const PbFeature* f, const FeatureSpec& spec, std::string_view where, Tensor* dst, int64_t row) {
  const int64_t n = Shape(spec.shape).NumElements();
  if (f == nullptr) {
    if (!spec.default_value)
      return InvalidArgumentError("feature '", spec.key, "' is required (FixedLen ", DTypeName(spec.dtype),
                                  Shape(spec.shape).ToString(), ", no default_value) but missing in ", where);
    CopyDefault(*spec.default_value, dst, row * n, n);
    return Status::OK();
  }
  if (ValueCount(*f) != n)
    return InvalidArgumentError("feature '", spec.key, "' in ", where, ": FixedLen shape ", Shape(spec.shape).ToString(),
                                " needs ", n, " values, found ", ValueCount(*f));
  CopyValues(*f, dst, row * n);
  return Status::OK();
}

StatusOr<tensorflow::Example*> ParseProto(std::string_view bytes, google::protobuf::Arena* arena,
                                          std::string_view where) {
  auto* ex = google::protobuf::Arena::CreateMessage<tensorflow::Example>(arena);
  if (bytes.size() > INT32_MAX || !ex->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgumentError("cannot parse a tf.train.Example from the ", bytes.size(), " bytes of ", where);
  return ex;
}

// Appends the tensors of a VarLen spec over `rows` (one PbFeature* per row, null = missing = empty).
void AppendVarLen(const FeatureSpec& spec, const std::vector<const PbFeature*>& rows, NamedTensors* out) {
  const auto batch = static_cast<int64_t>(rows.size());
  std::vector<int64_t> lengths(rows.size());
  int64_t total = 0, longest = 0;
  for (int64_t i = 0; i < batch; ++i) {
    lengths[i] = rows[i] ? ValueCount(*rows[i]) : 0;
    total += lengths[i];
    longest = std::max(longest, lengths[i]);
  }
  const std::string& name = spec.output_name();
  if (spec.ragged) {
    Tensor values = Tensor::Empty(spec.dtype, Shape{total});
    Tensor splits = Tensor::Empty(DType::kInt64, Shape{batch + 1});
    int64_t at = 0;
    splits.data<int64_t>()[0] = 0;
    for (int64_t i = 0; i < batch; ++i) {
      if (rows[i]) CopyValues(*rows[i], &values, at);
      at += lengths[i];
      splits.data<int64_t>()[i + 1] = at;
    }
    out->emplace_back(name, std::move(values));
    out->emplace_back(name + "/row_splits", std::move(splits));
    return;
  }
  Tensor dense = Tensor::Empty(spec.dtype, Shape{batch, longest});
  const Tensor pad = spec.padding_value ? *spec.padding_value : ZeroScalar(spec.dtype);
  for (int64_t i = 0; i < batch; ++i) {
    if (rows[i]) CopyValues(*rows[i], &dense, i * longest);
    FillWith(pad, &dense, i * longest + lengths[i], (i + 1) * longest);
  }
  out->emplace_back(name, std::move(dense));
  out->emplace_back(name + "/length", Tensor::FromVector<int64_t>(lengths));
}

// The tensor of one spec for one (unbatched) example: FixedLen of `shape`, VarLen 1-D.
StatusOr<Tensor> ParseOne(const PbFeature* f, const FeatureSpec& spec, std::string_view where) {
  if (spec.type == FeatureSpec::Type::kFixedLen) {
    Tensor t = Tensor::Empty(spec.dtype, Shape(spec.shape));
    STRATA_RETURN_IF_ERROR(FillFixed(f, spec, where, &t, 0));
    return t;
  }
  Tensor t = Tensor::Empty(spec.dtype, Shape{f ? ValueCount(*f) : 0});
  if (f) CopyValues(*f, &t, 0);
  return t;
}

}  // namespace

StatusOr<NamedTensors> ParseSingleExample(std::string_view serialized, const std::vector<FeatureSpec>& specs,
                                          std::string_view where) {
  STRATA_RETURN_IF_ERROR(ValidateSpecs(specs));
  alignas(8) char initial[8192];
  google::protobuf::ArenaOptions options;
  options.initial_block = initial;
  options.initial_block_size = sizeof(initial);
  google::protobuf::Arena arena(options);
  STRATA_ASSIGN_OR_RETURN(tensorflow::Example * ex, ParseProto(serialized, &arena, where));
  NamedTensors out;
  out.reserve(specs.size());
  for (const FeatureSpec& spec : specs) {
    STRATA_ASSIGN_OR_RETURN(const PbFeature* f, Lookup(ex->features(), spec, where));
    STRATA_ASSIGN_OR_RETURN(Tensor t, ParseOne(f, spec, where));
    out.emplace_back(spec.output_name(), std::move(t));
  }
  return out;
}

StatusOr<NamedTensors> ParseExampleBatch(const std::vector<std::string_view>& serialized,
                                         const std::vector<FeatureSpec>& specs, const std::vector<std::string>& where) {
  STRATA_RETURN_IF_ERROR(ValidateSpecs(specs));
  const auto batch = static_cast<int64_t>(serialized.size());
  auto name = [&](int64_t i) { return i < static_cast<int64_t>(where.size()) ? where[i] : StrCat("batch row ", i); };
  google::protobuf::Arena arena;
  std::vector<tensorflow::Example*> examples(serialized.size());
  for (int64_t i = 0; i < batch; ++i) {
    STRATA_ASSIGN_OR_RETURN(examples[i], ParseProto(serialized[i], &arena, name(i)));
  }
  NamedTensors out;
  std::vector<const PbFeature*> rows(serialized.size());
  for (const FeatureSpec& spec : specs) {
    for (int64_t i = 0; i < batch; ++i) {
      STRATA_ASSIGN_OR_RETURN(rows[i], Lookup(examples[i]->features(), spec, name(i)));
    }
    if (spec.type == FeatureSpec::Type::kVarLen) {
      AppendVarLen(spec, rows, &out);
      continue;
    }
    Shape shape(spec.shape);
    Shape batched{batch};
    for (int64_t d : spec.shape) batched.PushBack(d);
    Tensor t = Tensor::Empty(spec.dtype, batched);
    for (int64_t i = 0; i < batch; ++i) STRATA_RETURN_IF_ERROR(FillFixed(rows[i], spec, name(i), &t, i));
    out.emplace_back(spec.output_name(), std::move(t));
  }
  return out;
}

namespace {

// One sequence (feature_lists) spec over the steps of `list` (null: the list is missing).
Status AppendSequence(const tensorflow::FeatureList* list, const FeatureSpec& spec, std::string_view where,
                      NamedTensors* out) {
  const int64_t steps = list ? list->feature_size() : 0;
  const std::string step_where = StrCat("the feature list of ", where);
  if (list == nullptr && spec.type == FeatureSpec::Type::kFixedLen && !spec.default_value)
    return InvalidArgumentError("feature list '", spec.key, "' is required (FixedLen, no default_value) but missing in ",
                                where);
  std::vector<const PbFeature*> rows;
  for (int64_t t = 0; t < steps; ++t) {
    const PbFeature& f = list->feature(static_cast<int>(t));
    STRATA_RETURN_IF_ERROR(CheckKind(f, spec, StrCat("step ", t, " of ", step_where)));
    rows.push_back(&f);
  }
  if (spec.type == FeatureSpec::Type::kVarLen) {
    FeatureSpec ragged = spec;
    ragged.ragged = true;
    AppendVarLen(ragged, rows, out);
    return Status::OK();
  }
  Shape shape{steps};
  for (int64_t d : spec.shape) shape.PushBack(d);
  Tensor t = Tensor::Empty(spec.dtype, shape);
  for (int64_t i = 0; i < steps; ++i)
    STRATA_RETURN_IF_ERROR(FillFixed(rows[i], spec, StrCat("step ", i, " of ", step_where), &t, i));
  out->emplace_back(spec.output_name(), std::move(t));
  return Status::OK();
}

}  // namespace

StatusOr<NamedTensors> ParseSingleSequenceExample(std::string_view serialized,
                                                  const std::vector<FeatureSpec>& context_specs,
                                                  const std::vector<FeatureSpec>& sequence_specs,
                                                  std::string_view where) {
  STRATA_RETURN_IF_ERROR(ValidateSpecs(context_specs));
  STRATA_RETURN_IF_ERROR(ValidateSpecs(sequence_specs));
  google::protobuf::Arena arena;
  auto* ex = google::protobuf::Arena::CreateMessage<tensorflow::SequenceExample>(&arena);
  if (serialized.size() > INT32_MAX || !ex->ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    return InvalidArgumentError("cannot parse a tf.train.SequenceExample from the ", serialized.size(), " bytes of ",
                                where);
  NamedTensors out;
  for (const FeatureSpec& spec : context_specs) {
    const std::string context_where = StrCat("the context of ", where);
    STRATA_ASSIGN_OR_RETURN(const PbFeature* f, Lookup(ex->context(), spec, context_where));
    STRATA_ASSIGN_OR_RETURN(Tensor t, ParseOne(f, spec, context_where));
    out.emplace_back(spec.output_name(), std::move(t));
  }
  const auto& lists = ex->feature_lists().feature_list();
  for (const FeatureSpec& spec : sequence_specs) {
    auto it = lists.find(spec.key);
    STRATA_RETURN_IF_ERROR(AppendSequence(it == lists.end() ? nullptr : &it->second, spec, where, &out));
  }
  return out;
}

}  // namespace strata::io
