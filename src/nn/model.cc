// Model: collects the layer calls reachable from the outputs, builds the layers from inferred specs, initialises
// the weights and emits graphs (inference, training forward, export).
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <unordered_map>

#include "core/random.h"
#include "graph/infer.h"
#include "nn/internal.h"
#include "nn/model_impl.h"

namespace strata::nn {

using internal::CallNode;

namespace {

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace

// ---- Emitter: the CallContext that appends nodes to a graph ----

Emitter::Emitter(graph::Graph* g, bool training, std::string seed_input)
    : g_(g), training_(training), seed_input_(std::move(seed_input)) {}

void Emitter::BeginLayer(Layer* layer) {
  layer_ = layer;
  layer_name_ = layer->name();
}

std::string Emitter::Weight(std::string_view local) {
  const std::string full = StrCat(layer_name_, "/", local);
  for (const WeightSpec& w : layer_->weights())
    if (w.name == full) return full;
  STRATA_CHECK(false, "layer '", layer_name_, "' asked for undeclared weight '", local, "'");
  return full;
}

std::vector<std::string> Emitter::Emit(std::string_view op, std::vector<std::string> inputs, graph::AttributeMap attrs,
                                       int num_outputs, std::string_view domain) {
  graph::Node n;
  n.op_type = std::string(op);
  n.domain = std::string(domain);
  n.opset = domain.empty() ? kOnnxOpset : 1;
  n.name = StrCat(layer_name_, "/", op, counter_ == 0 ? "" : StrCat("_", counter_));
  ++counter_;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(num_outputs == 1 ? n.name : StrCat(n.name, ":", i));
  std::vector<std::string> outs = n.outputs;
  g_->nodes.push_back(std::move(n));
  return outs;
}

std::string Emitter::Constant(Tensor value) {
  std::string name = StrCat(layer_name_, "/const", counter_ == 0 ? "" : StrCat("_", counter_));
  ++counter_;
  g_->initializers[name] = std::move(value);
  return name;
}

StatusOr<TensorSpec> Emitter::PhysicalSpec(const std::string& value) {
  if (inferred_nodes_ != g_->nodes.size() || inferred_inits_ != g_->initializers.size() ||
      inferred_inputs_ != g_->inputs.size()) {
    graph::InferOptions opts;
    opts.fold_constants = true;
    inferred_ = graph::InferredGraph();
    STRATA_RETURN_IF_ERROR(graph::InferGraph(*g_, g_->inputs, opts, &inferred_));
    inferred_nodes_ = g_->nodes.size();
    inferred_inits_ = g_->initializers.size();
    inferred_inputs_ = g_->inputs.size();
  }
  auto it = inferred_.types.find(value);
  if (it == inferred_.types.end()) return InternalError("no type inferred for '", value, "'");
  TensorSpec s;
  s.dtype = it->second.dtype;
  if (!it->second.shape.rank_known) return InvalidArgumentError("the rank of '", value, "' is unknown");
  for (const Dim& d : it->second.shape.dims) s.shape.push_back(d.known() ? d.value : -1);
  return s;
}

void Emitter::UpdateState(std::string_view local, std::string new_value) {
  state_updates_[StrCat(layer_name_, "/", local)] = std::move(new_value);
}

std::string Emitter::StepSeed() {
  if (!uses_seed_) {
    uses_seed_ = true;
    graph::ValueInfo vi;
    vi.name = seed_input_;
    vi.dtype = DType::kInt64;
    vi.shape = PartialShape::Of(std::vector<Dim>{});
    g_->inputs.push_back(std::move(vi));
  }
  return seed_input_;
}

// ---- Model ----

Model::Model(std::vector<KerasTensor> inputs, std::vector<ModelOutput> outputs, std::string name)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->inputs = std::move(inputs);
  impl_->outputs = std::move(outputs);
}

Model::Model(KerasTensor input, KerasTensor output, std::string name)
    : Model(std::vector<KerasTensor>{input}, std::vector<ModelOutput>{{"output", output}}, std::move(name)) {}

Model::Model(Model&&) noexcept = default;
Model::~Model() = default;

bool Model::built() const { return impl_->built; }
const std::string& Model::name() const { return impl_->name; }
void Model::AddLoss(KerasTensor scalar, double weight) { impl_->aux.emplace_back(std::move(scalar), weight); }
const std::vector<std::string>& Model::input_names() const { return impl_->input_names; }
const std::vector<TensorSpec>& Model::input_specs() const { return impl_->input_specs; }
const std::vector<std::string>& Model::output_names() const { return impl_->output_names; }
std::vector<TensorSpec> Model::output_specs() const {
  std::vector<TensorSpec> out;
  if (!impl_->built) return out;
  for (const ModelOutput& o : impl_->outputs) {
    auto it = impl_->out_specs.find(o.tensor.node().get());
    const bool known = it != impl_->out_specs.end() && o.tensor.index() < static_cast<int>(it->second.size());
    out.push_back(known ? it->second[o.tensor.index()] : TensorSpec{});
  }
  return out;
}
const std::vector<WeightSpec>& Model::weight_specs() const {
  // Layers may change their trainable flag at any time: refresh the copies.
  for (size_t i = 0; i < impl_->weight_owners.size(); ++i) {
    const auto& [layer, j] = impl_->weight_owners[i];
    impl_->weight_specs[i].trainable = layer->weights()[j].trainable;
  }
  return impl_->weight_specs;
}

StatusOr<int> Model::LayerIndex(std::string_view name_or_index) const {
  const int n = static_cast<int>(impl_->layers.size());
  if (!impl_->built) return FailedPreconditionError("model '", impl_->name, "' is not built: call Build() first");
  const std::string s(name_or_index);
  size_t digits = 0;
  while (digits < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits])) || (digits == 0 && s[0] == '-')))
    ++digits;
  if (!s.empty() && digits == s.size() && s != "-") {
    if (s.size() > 9) return OutOfRangeError("layer index ", s, " is past the last layer of model '", impl_->name,
                                             "', which has ", n, " layers (indices 0..", n - 1, ")");
    int i = std::stoi(s);
    if (i < -n || i >= n)
      return OutOfRangeError("layer index ", i, " is past the last layer of model '", impl_->name, "', which has ", n,
                             " layers (indices 0..", n - 1, ", or -", n, "..-1 from the end)");
    return i < 0 ? i + n : i;
  }
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    if (impl_->layers[i]->name() == s) return i;
    names.push_back(impl_->layers[i]->name());
  }
  // The closest name by edit distance, to suggest.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t prev = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cur = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
        prev = cur;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : names)
    if (size_t d = distance(s, c); d < best_d) best_d = d, best = c;
  return NotFoundError("model '", impl_->name, "' has no layer named '", s, "'", best.empty() ? "" : StrCat(
                       " (did you mean '", best, "'?)"), "; give a layer name or an index 0..", n - 1);
}
const std::map<std::string, Tensor>& Model::weights() const { return impl_->weights; }

