// ExportModel: the inference graph with weights as initializers, a renamed serving input with optional baked-in
// scaling, outputs logits and probabilities, ONNX metadata, labels in assets/labels.json.
#include <cstdio>

#include "core/file_util.h"
#include "core/json.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::train {

StatusOr<graph::Model> ServingModel(const nn::Model& model, const ExportOptions& o) {
  if (!model.built())
    return FailedPreconditionError("export: model '", model.name(), "' has no weights yet; call Build(seed) or load a ",
                                   "checkpoint first");
  if (model.input_names().size() != 1)
    return InvalidArgumentError("export: the serving signature needs a model with one input, got ", model.input_names());
  STRATA_ASSIGN_OR_RETURN(graph::Model m, model.InferenceModel());
  graph::Graph& g = m.graph;
  const std::string original = model.input_names()[0];
  if (model.input_specs()[0].dtype != DType::kFloat32)
    return InvalidArgumentError("export: the model input must be float32, got ", DTypeName(model.input_specs()[0].dtype));
  // Rename the input (and scale it) by pointing every consumer at a new value.
  std::string feed = o.input_name;
  if (o.input_scale != 1.0f || o.input_name != original) {
    const std::string scaled = o.input_name + "/scaled";
    for (graph::Node& n : g.nodes)
      for (std::string& in : n.inputs)
        if (in == original) in = scaled;
    graph::Node pre;
    pre.opset = 17;
    pre.outputs = {scaled};
    if (o.input_scale != 1.0f) {
      pre.name = "serving/scale";
      pre.op_type = "Mul";
      g.initializers["serving/input_scale"] = Tensor::Scalar<float>(o.input_scale);
      pre.inputs = {o.input_name, "serving/input_scale"};
    } else {
      pre.name = "serving/input";
      pre.op_type = "Identity";
      pre.inputs = {o.input_name};
    }
    g.nodes.insert(g.nodes.begin(), std::move(pre));
    for (graph::ValueInfo& vi : g.inputs)
      if (vi.name == original) vi.name = o.input_name;
  }
  // Outputs: logits (renamed when needed) and probabilities.
  const graph::ValueInfo* logits = g.FindOutput(o.logits_output);
  if (logits == nullptr) return InvalidArgumentError("export: the model has no output '", o.logits_output, "'");
  graph::ValueInfo logits_vi = *logits;
  if (o.add_probabilities) {
    graph::Node sm;
    sm.name = "serving/probabilities";
    sm.op_type = "Softmax";
    sm.opset = 17;
    sm.attrs["axis"] = graph::Attribute::Int(-1);
    sm.inputs = {o.logits_output};
    sm.outputs = {"probabilities"};
    g.nodes.push_back(std::move(sm));
    graph::ValueInfo p = logits_vi;
    p.name = "probabilities";
    g.outputs.push_back(std::move(p));
  }
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  m.producer_name = "strata";
  m.doc = StrCat("strata export of model '", model.name(), "'");
  Json sig = Json::MakeObject();
  sig.Set("input", o.input_name);
  sig.Set("input_scale", static_cast<double>(o.input_scale));
  Json outs = Json::MakeArray();
  for (const graph::ValueInfo& vi : g.outputs) outs.Append(vi.name);
  sig.Set("outputs", outs);
  m.metadata.emplace_back("strata.signature", sig.Dump());
  m.metadata.emplace_back("strata.model_name", model.name());
  if (!o.labels.empty()) {
    Json labels = Json::MakeArray();
    for (const std::string& l : o.labels) labels.Append(l);
    m.metadata.emplace_back("labels", labels.Dump());
  }
  for (const auto& [k, v] : o.metadata) m.metadata.emplace_back(k, v);
  return m;
}

StatusOr<std::string> ExportModel(const nn::Model& model, const std::string& base_dir, const std::string& name,
                                  int64_t version, const ExportOptions& o) {
  if (name.empty() || name.find('/') != std::string::npos)
    return InvalidArgumentError("export: the model name must be a non-empty single path component, got '", name, "'");
  if (version <= 0) return InvalidArgumentError("export: versions are positive integers, got ", version);
  STRATA_ASSIGN_OR_RETURN(graph::Model m, ServingModel(model, o));
  STRATA_ASSIGN_OR_RETURN(std::string bytes, onnx::SerializeModel(m));
  Status checked = onnx::CheckModel(bytes);
  if (!checked.ok()) return checked.WithContext("export: onnx checker");
  const std::string dir = JoinPath(JoinPath(base_dir, name), std::to_string(version));
  STRATA_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "assets")));
  if (!o.labels.empty()) {
    Json labels = Json::MakeArray();
    for (const std::string& l : o.labels) labels.Append(l);
    STRATA_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "assets/labels.json"), labels.Dump(2) + "\n"));
  }
  // The architecture, for rebuilding the model (nn::ModelFromConfig); before model.onnx, whose arrival completes it.
  const std::string config_path = JoinPath(dir, "model_config.json");
  if (auto config = model.GetConfig(); config.ok()) {
    STRATA_RETURN_IF_ERROR(WriteFileAtomic(config_path, *config + "\n"));
  } else if (FileExists(config_path) && std::remove(config_path.c_str()) != 0) {
    return InternalError("export: cannot remove the previous export's '", config_path, "'");
  }
  const std::string path = JoinPath(dir, "model.onnx");
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
  return path;
}

}  // namespace strata::train
