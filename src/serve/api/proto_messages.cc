// Protobuf conversions of tf.Example inputs, Classify/Regress results, signatures, status and configs.
#include "serve/api/proto_codec.h"

namespace strata::serve {

namespace {

Example ExampleFromProto(const tensorflow::Example& p) {
  Example ex;
  for (const auto& [name, f] : p.features().feature()) {
    Feature out;
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList:
        out.kind = Feature::Kind::kBytes;
        out.bytes.assign(f.bytes_list().value().begin(), f.bytes_list().value().end());
        break;
      case tensorflow::Feature::kFloatList:
        out.kind = Feature::Kind::kFloat;
        out.floats.assign(f.float_list().value().begin(), f.float_list().value().end());
        break;
      case tensorflow::Feature::kInt64List:
        out.kind = Feature::Kind::kInt64;
        out.ints.assign(f.int64_list().value().begin(), f.int64_list().value().end());
        break;
      case tensorflow::Feature::KIND_NOT_SET:
        break;
    }
    ex[name] = std::move(out);
  }
  return ex;
}

}  // namespace

StatusOr<ExampleInput> ExampleInputFromProto(const tensorflow::serving::Input& p) {
  ExampleInput in;
  switch (p.kind_case()) {
    case tensorflow::serving::Input::kExampleList:
      for (const auto& e : p.example_list().examples()) in.examples.push_back(ExampleFromProto(e));
      break;
    case tensorflow::serving::Input::kExampleListWithContext:
      for (const auto& e : p.example_list_with_context().examples()) in.examples.push_back(ExampleFromProto(e));
      in.context = ExampleFromProto(p.example_list_with_context().context());
      break;
    case tensorflow::serving::Input::KIND_NOT_SET:
      break;
  }
  if (in.examples.empty()) return InvalidArgumentError("Input is empty.");
  return in;
}

void ClassifyResponseToProto(const ClassifyResponse& r, tensorflow::serving::ClassificationResponse* p) {
  ModelSpecToProto(r.model_spec, p->mutable_model_spec());
  auto* result = p->mutable_result();
  for (const auto& classes : r.classifications) {
    auto* c = result->add_classifications();
    for (const auto& [label, score] : classes) {
      auto* cls = c->add_classes();
      cls->set_label(label);
      cls->set_score(score);
    }
  }
}

void RegressResponseToProto(const RegressResponse& r, tensorflow::serving::RegressionResponse* p) {
  ModelSpecToProto(r.model_spec, p->mutable_model_spec());
  for (float v : r.values) p->mutable_result()->add_regressions()->set_value(v);
}

namespace {

void TensorInfoToProto(const TensorInfo& t, tensorflow::TensorInfo* p) {
  p->set_name(t.name);
  p->set_dtype(static_cast<tensorflow::DataType>(TfDataTypeOf(t.dtype)));
  auto* shape = p->mutable_tensor_shape();
  if (!t.shape.rank_known) {
    shape->set_unknown_rank(true);
    return;
  }
  for (const Dim& d : t.shape.dims) shape->add_dim()->set_size(d.known() ? d.value : -1);
}

}  // namespace

void SignatureMapToProto(const SignatureMap& signatures, tensorflow::serving::SignatureDefMap* p) {
  for (const auto& [key, sig] : signatures) {
    tensorflow::SignatureDef& def = (*p->mutable_signature_def())[key];
    def.set_method_name(sig.method_name);
    for (const auto& in : sig.inputs) TensorInfoToProto(in, &(*def.mutable_inputs())[in.alias]);
    for (const auto& out : sig.outputs) TensorInfoToProto(out, &(*def.mutable_outputs())[out.alias]);
  }
}

void VersionStatusToProto(const VersionStatus& s, tensorflow::serving::ModelVersionStatus* p) {
  p->set_version(s.version);
  p->set_state(static_cast<tensorflow::serving::ModelVersionStatus::State>(static_cast<int>(s.state)));
  p->mutable_status()->set_error_code(static_cast<tensorflow::error::Code>(static_cast<int>(s.status.code())));
  p->mutable_status()->set_error_message(s.status.ok() ? "" : s.status.message());
}

StatusOr<std::vector<ModelConfig>> ModelConfigsFromProto(const tensorflow::serving::ModelServerConfig& p) {
  if (p.config_case() == tensorflow::serving::ModelServerConfig::kCustomModelConfig)
    return InvalidArgumentError("custom_model_config is not supported by this server; use model_config_list");
  std::vector<ModelConfig> out;
  for (const auto& c : p.model_config_list().config()) {
    ModelConfig m;
    m.name = c.name();
    m.base_path = c.base_path();
    if (c.model_type() != tensorflow::serving::MODEL_TYPE_UNSPECIFIED && !c.model_platform().empty())
      return InvalidArgumentError("Illegal setting both model_type(deprecated) and model_platform for model ",
                                  c.name());
    if (c.model_type() == tensorflow::serving::TENSORFLOW) {
      m.platform = "tensorflow";
    } else if (c.model_type() == tensorflow::serving::OTHER) {
      return InvalidArgumentError("Model ", c.name(), " requests unsupported platform (model_type OTHER)");
    } else {
      m.platform = c.model_platform();
      if (m.platform.empty())
        return InvalidArgumentError("Model ", c.name(), " has no model_platform; use \"tensorflow\" or \"onnx\"");
    }
    const auto& policy = c.model_version_policy();
    using P = tensorflow::serving::FileSystemStoragePathSourceConfig::ServableVersionPolicy;
    switch (policy.policy_choice_case()) {
      case P::kLatest:
        m.policy.kind = VersionPolicy::Kind::kLatest;
        m.policy.num_versions = policy.latest().num_versions() == 0 ? 1 : policy.latest().num_versions();
        break;
      case P::kAll:
        m.policy.kind = VersionPolicy::Kind::kAll;
        break;
      case P::kSpecific:
        m.policy.kind = VersionPolicy::Kind::kSpecific;
        m.policy.versions.assign(policy.specific().versions().begin(), policy.specific().versions().end());
        break;
      case P::POLICY_CHOICE_NOT_SET:
        break;
    }
    for (const auto& [label, version] : c.version_labels()) m.labels[label] = version;
    out.push_back(std::move(m));
  }
  STRATA_RETURN_IF_ERROR(ValidateModelConfigList(out));
  return out;
}

}  // namespace strata::serve
