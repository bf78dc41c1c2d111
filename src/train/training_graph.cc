// The training graph: the model's training-mode forward pass, the losses, graph autodiff with respect to every
// trainable weight, and the optimizer's update ops. Weights, slots, lr, iterations and the step seed are inputs;
// the loss, the outputs the metrics read and every updated value are outputs.
#include <algorithm>
#include <set>

#include "graph/autodiff.h"
#include "ops/compute_dtype.h"
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

// Appends label inputs and the losses; the total loss is the value kLossOutput.
Status AddLosses(graph::Graph& g, const std::vector<OutputSpec>& outputs,
                 const std::map<std::string, DType>& label_dtypes,
                 const std::vector<std::pair<std::string, double>>& aux, bool add_outputs) {
  std::vector<std::string> terms;
  for (const OutputSpec& o : outputs) {
    if (!o.loss) continue;
    graph::ValueInfo vi;
    vi.name = o.label_input();
    vi.dtype = label_dtypes.at(o.name);
    g.inputs.push_back(vi);
    StatusOr<std::string> emitted = o.loss->Emit(&g, o.name, o.label_input(), o.loss_output());
    if (!emitted.ok()) return Status(emitted.status()).WithContext(StrCat("the loss of output '", o.name, "'"));
    const std::string l = *emitted;
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
  return Status::OK();
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
  so.profiler = options.profiler;
  for (const graph::SignatureEntry& e : options.input_signature)  // the model inputs this graph reads
    if (cg->model->graph.FindInput(e.name) != nullptr) so.input_signature.push_back(e);
  // A training run sees few shapes (the batch, the last partial batch, evaluation), each plan large: bound the cache
  // by count only, so that an epoch's partial batch does not evict the full batch's plan.
  so.plan_cache_max_bytes = 0;
  STRATA_ASSIGN_OR_RETURN(cg->session, graph::Session::Create(cg->model, so));
  return Status::OK();
}

// For the fusions below: how many times each value is read (graph outputs count), and which node makes it.
struct ValueUses {
  std::map<std::string, int> uses;
  std::map<std::string, size_t> producer;
};
ValueUses IndexValueUses(const graph::Graph& g) {
  ValueUses v;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) ++v.uses[in];
    for (const std::string& out : g.nodes[i].outputs) v.producer[out] = i;
  }
  for (const graph::ValueInfo& o : g.outputs) ++v.uses[o.name];
  return v;
}

