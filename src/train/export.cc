// ExportModel: the inference graph with weights as initializers and a serving signature: the classifier one (one
// renamed input with optional baked-in scaling, the model's outputs plus probabilities) or a general one (any inputs
// and outputs, renamed, scaled, chosen and ordered), ONNX metadata, labels in assets/labels.json, the model's config
// in model_config.json.
#include <algorithm>
#include <cstdio>
#include <set>

#include "core/file_util.h"
#include "core/json.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::train {
namespace {

struct ServedInput {
  std::string model_name, serving_name;
  float scale = 1.0f;
};
struct ServedOutput {
  std::string model_name, serving_name;
  bool softmax = false;  // the serving value is softmax(model value) over the last axis
};
struct SignaturePlan {
  std::vector<ServedInput> inputs;
  std::vector<ServedOutput> outputs;
};

Status CheckKnown(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  for (const std::string& k : known)
    if (k == name) return Status::OK();
  return InvalidArgumentError("export: ", what, " '", name, "' is not one of the model's: ", known);
}

// The classifier signature: one float32 input, every output, probabilities = softmax(logits).
StatusOr<SignaturePlan> ClassifierPlan(const nn::Model& model, const ExportOptions& o) {
  if (model.input_names().size() != 1)
    return InvalidArgumentError("export: the classifier signature needs a model with one input, got ",
                                model.input_names(), " (use ExportOptions::Signature::kGeneral for several)");
  if (model.input_specs()[0].dtype != DType::kFloat32)
    return InvalidArgumentError("export: the classifier signature's input must be float32, got ",
                                DTypeName(model.input_specs()[0].dtype), " (kGeneral serves any dtype)");
  SignaturePlan p;
  p.inputs.push_back({model.input_names()[0], o.input_name, o.input_scale});
  STRATA_RETURN_IF_ERROR(CheckKnown("logits output", o.logits_output, model.output_names()));
  for (const std::string& out : model.output_names()) p.outputs.push_back({out, out, false});
  if (o.add_probabilities) p.outputs.push_back({o.logits_output, "probabilities", true});
  return p;
}

StatusOr<SignaturePlan> GeneralPlan(const nn::Model& model, const ExportOptions& o) {
  const std::vector<std::string>& ins = model.input_names();
  const std::vector<std::string>& outs = model.output_names();
  for (const auto& [name, serving] : o.input_names) STRATA_RETURN_IF_ERROR(CheckKnown("input", name, ins));
  for (const auto& [name, scale] : o.input_scales) STRATA_RETURN_IF_ERROR(CheckKnown("input", name, ins));
  for (const std::string& name : o.outputs) STRATA_RETURN_IF_ERROR(CheckKnown("output", name, outs));
  for (const auto& [name, serving] : o.output_names) STRATA_RETURN_IF_ERROR(CheckKnown("output", name, outs));
  for (const auto& [name, serving] : o.softmax_outputs) STRATA_RETURN_IF_ERROR(CheckKnown("output", name, outs));
  SignaturePlan p;
  for (size_t i = 0; i < ins.size(); ++i) {
    ServedInput in{ins[i], ins[i], 1.0f};
    if (auto it = o.input_names.find(ins[i]); it != o.input_names.end()) in.serving_name = it->second;
    if (auto it = o.input_scales.find(ins[i]); it != o.input_scales.end()) {
      if (model.input_specs()[i].dtype != DType::kFloat32)
        return InvalidArgumentError("export: input '", ins[i], "' is ", DTypeName(model.input_specs()[i].dtype),
                                    "; only float32 inputs can be scaled");
      in.scale = it->second;
    }
    p.inputs.push_back(std::move(in));
  }
  for (const std::string& name : o.outputs.empty() ? outs : o.outputs) {
    auto it = o.output_names.find(name);
    p.outputs.push_back({name, it == o.output_names.end() ? name : it->second, false});
  }
  for (const std::string& name : o.outputs.empty() ? outs : o.outputs)
    if (auto it = o.softmax_outputs.find(name); it != o.softmax_outputs.end())
      p.outputs.push_back({name, it->second, true});
  for (const auto& [name, serving] : o.softmax_outputs)
    if (!o.outputs.empty() && std::find(o.outputs.begin(), o.outputs.end(), name) == o.outputs.end())
      p.outputs.push_back({name, serving, true});
  return p;
}

// Serving names are distinct, non-empty, and new ones do not shadow a value of the graph.
Status CheckServingNames(const graph::Graph& g, const SignaturePlan& p) {
  std::set<std::string> values;
  for (const graph::ValueInfo& vi : g.inputs) values.insert(vi.name);
  for (const auto& [name, t] : g.initializers) values.insert(name);
  for (const graph::Node& n : g.nodes) values.insert(n.outputs.begin(), n.outputs.end());
  std::set<std::string> seen;
  auto check = [&](const std::string& serving, const std::string& model_name, bool renamed) -> Status {
    if (serving.empty()) return InvalidArgumentError("export: an empty serving name (for '", model_name, "')");
    if (!seen.insert(serving).second)
      return InvalidArgumentError("export: the serving name '", serving, "' is given twice");
    if (renamed && values.count(serving))
      return InvalidArgumentError("export: the serving name '", serving, "' (for '", model_name,
                                  "') is already a value of the model's graph; choose another");
    return Status::OK();
  };
  for (const ServedInput& in : p.inputs)
    STRATA_RETURN_IF_ERROR(check(in.serving_name, in.model_name, in.serving_name != in.model_name));
  for (const ServedOutput& out : p.outputs)
    STRATA_RETURN_IF_ERROR(check(out.serving_name, out.model_name, out.softmax || out.serving_name != out.model_name));
  return Status::OK();
}

graph::Node ServingNode(std::string name, std::string op, std::vector<std::string> inputs, std::string output) {
  graph::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.opset = 17;
  n.inputs = std::move(inputs);
  n.outputs = {std::move(output)};
  return n;
}

// Renames (and scales) one input by pointing every consumer at a new value computed from the serving input.
void ServeInput(graph::Graph& g, const ServedInput& in) {
  if (in.scale == 1.0f && in.serving_name == in.model_name) return;
  const std::string fed = in.serving_name + "/served";
  for (graph::Node& n : g.nodes)
    for (std::string& v : n.inputs)
      if (v == in.model_name) v = fed;
  for (graph::ValueInfo& vi : g.outputs)
    if (vi.name == in.model_name) vi.name = fed;
  const std::string node = "serving/" + in.serving_name;
  if (in.scale != 1.0f) {
    const std::string k = in.serving_name + "/scale";
    g.initializers[k] = Tensor::Scalar<float>(in.scale);
    g.nodes.insert(g.nodes.begin(), ServingNode(node + "/scale", "Mul", {in.serving_name, k}, fed));
  } else {
    g.nodes.insert(g.nodes.begin(), ServingNode(node + "/input", "Identity", {in.serving_name}, fed));
  }
  for (graph::ValueInfo& vi : g.inputs)
    if (vi.name == in.model_name) vi.name = in.serving_name;
}

StatusOr<std::vector<graph::ValueInfo>> ServeOutputs(graph::Graph& g, const std::vector<ServedOutput>& outputs) {
  std::map<std::string, graph::ValueInfo> model_outputs;
  for (const graph::ValueInfo& vi : g.outputs) model_outputs[vi.name] = vi;
  std::vector<graph::ValueInfo> served;
  for (const ServedOutput& out : outputs) {
    auto it = model_outputs.find(out.model_name);
    if (it == model_outputs.end())
      return InternalError("export: the inference graph has no output '", out.model_name, "'");
    graph::ValueInfo vi = it->second;
    vi.name = out.serving_name;
    if (out.softmax) {
      graph::Node sm = ServingNode("serving/" + out.serving_name, "Softmax", {out.model_name}, out.serving_name);
      sm.attrs["axis"] = graph::Attribute::Int(-1);
      g.nodes.push_back(std::move(sm));
    } else if (out.serving_name != out.model_name) {
      g.nodes.push_back(ServingNode("serving/" + out.serving_name, "Identity", {out.model_name}, out.serving_name));
    }
    served.push_back(std::move(vi));
  }
  return served;
}

}  // namespace

