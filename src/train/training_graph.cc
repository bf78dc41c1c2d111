// The training graph: the model's training-mode forward pass, the losses, graph autodiff with respect to every
// trainable weight, and the optimizer's update ops. Weights, slots, lr, iterations and the step seed are inputs;
// the loss, the outputs the metrics read and every updated value are outputs.
#include <algorithm>

#include "graph/autodiff.h"
#include "train/trainer_impl.h"

namespace strata::train {
namespace {

graph::Node MakeNode(std::string op, std::string name, std::vector<std::string> inputs) {
  graph::Node n;
  n.op_type = std::move(op);
  n.opset = 17;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {std::move(name)};
  return n;
}

graph::ValueInfo Scalar(const std::string& name, DType t) {
  graph::ValueInfo vi;
  vi.name = name;
  vi.dtype = t;
  vi.shape = PartialShape::Of(std::vector<Dim>{});
  return vi;
}

void AddOutput(graph::Graph& g, const std::string& name, DType t = DType::kUndefined) {
  graph::ValueInfo vi;
  vi.name = name;
  vi.dtype = t;
  g.outputs.push_back(std::move(vi));
}

// Appends label inputs and the losses; returns the total loss value.
std::string AddLosses(graph::Graph& g, const std::vector<OutputSpec>& outputs,
                      const std::map<std::string, DType>& label_dtypes,
                      const std::vector<std::pair<std::string, double>>& aux, bool add_outputs) {
  std::vector<std::string> terms;
  for (const OutputSpec& o : outputs) {
    if (!o.loss) continue;
    graph::ValueInfo vi;
    vi.name = o.label_input();
    vi.dtype = label_dtypes.at(o.name);
    g.inputs.push_back(vi);
    const std::string l = o.loss->Emit(&g, o.name, o.label_input(), o.loss_output());
    if (add_outputs && outputs.size() > 1) AddOutput(g, l);
    std::string term = l;
    if (o.weight != 1.0) {
      const std::string w = o.loss_output() + "/weight";
      g.initializers[w] = Tensor::Scalar<float>(static_cast<float>(o.weight));
      g.nodes.push_back(MakeNode("Mul", o.loss_output() + "/weighted", {l, w}));
      term = g.nodes.back().outputs[0];
    }
    terms.push_back(term);
  }
  for (size_t i = 0; i < aux.size(); ++i) {
    std::string term = aux[i].first;
    if (aux[i].second != 1.0) {
      const std::string w = StrCat("loss/aux_", i, "/weight");
      g.initializers[w] = Tensor::Scalar<float>(static_cast<float>(aux[i].second));
      g.nodes.push_back(MakeNode("Mul", StrCat("loss/aux_", i), {term, w}));
      term = g.nodes.back().outputs[0];
    }
    terms.push_back(term);
  }
  // Chained Adds (their gradient is defined; Sum's is not yet).
  std::string total = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    const std::string name = i + 1 == terms.size() ? std::string("loss/total") : StrCat("loss/partial_", i);
    g.nodes.push_back(MakeNode("Add", name, {total, terms[i]}));
    total = name;
  }
  g.nodes.push_back(MakeNode("Identity", kLossOutput, {total}));
  return kLossOutput;
}

Status Finish(CompiledGraph* cg, graph::Graph graph, const TrainerOptions& options) {
  cg->model = std::make_shared<graph::Model>();
  cg->model->graph = std::move(graph);
  cg->model->opset_imports[""] = 17;
  cg->model->opset_imports["strata"] = 1;
  for (size_t i = 0; i < cg->model->graph.outputs.size(); ++i) {
    cg->fetches.push_back(cg->model->graph.outputs[i].name);
    cg->fetch_index[cg->model->graph.outputs[i].name] = static_cast<int>(i);
  }
  graph::SessionOptions so;
  so.intra_op_threads = options.intra_op_threads;
  so.memory_limit_bytes = options.memory_limit_bytes;
  so.optimize = options.optimize;
  so.conv_algorithm = options.conv_algorithm;
  so.check_numerics = options.check_numerics;
  // A training run sees few shapes (the batch, the last partial batch, evaluation), each plan large: bound the cache
  // by count only, so that an epoch's partial batch does not evict the full batch's plan.
  so.plan_cache_max_bytes = 0;
  STRATA_ASSIGN_OR_RETURN(cg->session, graph::Session::Create(cg->model, so));
  return Status::OK();
}

// ReluGrad(MaxPoolGrad(dY, Y), Y) -> MaxPoolGrad(dY, Y, relu_input=1): the pool's gradient already lands only on
// window maxima, so checking the maximum's sign there replaces a whole pass over the Relu output (bitwise the same).
void FuseReluIntoMaxPoolGrad(graph::Graph& g) {
  std::map<std::string, int> uses;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) ++uses[in];
    for (const std::string& out : g.nodes[i].outputs) producer[out] = i;
  }
  for (const graph::ValueInfo& o : g.outputs) ++uses[o.name];
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& relu = g.nodes[i];
    if (relu.domain != "strata" || relu.op_type != "ReluGrad" || relu.inputs.size() != 2) continue;
    auto it = producer.find(relu.inputs[0]);
    if (it == producer.end()) continue;
    graph::Node& pool = g.nodes[it->second];
    if (pool.domain != "strata" || pool.op_type != "MaxPoolGrad" || pool.inputs.size() != 2 ||
        pool.inputs[1] != relu.inputs[1] || uses[relu.inputs[0]] != 1 || pool.HasAttr("relu_input"))
      continue;
    pool.attrs["relu_input"] = graph::Attribute::Int(1);
    pool.outputs[0] = relu.outputs[0];
    drop[i] = true;
  }
  std::vector<graph::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