std::vector<Layer*> Model::layers() const {
  std::vector<Layer*> out;
  for (const auto& l : impl_->layers) out.push_back(l.get());
  return out;
}

StatusOr<Tensor> Model::GetWeight(const std::string& name) const {
  auto it = impl_->weights.find(name);
  if (it == impl_->weights.end()) return NotFoundError("model '", impl_->name, "' has no weight '", name, "'");
  return it->second;
}

Status Model::SetWeights(const std::map<std::string, Tensor>& values) {
  std::vector<std::string> problems;
  for (const auto& [name, t] : values) {
    auto it = impl_->weights.find(name);
    if (it == impl_->weights.end()) {
      problems.push_back(StrCat("unexpected weight '", name, "'"));
    } else if (t.dtype() != it->second.dtype() || t.shape() != it->second.shape()) {
      problems.push_back(StrCat("'", name, "' is ", it->second.TypeString(), ", got ", t.TypeString()));
    }
  }
  if (!problems.empty())
    return InvalidArgumentError("cannot set weights of model '", impl_->name, "': ", StrJoin(problems, "; "));
  for (const auto& [name, t] : values) impl_->weights[name] = t;
  return Status::OK();
}

int64_t Model::CountParams(bool trainable_only) const {
  int64_t n = 0;
  for (const WeightSpec& w : weight_specs())
    if (!trainable_only || w.trainable) n += w.shape.NumElements();
  return n;
}