StatusOr<graph::Model> ServingModel(const nn::Model& model, const ExportOptions& o) {
  if (!model.built())
    return FailedPreconditionError("export: model '", model.name(), "' has no weights yet; call Build(seed) or load a ",
                                   "checkpoint first");
  STRATA_ASSIGN_OR_RETURN(SignaturePlan plan, o.signature == ExportOptions::Signature::kClassifier
                                                  ? ClassifierPlan(model, o)
                                                  : GeneralPlan(model, o));
  STRATA_ASSIGN_OR_RETURN(graph::Model m, model.InferenceModel());
  graph::Graph& g = m.graph;
  STRATA_RETURN_IF_ERROR(CheckServingNames(g, plan));
  for (const ServedInput& in : plan.inputs) ServeInput(g, in);
  STRATA_ASSIGN_OR_RETURN(g.outputs, ServeOutputs(g, plan.outputs));
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  m.producer_name = "strata";
  m.doc = StrCat("strata export of model '", model.name(), "'");
  Json sig = Json::MakeObject();
  sig.Set("input", plan.inputs[0].serving_name);
  sig.Set("input_scale", static_cast<double>(plan.inputs[0].scale));
  Json inputs = Json::MakeArray();
  for (const ServedInput& in : plan.inputs) {
    Json i = Json::MakeObject();
    i.Set("name", in.serving_name);
    i.Set("model_input", in.model_name);
    i.Set("scale", static_cast<double>(in.scale));
    inputs.Append(i);
  }
  sig.Set("inputs", inputs);
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