// The class count of each model output whose last dimension is static (what sparse labels index).
void RecordClasses(CompiledGraph* cg, const std::vector<graph::ValueInfo>& model_outputs) {
  for (const graph::ValueInfo& vi : model_outputs)
    if (vi.shape.rank() >= 1 && vi.shape.dims.back().known()) cg->num_classes[vi.name] = vi.shape.dims.back().value;
}

}  // namespace

int64_t StepSeed(uint64_t seed, int64_t iterations) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(iterations) + 0x632BE59BD9B4E019ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<int64_t>((x ^ (x >> 31)) >> 1);
}

namespace {

// The forward pass in training mode, the losses and the gradients of every trainable weight (weight -> gradient
// value, in `grads`); the graph's outputs are the loss and the model outputs a metric reads.
StatusOr<nn::ForwardGraph> BuildForwardBackward(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                                const std::map<std::string, DType>& label_dtypes, CompiledGraph* cg,
                                                std::map<std::string, std::string>* grads) {
  nn::GraphOptions go;
  go.training = true;
  go.weights_as_inputs = true;
  go.seed_input = kSeedInput;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg, model.BuildGraph(go));
  cg->uses_seed = fg.uses_step_seed;
  cg->with_labels = true;
  graph::Graph& g = fg.graph;
  // The model outputs stay outputs only when a metric reads them.
  std::vector<graph::ValueInfo> model_outputs = std::move(g.outputs);
  RecordClasses(cg, model_outputs);
  g.outputs.clear();
  AddLosses(g, outputs, label_dtypes, fg.aux_losses, true);
  AddOutput(g, kLossOutput);
  for (const OutputSpec& o : outputs)
    if (!o.metrics.empty())
      for (const auto& vi : model_outputs)
        if (vi.name == o.name) g.outputs.push_back(vi);
  std::vector<std::string> wrt;
  for (const nn::WeightSpec& w : model.weight_specs())
    if (w.trainable) wrt.push_back(w.name);
  graph::GradientOptions gopts;
  STRATA_RETURN_IF_ERROR(graph::BuildGradients(&g, kLossOutput, wrt, gopts, grads));
  FuseReluIntoMaxPoolGrad(g);
  return fg;
}

// The optimizer's slots of a variable as graph inputs.
optim::VariableGrad SlotInputs(graph::Graph& g, const nn::WeightSpec& w, const std::string& grad,
                               const optim::Optimizer& optimizer) {
  optim::VariableGrad v{w.name, grad, {}};
  for (const std::string& slot : optimizer.SlotNames()) {
    const std::string key = StrCat("optimizer/", w.name, "/", slot);
    graph::ValueInfo vi;
    vi.name = key;
    vi.dtype = w.dtype;
    vi.shape = PartialShape::Of(w.shape);
    g.inputs.push_back(std::move(vi));
    v.slots[slot] = key;
  }
  return v;
}

