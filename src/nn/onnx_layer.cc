// An imported ONNX graph as a layer: its float initializers become the layer's weights (trainable, except the
// running statistics of BatchNormalization, which stays in inference mode), its nodes are re-emitted into the
// model's graph up to a chosen tensor, so that the trainer differentiates through them and the export writes them.
#include <set>

#include "nn/internal.h"
#include "strata/onnx.h"

namespace strata::nn {
namespace {

class OnnxGraphLayer final : public Layer {
 public:
  OnnxGraphLayer(std::shared_ptr<const graph::Model> model, std::string output, std::vector<const graph::Node*> nodes,
                 bool channels_first_input, std::string name)
      : Layer("OnnxGraph", std::move(name)),
        model_(std::move(model)),
        output_(std::move(output)),
        nodes_(std::move(nodes)),
        channels_first_input_(channels_first_input) {}

  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1) return InvalidArgumentError("an ONNX graph layer takes one input");
    const graph::Graph& g = model_->graph;
    std::set<std::string> stats;  // BatchNormalization's mean and var: not trained
    for (const graph::Node* n : nodes_)
      if (n->op_type == "BatchNormalization" && n->domain.empty())
        for (int i : {3, 4})
          if (n->has_input(i)) stats.insert(n->inputs[i]);
    std::set<std::string> declared;
    for (const graph::Node* n : nodes_)
      for (const std::string& in : n->inputs) {
        auto it = g.initializers.find(in);
        if (it == g.initializers.end() || it->second.dtype() != DType::kFloat32 || !declared.insert(in).second)
          continue;
        const auto dims = it->second.shape().dims();
        AddWeight(in, std::vector<int64_t>(dims.begin(), dims.end()), Initializer::Zeros(), !stats.count(in));
      }
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    const graph::Graph& g = model_->graph;
    std::map<std::string, std::string> values;
    STRATA_ASSIGN_OR_RETURN(values[g.inputs[0].name],
                            channels_first_input_ ? ctx.ChannelsFirst(in[0]) : ctx.ChannelsLast(in[0]));
    std::set<std::string> weights;
    for (const WeightSpec& w : this->weights()) weights.insert(w.name.substr(name().size() + 1));
    for (const graph::Node* n : nodes_) {
      std::vector<std::string> ins;
      for (const std::string& x : n->inputs) {
        if (x.empty()) {
          ins.push_back("");
          continue;
        }
        auto v = values.find(x);
        if (v != values.end()) {
          ins.push_back(v->second);
        } else if (weights.count(x)) {
          ins.push_back(ctx.Weight(x));
        } else if (auto it = g.initializers.find(x); it != g.initializers.end()) {
          values[x] = ctx.Constant(it->second);
          ins.push_back(values[x]);
        } else {
          return InvalidArgumentError(n->Describe(), ": input '", x, "' is neither computed before it nor an "
                                      "initializer (only the graph's first input is fed)");
        }
      }
      auto outs = ctx.Emit(n->op_type, std::move(ins), n->attrs, static_cast<int>(n->outputs.size()), n->domain);
      for (size_t i = 0; i < n->outputs.size(); ++i)
        if (!n->outputs[i].empty()) values[n->outputs[i]] = outs[i];
    }
    auto it = values.find(output_);
    if (it == values.end()) return InternalError("ONNX graph layer: '", output_, "' was not computed");
    STRATA_ASSIGN_OR_RETURN(TensorSpec s, ctx.PhysicalSpec(it->second));
    return std::vector<Value>{{it->second, channels_first_input_ && s.rank() > 2}};
  }

 private:
  std::shared_ptr<const graph::Model> model_;
  std::string output_;
  std::vector<const graph::Node*> nodes_;
  bool channels_first_input_;
};

}  // namespace