Status Model::Impl::Collect() {
  std::set<const CallNode*> seen;
  std::function<Status(const std::shared_ptr<CallNode>&)> visit = [&](const std::shared_ptr<CallNode>& n) -> Status {
    if (!n) return InvalidArgumentError("model '", name, "': an output is an undefined tensor");
    if (seen.count(n.get())) return Status::OK();
    seen.insert(n.get());
    if (!n->error.ok()) return n->error;
    for (const KerasTensor& in : n->inputs) STRATA_RETURN_IF_ERROR(visit(in.node()));
    order.push_back(n);
    return Status::OK();
  };
  for (const ModelOutput& o : outputs) STRATA_RETURN_IF_ERROR(visit(o.tensor.node()));
  for (const auto& [t, w] : aux) STRATA_RETURN_IF_ERROR(visit(t.node()));
  std::set<const CallNode*> declared;
  for (const KerasTensor& in : inputs) {
    if (!in.defined() || in.node()->layer)
      return InvalidArgumentError("model '", name, "': inputs must come from nn::Input()");
    declared.insert(in.node().get());
    input_names.push_back(in.node()->input_name);
    input_specs.push_back(in.node()->input_spec);
  }
  for (const auto& n : order)
    if (!n->layer && !declared.count(n.get()))
      return InvalidArgumentError("model '", name, "': the outputs depend on input '", n->input_name,
                                  "', which is not among the model's inputs (graph disconnected)");
  std::set<std::string> out_names;
  for (const ModelOutput& o : outputs) {
    if (o.name.empty() || !out_names.insert(o.name).second)
      return InvalidArgumentError("model '", name, "': output names must be unique and non-empty, got '", o.name, "'");
    output_names.push_back(o.name);
  }
  // Name the layers like Keras: the snake_case class name, then _1, _2, ...
  std::set<Layer*> distinct;
  std::set<std::string> used(input_names.begin(), input_names.end());
  for (const auto& n : order) {
    if (!n->layer || !distinct.insert(n->layer.get()).second) continue;
    layers.push_back(n->layer);
    if (!n->layer->name().empty() && !used.insert(n->layer->name()).second)
      return InvalidArgumentError("model '", name, "': two layers are named '", n->layer->name(), "'");
  }
  std::map<std::string, int> counters;
  for (const auto& l : layers) {
    if (!l->name().empty()) continue;
    const std::string base = internal::SnakeCase(l->type());
    std::string candidate;
    do {
      const int k = counters[base]++;
      candidate = k == 0 ? base : StrCat(base, "_", k);
    } while (used.count(candidate));
    used.insert(candidate);
    l->set_name(candidate);
  }
  return Status::OK();
}

Status Model::Impl::Emit(Emitter& em, graph::Graph& g, bool declare_weights,
                         std::unordered_map<const CallNode*, std::vector<Value>>* values) {
  for (size_t i = 0; i < input_names.size(); ++i) {
    graph::ValueInfo vi;
    vi.name = input_names[i];
    vi.dtype = input_specs[i].dtype;
    std::vector<Dim> dims{Dim::Symbol("batch")};
    for (size_t d = 1; d < input_specs[i].shape.size(); ++d) dims.push_back(Dim(input_specs[i].shape[d]));
    vi.shape = PartialShape::Of(std::move(dims));
    g.inputs.push_back(std::move(vi));
  }
  for (const auto& n : order) {
    if (!n->layer) {
      (*values)[n.get()] = {Value{n->input_name, false}};
      continue;
    }
    Layer* layer = n->layer.get();
    const std::string where = StrCat("layer '", layer->name(), "' (", layer->type(), ")");
    std::vector<Value> ins;
    for (const KerasTensor& t : n->inputs) {
      const auto& vs = (*values)[t.node().get()];
      if (t.index() >= static_cast<int>(vs.size())) return InternalError(where, ": missing input value");
      ins.push_back(vs[t.index()]);
    }
    em.BeginLayer(layer);
    if (!layer->built()) {
      std::vector<TensorSpec> specs;
      for (const Value& v : ins) {
        auto s = em.SpecOf(v);
        if (!s.ok()) return Status(s.status()).WithContext(where);
        specs.push_back(*s);
      }
      Status s = layer->Build(specs);
      if (!s.ok()) return s.WithContext(where);
      layer->set_built();
    }
    if (declare_weights && !declared_layers.count(layer)) {
      declared_layers.insert(layer);
      for (const WeightSpec& w : layer->weights()) {
        for (const WeightSpec& o : weight_specs)
          if (o.name == w.name) return InvalidArgumentError(where, ": weight '", w.name, "' is declared twice");
        weight_specs.push_back(w);
        weight_owners.emplace_back(layer, static_cast<size_t>(&w - layer->weights().data()));
      }
    }
    // Weights are typed graph inputs while emitting (the caller turns them into initializers when asked).
    for (const WeightSpec& w : layer->weights()) {
      if (g.FindInput(w.name)) continue;
      graph::ValueInfo vi;
      vi.name = w.name;
      vi.dtype = w.dtype;
      vi.shape = PartialShape::Of(w.shape);
      g.inputs.push_back(std::move(vi));
    }
    auto outs = layer->Call(em, ins);
    if (!outs.ok()) return Status(outs.status()).WithContext(where);
    if (static_cast<int>(outs->size()) != n->num_outputs)
      return InternalError(where, ": returned ", outs->size(), " outputs, expected ", n->num_outputs);
    (*values)[n.get()] = *outs;
  }
  return Status::OK();
}