// The optimizer's update ops and their outputs (new weights and slots).
Status AddUpdates(graph::Graph& g, const optim::Optimizer& optimizer, const std::vector<optim::VariableGrad>& vars,
                  CompiledGraph* cg) {
  std::vector<optim::VariableUpdate> updates;
  STRATA_RETURN_IF_ERROR(optimizer.EmitUpdates(&g, vars, kLrInput, kIterationsInput, &updates, nullptr));
  for (const optim::VariableUpdate& u : updates) {
    cg->weight_outputs[u.variable] = u.new_value;
    AddOutput(g, u.new_value);
    for (const auto& [slot, value] : u.new_slots) {
      cg->slot_outputs[StrCat("optimizer/", u.variable, "/", slot)] = value;
      AddOutput(g, value);
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<CompiledGraph> BuildTrainGraph(const nn::Model& model, const optim::Optimizer& optimizer,
                                        const std::vector<OutputSpec>& outputs,
                                        const std::map<std::string, DType>& label_dtypes,
                                        const TrainerOptions& options) {
  CompiledGraph cg;
  std::map<std::string, std::string> grads;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg, BuildForwardBackward(model, outputs, label_dtypes, &cg, &grads));
  graph::Graph& g = fg.graph;
  g.inputs.push_back(Scalar(kLrInput, DType::kFloat32));
  g.inputs.push_back(Scalar(kIterationsInput, DType::kInt64));
  std::vector<optim::VariableGrad> vars;
  for (const nn::WeightSpec& w : model.weight_specs())
    if (w.trainable) vars.push_back(SlotInputs(g, w, grads.at(w.name), optimizer));
  STRATA_RETURN_IF_ERROR(AddUpdates(g, optimizer, vars, &cg));
  for (const auto& [weight, value] : fg.state_updates) {
    cg.weight_outputs[weight] = value;
    AddOutput(g, value);
  }
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  STRATA_RETURN_IF_ERROR(Finish(&cg, std::move(g), options));
  return cg;
}

StatusOr<CompiledGraph> BuildGradientGraph(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                           const std::map<std::string, DType>& label_dtypes,
                                           const TrainerOptions& options) {
  CompiledGraph cg;
  std::map<std::string, std::string> grads;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg, BuildForwardBackward(model, outputs, label_dtypes, &cg, &grads));
  graph::Graph& g = fg.graph;
  // Reverse layer order: the last layers' gradients are the first ones backward produces.
  const std::vector<nn::WeightSpec>& specs = model.weight_specs();
  for (auto it = specs.rbegin(); it != specs.rend(); ++it) {
    if (!it->trainable) continue;
    const std::string out = grads.at(it->name);
    cg.grad_outputs.emplace_back(it->name, out);
    if (std::none_of(g.outputs.begin(), g.outputs.end(), [&](const graph::ValueInfo& vi) { return vi.name == out; }))
      AddOutput(g, out);
  }
  for (const auto& [weight, value] : fg.state_updates) {
    cg.weight_outputs[weight] = value;
    AddOutput(g, value);
  }
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  STRATA_RETURN_IF_ERROR(Finish(&cg, std::move(g), options));
  return cg;
}

StatusOr<CompiledGraph> BuildApplyGraph(const nn::Model& model, const optim::Optimizer& optimizer,
                                        const TrainerOptions& options) {
  CompiledGraph cg;
  graph::Graph g;
  g.name = "apply_gradients";
  std::vector<optim::VariableGrad> vars;
  for (const nn::WeightSpec& w : model.weight_specs()) {
    if (!w.trainable) continue;
    for (const std::string& name : {w.name, GradInput(w.name)}) {
      graph::ValueInfo vi;
      vi.name = name;
      vi.dtype = w.dtype;
      vi.shape = PartialShape::Of(w.shape);
      g.inputs.push_back(std::move(vi));
    }
    vars.push_back(SlotInputs(g, w, GradInput(w.name), optimizer));
  }
  g.inputs.push_back(Scalar(kLrInput, DType::kFloat32));
  g.inputs.push_back(Scalar(kIterationsInput, DType::kInt64));
  STRATA_RETURN_IF_ERROR(AddUpdates(g, optimizer, vars, &cg));
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  STRATA_RETURN_IF_ERROR(Finish(&cg, std::move(g), options));
  return cg;
}

StatusOr<CompiledGraph> BuildEvalGraph(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                       const std::map<std::string, DType>& label_dtypes, bool with_loss,
                                       const TrainerOptions& options) {
  nn::GraphOptions go;
  go.training = false;
  go.weights_as_inputs = true;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg, model.BuildGraph(go));
  CompiledGraph cg;
  cg.with_labels = with_loss;
  graph::Graph& g = fg.graph;
  RecordClasses(&cg, g.outputs);
  if (with_loss) {
    AddLosses(g, outputs, label_dtypes, fg.aux_losses, true);
    AddOutput(g, kLossOutput);
  }
  STRATA_RETURN_IF_ERROR(Finish(&cg, std::move(g), options));
  return cg;
}

}  // namespace strata::train