StatusOr<std::unique_ptr<Model>> OnnxTransferModel(const std::string& path, const OnnxTransferOptions& options) {
  STRATA_ASSIGN_OR_RETURN(graph::Model loaded, onnx::LoadModel(path));
  auto m = std::make_shared<const graph::Model>(std::move(loaded));
  const graph::Graph& g = m->graph;
  const auto opset = m->opset_imports.find("");
  if (opset != m->opset_imports.end() && opset->second < 13)
    return InvalidArgumentError("'", path, "' imports ONNX opset ", opset->second,
                                "; fine-tuning re-emits the graph at opset 17 and needs opset 13 or later (export with "
                                "opset_version=13 or later)");
  if (g.inputs.size() != 1)
    return InvalidArgumentError("'", path, "' has ", g.inputs.size(), " graph inputs; fine-tuning takes graphs with "
                                "one input (the images)");
  const graph::ValueInfo& gin = g.inputs[0];
  if (options.input_shape.size() != 3)
    return InvalidArgumentError("the input shape must be (H, W, C), got ", options.input_shape);
  const int64_t c = options.input_shape[2];
  bool channels_first = false;
  if (gin.shape.rank_known && gin.shape.dims.size() == 4) {
    const Dim& d1 = gin.shape.dims[1];
    const Dim& d3 = gin.shape.dims[3];
    channels_first = !(d3.known() && d3.value == c && !(d1.known() && d1.value == c));
    const Dim& ch = channels_first ? d1 : d3;
    if (ch.known() && ch.value != c)
      return InvalidArgumentError("'", path, "' takes ", ch.value, " channels (input '", gin.name, "' ",
                                  gin.shape.ToString(), "), the input shape has ", c);
  }
  // The nodes that compute `head_at` (by default the first graph output), in graph order.
  const std::string target = options.head_at.empty() ? (g.outputs.empty() ? "" : g.outputs[0].name) : options.head_at;
  std::map<std::string, const graph::Node*> producer;
  for (const graph::Node& n : g.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer[o] = &n;
  if (!producer.count(target)) {
    std::vector<std::string> some;
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend() && some.size() < 8; ++it)
      if (!it->outputs.empty()) some.push_back(StrCat("'", it->outputs[0], "' (", it->op_type, ")"));
    return NotFoundError("'", path, "' computes no tensor named '", target, "'; the last ones are ",
                         StrJoin(some, ", "), " (strata inspect lists them all)");
  }
  std::set<const graph::Node*> needed;
  std::vector<std::string> stack{target};
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    auto p = producer.find(v);
    if (p == producer.end() || !needed.insert(p->second).second) continue;
    for (const auto& [k, a] : p->second->attrs)
      if (a.type() == graph::Attribute::Type::kGraph || a.type() == graph::Attribute::Type::kGraphs)
        return UnimplementedError(p->second->Describe(), " has a subgraph; fine-tuning graphs with control flow is "
                                  "not built");
    for (const std::string& in : p->second->inputs)
      if (!in.empty()) stack.push_back(in);
  }
  std::vector<const graph::Node*> nodes;
  for (const graph::Node& n : g.nodes)
    if (needed.count(&n)) nodes.push_back(&n);

  auto in = Input(options.input_shape, "input_image");
  auto layer = std::make_shared<OnnxGraphLayer>(m, target, std::move(nodes), channels_first, options.layer_name);
  KerasTensor x = LayerRef(layer)(in);
  x = Flatten()(x);  // the head takes a vector per example (a no-op reshape for [N, features])
  auto logits = Dense(options.num_classes, {.name = "head"})(x);
  auto model = std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{"logits", logits}},
                                       options.model_name);
  STRATA_RETURN_IF_ERROR(model->Build(options.seed));
  std::map<std::string, Tensor> values;
  for (const WeightSpec& w : layer->weights()) values[w.name] = g.initializers.at(w.name.substr(layer->name().size() + 1));
  STRATA_RETURN_IF_ERROR(model->SetWeights(values));
  return model;
}

}  // namespace strata::nn