Status Model::Build(uint64_t seed) {
  if (impl_->built) return Status::OK();
  Status s = impl_->Collect();
  if (!s.ok()) return s.WithContext(StrCat("building model '", impl_->name, "'"));
  graph::Graph g;
  Emitter em(&g, false, "strata/step_seed");
  std::unordered_map<const CallNode*, std::vector<Value>> values;
  s = impl_->Emit(em, g, true, &values);
  if (!s.ok()) return s.WithContext(StrCat("building model '", impl_->name, "'"));
  for (const auto& n : impl_->order) {
    std::vector<TensorSpec> specs;
    for (const Value& v : values[n.get()]) {
      auto spec = em.SpecOf(v);
      specs.push_back(spec.ok() ? *spec : TensorSpec{});
    }
    impl_->out_specs[n.get()] = std::move(specs);
  }
  for (const WeightSpec& w : impl_->weight_specs) {
    Rng rng(seed ^ Fnv1a(w.name), Fnv1a(w.name, 0x84222325cbf29ce4ULL) | 1);
    impl_->weights[w.name] = w.init.Make(w.shape, rng);
  }
  impl_->built = true;
  return Status::OK();
}

StatusOr<ForwardGraph> Model::BuildGraph(const GraphOptions& options) const {
  if (!impl_->built) return FailedPreconditionError("model '", impl_->name, "' is not built: call Build() first");
  ForwardGraph fg;
  graph::Graph& g = fg.graph;
  g.name = impl_->name;
  Emitter em(&g, options.training, options.seed_input);
  std::unordered_map<const CallNode*, std::vector<Value>> values;
  STRATA_RETURN_IF_ERROR(impl_->Emit(em, g, false, &values));
  // Outputs: channels-last, renamed to the model's output names.
  for (const ModelOutput& o : impl_->outputs) {
    const Value& v = values[o.tensor.node().get()][o.tensor.index()];
    STRATA_ASSIGN_OR_RETURN(std::string x, em.ChannelsLast(v));
    graph::Node n;
    n.name = StrCat("output/", o.name);
    n.op_type = "Identity";
    n.opset = kOnnxOpset;
    n.inputs = {x};
    n.outputs = {o.name};
    g.nodes.push_back(std::move(n));
    STRATA_ASSIGN_OR_RETURN(TensorSpec s, em.PhysicalSpec(o.name));
    graph::ValueInfo vi;
    vi.name = o.name;
    vi.dtype = s.dtype;
    std::vector<Dim> dims;
    for (size_t d = 0; d < s.shape.size(); ++d) dims.push_back(d == 0 ? Dim::Symbol("batch") : Dim(s.shape[d]));
    vi.shape = PartialShape::Of(std::move(dims));
    g.outputs.push_back(std::move(vi));
  }
  for (const auto& [t, w] : impl_->aux) fg.aux_losses.emplace_back(values[t.node().get()][t.index()].name, w);
  fg.state_updates = em.state_updates();
  fg.uses_step_seed = em.uses_seed();
  if (options.weights_as_inputs) {
    for (const WeightSpec& w : impl_->weight_specs) fg.weight_inputs.push_back(w.name);
  } else {
    std::vector<graph::ValueInfo> kept;
    for (graph::ValueInfo& vi : g.inputs) {
      auto it = impl_->weights.find(vi.name);
      if (it != impl_->weights.end()) g.initializers[vi.name] = it->second;
      else kept.push_back(std::move(vi));
    }
    g.inputs = std::move(kept);
  }
  return fg;
}

StatusOr<graph::Model> Model::InferenceModel() const {
  GraphOptions o;
  o.training = false;
  o.weights_as_inputs = false;
  STRATA_ASSIGN_OR_RETURN(ForwardGraph fg, BuildGraph(o));
  graph::Model m;
  m.graph = std::move(fg.graph);
  m.opset_imports[""] = kOnnxOpset;
  return m;
}

std::unique_ptr<Model> Sequential(std::vector<int64_t> input_shape, std::vector<LayerRef> layers, std::string name,
                                  std::string input_name, std::string output_name) {
  KerasTensor in = Input(std::move(input_shape), std::move(input_name));
  KerasTensor x = in;
  for (const LayerRef& l : layers) x = l(x);
  return std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{output_name, x}},
                                 std::move(name));
}

}  // namespace strata::nn