// Removes the nodes marked in `drop` (indexed like g.nodes), keeping the others' order.
void DropNodes(graph::Graph& g, const std::vector<bool>& drop) {
  std::vector<graph::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

// ReluGrad(MaxPoolGrad(dY, Y), Y) -> MaxPoolGrad(dY, Y, relu_input=1): the pool's gradient already lands only on
// window maxima, so checking the maximum's sign there replaces a whole pass over the Relu output (bitwise the same).
void FuseReluIntoMaxPoolGrad(graph::Graph& g) {
  auto [uses, producer] = IndexValueUses(g);
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
  DropNodes(g, drop);
}

// Mul(x, Sigmoid(x)) -> strata.Swish(x) where the Sigmoid's output has no other reader (Keras's swish / silu
// activation, which layers write as the pair): autodiff then writes one strata.SwishGrad(dY, x) for it instead of two
// Muls, a SigmoidGrad and a Sum, and the forward pass makes one pass over x instead of two. Same values up to
// rounding (the reference computes x * sigmoid(x) exactly as before). The Mul keeps its name and output.
void FuseSwish(graph::Graph& g) {
  auto [uses, producer] = IndexValueUses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  for (graph::Node& mul : g.nodes) {
    if (!mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    for (int k = 0; k < 2; ++k) {
      auto it = producer.find(mul.inputs[k]);
      if (it == producer.end() || drop[it->second]) continue;
      const graph::Node& sig = g.nodes[it->second];
      if (!sig.domain.empty() || sig.op_type != "Sigmoid" || sig.inputs.size() != 1 || sig.outputs.size() != 1 ||
          sig.inputs[0] != mul.inputs[1 - k] || uses[sig.outputs[0]] != 1)
        continue;
      drop[it->second] = true;
      mul.op_type = "Swish";
      mul.domain = std::string(graph::kStrataDomain);
      mul.opset = 1;
      mul.inputs = {sig.inputs[0]};
      break;
    }
  }
  DropNodes(g, drop);
}

// The class count of each model output whose last dimension is static (what sparse labels index).
void RecordClasses(CompiledGraph* cg, const std::vector<graph::ValueInfo>& model_outputs) {
  for (const graph::ValueInfo& vi : model_outputs)
    if (vi.shape.rank() >= 1 && vi.shape.dims.back().known()) cg->num_classes[vi.name] = vi.shape.dims.back().value;
}

// ---- dtype policies ----

// The ops whose arithmetic a dtype policy sets: the forward ops layers emit, and the gradient ops autodiff emits for
// them (MatMul and Gemm gradients are MatMul and Gemm; ConvTranspose's data gradient is a Conv).
bool PolicyOp(const graph::Node& n) {
  if (n.domain.empty()) return n.op_type == "Conv" || n.op_type == "ConvTranspose" || n.op_type == "MatMul" ||
                               n.op_type == "Gemm";
  return n.domain == "strata" && (n.op_type == "ConvBackwardData" || n.op_type == "ConvBackwardFilter");
}

// The float inputs a float16 policy rounds: the two operands (X/W, dY/W, dY/X, A/B), not a bias or a shape.
constexpr int kRoundedInputs = 2;

// Marks the policy ops of every layer whose policy (its own, else `global`) is mixed with ops::kComputeDtypeAttr
// (bfloat16 or float16). Layer nodes are named "<layer>/<op>...".
void MarkForward(graph::Graph& g, const nn::Model& model, nn::DTypePolicy global) {
  std::map<std::string, nn::DTypePolicy> policy;
  for (const nn::Layer* l : model.layers()) policy[l->name()] = l->dtype_policy().value_or(global);
  for (graph::Node& n : g.nodes) {
    if (!PolicyOp(n)) continue;
    auto it = policy.find(n.name.substr(0, n.name.find('/')));
    const nn::DTypePolicy p = it == policy.end() ? global : it->second;
    if (p == nn::DTypePolicy::kMixedBFloat16) n.attrs[ops::kComputeDtypeAttr] = graph::Attribute::String(ops::kComputeBFloat16);
    if (p == nn::DTypePolicy::kMixedFloat16) n.attrs[ops::kComputeDtypeAttr] = graph::Attribute::String(ops::kComputeFloat16);
  }
}

// Gives the gradient ops of a marked forward node its mark. Autodiff names them "<prefix>/<forward node>/<op>_<n>".
void MarkGradients(graph::Graph& g, const std::string& prefix) {
  std::map<std::string, graph::Attribute> marks;
  for (const graph::Node& n : g.nodes)
    if (const graph::Attribute* a = n.FindAttr(ops::kComputeDtypeAttr)) marks.emplace(n.name, *a);
  if (marks.empty()) return;
  const std::string head = prefix + "/";
  for (graph::Node& n : g.nodes) {
    if (!PolicyOp(n) || n.name.rfind(head, 0) != 0 || n.HasAttr(ops::kComputeDtypeAttr)) continue;
    const size_t last = n.name.rfind('/');
    if (last <= head.size()) continue;
    auto it = marks.find(n.name.substr(head.size(), last - head.size()));
    if (it != marks.end()) n.attrs[ops::kComputeDtypeAttr] = it->second;
  }
}

// Appends Cast(float16) -> Cast(float32) nodes that round `in` to float16 into the value `out`.
void AppendFloat16Round(const std::string& in, const std::string& out, std::vector<graph::Node>* nodes) {
  graph::Node down = MakeNode("Cast", out + "/fp16", {in});
  down.attrs["to"] = graph::Attribute::Int(static_cast<int64_t>(DType::kFloat16));
  graph::Node up = MakeNode("Cast", out + "/fp16_round", {down.outputs[0]});
  up.outputs = {out};
  up.attrs["to"] = graph::Attribute::Int(static_cast<int64_t>(DType::kFloat32));
  nodes->push_back(std::move(down));
  nodes->push_back(std::move(up));
}

// mixed_float16 without float16 arithmetic: the two operands and the outputs of every float16-marked op are rounded
// to float16 and back (Cast pairs, shared per operand value), so they hold float16 values as Keras's float16 tensors
// would (a magnitude over 65504 becomes infinity, tiny ones go subnormal or zero); the op computes in float32 between.
void RoundFloat16Operands(graph::Graph& g) {
  std::map<std::string, std::string> rounded;
  std::vector<graph::Node> casts;
  for (graph::Node& n : g.nodes) {
    const graph::Attribute* a = n.FindAttr(ops::kComputeDtypeAttr);
    if (a == nullptr || a->s() != ops::kComputeFloat16) continue;
    for (int i = 0; i < kRoundedInputs && i < static_cast<int>(n.inputs.size()); ++i) {
      std::string& in = n.inputs[i];
      if (in.empty()) continue;
      auto it = rounded.find(in);
      if (it == rounded.end()) {
        const std::string name = StrCat("fp16/", in);
        AppendFloat16Round(in, name, &casts);
        it = rounded.emplace(in, name).first;
      }
      in = it->second;
    }
    for (std::string& out : n.outputs) {
      if (out.empty()) continue;
      const std::string wide = out + "/fp32";
      AppendFloat16Round(wide, out, &casts);
      out = wide;
    }
  }
  for (graph::Node& c : casts) g.nodes.push_back(std::move(c));
}

// ---- loss scaling ----

// Multiplies the loss by kLossScaleInput (what autodiff differentiates), then checks and unscales the gradients:
// `grads` become the unscaled ones; kGradsFiniteOutput is the sum over every scaled gradient of (g * 0): 0 when they
// are all finite, NaN when one holds an infinity or a NaN (Keras's check_finite, on the scaled gradients as there).
std::string ScaleLoss(graph::Graph& g) {
  g.inputs.push_back(Scalar(kLossScaleInput, DType::kFloat32));
  g.nodes.push_back(MakeNode("Mul", "loss/scaled", {kLossOutput, kLossScaleInput}));
  return g.nodes.back().outputs[0];
}

void UnscaleGradients(graph::Graph& g, std::map<std::string, std::string>* grads) {
  const std::string zero = "loss_scale/zero";
  g.initializers[zero] = Tensor::Scalar<float>(0.0f);
  std::string total;
  int i = 0;
  for (auto& [w, grad] : *grads) {
    const std::string base = StrCat("loss_scale/", w);
    g.nodes.push_back(MakeNode("Mul", base + "/times_zero", {grad, zero}));
    g.nodes.push_back(MakeNode("ReduceSum", base + "/check", {g.nodes.back().outputs[0]}));
    g.nodes.back().attrs["keepdims"] = graph::Attribute::Int(0);
    const std::string check = g.nodes.back().outputs[0];
    if (total.empty()) {
      total = check;
    } else {
      g.nodes.push_back(MakeNode("Add", StrCat("loss_scale/check_sum_", i++), {total, check}));
      total = g.nodes.back().outputs[0];
    }
    g.nodes.push_back(MakeNode("Div", base + "/unscaled", {grad, kLossScaleInput}));
    grad = g.nodes.back().outputs[0];
  }
  g.nodes.push_back(MakeNode("Identity", kGradsFiniteOutput, {total}));
  AddOutput(g, kGradsFiniteOutput, DType::kFloat32);
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
// value, in `grads`); the graph's outputs are the loss and the model outputs a metric reads. With workers > 1 the
// gradients are those of loss / workers (the backward seed is 1 / workers instead of 1: no op added to the backward
// pass), so that their sum over the workers is the gradient of the mean loss.
StatusOr<nn::ForwardGraph> BuildForwardBackward(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                                const std::map<std::string, DType>& label_dtypes,
                                                const TrainerOptions& options, bool loss_scaling, int workers,
                                                CompiledGraph* cg, std::map<std::string, std::string>* grads) {
  nn::GraphOptions go;
  go.training = true;
  go.weights_as_inputs = true;
  go.seed_input = kSeedInput;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg, model.BuildGraph(go));
  cg->uses_seed = fg.uses_step_seed;
  cg->with_labels = true;
  graph::Graph& g = fg.graph;
  MarkForward(g, model, options.mixed_precision);
  FuseSwish(g);
  // The model outputs stay outputs only when a metric reads them.
  std::vector<graph::ValueInfo> model_outputs = std::move(g.outputs);
  RecordClasses(cg, model_outputs);
  g.outputs.clear();
  STRATA_RETURN_IF_ERROR(AddLosses(g, outputs, label_dtypes, fg.aux_losses, true));
  AddOutput(g, kLossOutput);
  for (const OutputSpec& o : outputs)
    if (!o.metrics.empty())
      for (const auto& vi : model_outputs)
        if (vi.name == o.name) g.outputs.push_back(vi);
  std::vector<std::string> wrt;
  for (const nn::WeightSpec& w : model.weight_specs())
    if (w.trainable) wrt.push_back(w.name);
  graph::GradientOptions gopts;
  std::string differentiated = loss_scaling ? ScaleLoss(g) : std::string(kLossOutput);
  if (workers > 1) {
    g.initializers[kPerWorkerScale] = Tensor::Scalar<float>(1.0f / static_cast<float>(workers));
    g.nodes.push_back(MakeNode("Mul", "loss/per_worker", {differentiated, kPerWorkerScale}));
    differentiated = g.nodes.back().outputs[0];
  }
  STRATA_RETURN_IF_ERROR(graph::BuildGradients(&g, differentiated, wrt, gopts, grads));
  cg->loss_scaling = loss_scaling;
  if (loss_scaling) UnscaleGradients(g, grads);
  MarkGradients(g, gopts.prefix);
  RoundFloat16Operands(g);
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
                                        const TrainerOptions& options, bool loss_scaling) {
  CompiledGraph cg;
  std::map<std::string, std::string> grads;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg,
                          BuildForwardBackward(model, outputs, label_dtypes, options, loss_scaling, 1, &cg, &grads));
  graph::Graph& g = fg.graph;
  g.inputs.push_back(Scalar(kLrInput, DType::kFloat32));
  g.inputs.push_back(Scalar(kIterationsInput, DType::kInt64));
  std::vector<optim::VariableGrad> vars;
  for (const nn::WeightSpec& w : model.weight_specs())
    if (w.trainable) vars.push_back(SlotInputs(g, w, grads.at(w.name), optimizer));
  STRATA_RETURN_IF_ERROR(AddUpdates(g, optimizer, vars, &cg));
  for (const auto& [weight, value] : fg.state_updates) {
    cg.weight_outputs[weight] = value;
    cg.state_outputs[weight] = value;
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
  // Multi-worker steps do not scale the loss (the trainer refuses loss scaling with a collective); they divide it by
  // the number of workers, and the batch-norm statistics too, so that the trainer's sum over the workers is the mean.
  const int workers = options.collective != nullptr ? options.collective->size() : 1;
  STRATA_ASSIGN_OR_RETURN(nn::ForwardGraph fg,
                          BuildForwardBackward(model, outputs, label_dtypes, options, false, workers, &cg, &grads));
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
    std::string out = value;
    if (workers > 1) {
      g.nodes.push_back(MakeNode("Mul", StrCat(value, "/per_worker"), {value, kPerWorkerScale}));
      out = g.nodes.back().outputs[0];
    }
    cg.weight_outputs[weight] = out;
    AddOutput(g, out);
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
  MarkForward(g, model, options.mixed_precision);
  RoundFloat16Operands(g);
  RecordClasses(&cg, g.outputs);
  if (with_loss) {
    STRATA_RETURN_IF_ERROR(AddLosses(g, outputs, label_dtypes, fg.aux_losses, true));
    AddOutput(g, kLossOutput);
  }
  STRATA_RETURN_IF_ERROR(Finish(&cg, std::move(g), options));
  return cg;
}

}  // namespace strata::train
