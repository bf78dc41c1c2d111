#include "graph/autodiff.h"

#include <unordered_map>
#include <unordered_set>

#include "graph/infer.h"
#include "ops/op.h"

namespace strata::graph {
namespace {

class Builder {
 public:
  Builder(Graph* g, const GradientOptions& options) : g_(g), options_(options) {}

  std::vector<std::string> Emit(std::string_view op_type, std::vector<std::string> inputs, AttributeMap attrs,
                                int num_outputs, std::string_view domain) {
    Node n;
    n.op_type = std::string(op_type);
    n.domain = std::string(domain);
    n.opset = domain.empty() ? options_.onnx_opset : 1;
    n.name = StrCat(options_.prefix, "/", scope_, "/", op_type, "_", counter_++);
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(StrCat(n.name, ":", i));
    std::vector<std::string> outs = n.outputs;
    emitted_.push_back(std::move(n));
    return outs;
  }

  std::string Constant(Tensor value) {
    std::string name = StrCat(options_.prefix, "/", scope_, "/const_", counter_++);
    g_->initializers[name] = std::move(value);
    return name;
  }

  // A fresh value name in the current scope.
  std::string NewName(std::string_view what) {
    return StrCat(options_.prefix, "/", scope_, "/", what, "_", counter_++);
  }
  void set_scope(std::string s) { scope_ = std::move(s); }
  std::vector<Node>& emitted() { return emitted_; }

 private:
  Graph* g_;
  const GradientOptions& options_;
  std::string scope_;
  int counter_ = 0;
  std::vector<Node> emitted_;
};

class AutodiffGradContext final : public ops::GradContext {
 public:
  AutodiffGradContext(Node& node, Node* live, Builder& b, const InferredGraph& types,
                      std::vector<std::string> out_grads, std::vector<bool> needs)
      : node_(node),
        live_(live),
        b_(b),
        types_(types),
        out_grads_(std::move(out_grads)),
        needs_(std::move(needs)),
        in_grads_(node.inputs.size()) {}

  const Node& node() const override { return node_; }
  const ops::ValueType& input_type(int i) const override { return TypeOf(node_.inputs[i]); }
  const ops::ValueType& output_type(int i) const override { return TypeOf(node_.outputs[i]); }
  std::string output_grad(int i) const override {
    return i < static_cast<int>(out_grads_.size()) ? out_grads_[i] : std::string();
  }
  bool needs_input_grad(int i) const override { return i < static_cast<int>(needs_.size()) && needs_[i]; }
  void SetInputGrad(int i, std::string name) override { in_grads_[i] = std::move(name); }
  std::vector<std::string> Emit(std::string_view op_type, std::vector<std::string> inputs, AttributeMap attrs,
                                int num_outputs, std::string_view domain) override {
    return b_.Emit(op_type, std::move(inputs), std::move(attrs), num_outputs, domain);
  }
  std::string Constant(Tensor value) override { return b_.Constant(std::move(value)); }
  std::string ForwardOutput(int i) override {
    if (i >= static_cast<int>(node_.outputs.size())) {
      node_.outputs.resize(i + 1);
      live_->outputs.resize(i + 1);
    }
    if (node_.outputs[i].empty()) {
      node_.outputs[i] = b_.NewName(StrCat("output", i));
      live_->outputs[i] = node_.outputs[i];
    }
    return node_.outputs[i];
  }
  const std::vector<std::string>& input_grads() const { return in_grads_; }

 private:
  const ops::ValueType& TypeOf(const std::string& name) const {
    static const ops::ValueType kUnknown;
    auto it = types_.types.find(name);
    return it == types_.types.end() ? kUnknown : it->second;
  }
  Node& node_;
  Node* live_;  // the node in the graph, which ForwardOutput names unused outputs of
  Builder& b_;
  const InferredGraph& types_;
  std::vector<std::string> out_grads_;
  std::vector<bool> needs_;
  std::vector<std::string> in_grads_;
};

Tensor OneLike(DType t) {
  switch (t) {
    case DType::kFloat64: return Tensor::Scalar<double>(1.0);
    case DType::kFloat16: return Tensor::Scalar<Float16>(Float16(1.0f));
    case DType::kBFloat16: return Tensor::Scalar<BFloat16>(BFloat16(1.0f));
    default: return Tensor::Scalar<float>(1.0f);
  }
}

}  // namespace

Status BuildGradients(Graph* g, const std::string& loss, const std::vector<std::string>& wrt,
                      const GradientOptions& options, std::map<std::string, std::string>* grads) {
  STRATA_RETURN_IF_ERROR(TopologicalSort(g));
  // Types, with the values the gradient functions may need at build time (axes, pads, shapes computed from
  // constants) folded. The values differentiated with respect to are variables, not constants, even when they are
  // initializers: they are given to inference as inputs, so nothing that depends on them is folded.
  InferredGraph types;
  {
    Graph view;
    view.nodes = g->nodes;
    view.initializers = g->initializers;
    std::vector<ValueInfo> inputs = g->inputs;
    for (const std::string& w : wrt) {
      auto it = view.initializers.find(w);
      if (it == view.initializers.end()) continue;
      inputs.push_back({w, it->second.dtype(), PartialShape::Of(it->second.shape())});
      view.initializers.erase(it);
    }
    InferOptions infer_options;
    infer_options.max_fold_bytes = size_t{1} << 20;
    STRATA_RETURN_IF_ERROR(InferGraph(view, inputs, infer_options, &types));
  }
  auto loss_type = types.types.find(loss);
  if (loss_type == types.types.end()) return InvalidArgumentError("loss value '", loss, "' is not in the graph");
  if (!IsFloatingPoint(loss_type->second.dtype))
    return InvalidArgumentError("loss '", loss, "' must be floating point, got ", DTypeName(loss_type->second.dtype));
  const auto is_float = [&](const std::string& v) {
    auto it = types.types.find(v);
    return it != types.types.end() && IsFloatingPoint(it->second.dtype);
  };

  // Values that depend on some wrt value (forward) and that the loss depends on (backward).
  std::unordered_set<std::string> forward(wrt.begin(), wrt.end());
  for (const std::string& w : wrt) {
    if (!types.types.count(w)) return InvalidArgumentError("cannot differentiate with respect to '", w, "': not in the graph");
    if (!is_float(w)) return InvalidArgumentError("cannot differentiate with respect to '", w, "': not floating point");
  }
  for (const Node& n : g->nodes) {
    bool any = false;
    for (const auto& in : n.inputs) any |= !in.empty() && forward.count(in) > 0;
    if (any)
      for (const auto& out : n.outputs)
        if (!out.empty() && is_float(out)) forward.insert(out);
  }
  std::unordered_set<std::string> backward{loss};
  for (size_t i = g->nodes.size(); i-- > 0;) {
    const Node& n = g->nodes[i];
    bool any = false;
    for (const auto& out : n.outputs) any |= !out.empty() && backward.count(out) > 0;
    if (any)
      for (const auto& in : n.inputs)
        if (!in.empty()) backward.insert(in);
  }
  auto needed = [&](const std::string& v) { return !v.empty() && forward.count(v) && backward.count(v); };

  Builder b(g, options);
  // Gradient contributions per value; summed when the value's producer is processed (or at the end).
  std::unordered_map<std::string, std::vector<std::string>> contributions;
  b.set_scope("seed");
  contributions[loss].push_back(b.Constant(OneLike(loss_type->second.dtype)));
  auto total = [&](const std::string& v) -> std::string {
    auto it = contributions.find(v);
    if (it == contributions.end() || it->second.empty()) return "";
    if (it->second.size() == 1) return it->second[0];
    std::string sum = b.Emit("Sum", it->second, {}, 1, "")[0];
    it->second = {sum};
    return sum;
  };

  const ops::OpRegistry& registry = ops::OpRegistry::Global();
  const size_t forward_nodes = g->nodes.size();
  for (size_t i = forward_nodes; i-- > 0;) {
    Node node = g->nodes[i];  // a copy: g->nodes grows only at the end, but keep the node stable regardless
    std::vector<bool> needs(node.inputs.size(), false);
    bool any_need = false;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      needs[k] = needed(node.inputs[k]);
      any_need |= needs[k];
    }
    if (!any_need) continue;
    std::vector<std::string> out_grads;
    bool any_grad = false;
    for (const auto& out : node.outputs) {
      out_grads.push_back(out.empty() ? "" : total(out));
      any_grad |= !out_grads.back().empty();
    }
    if (!any_grad) continue;
    const ops::OpSchema* schema = registry.Find(node.domain, node.op_type);
    if (schema == nullptr || schema->grad == nullptr)
      return UnimplementedError(node.Describe(), ": no gradient is defined for ", node.op_type,
                                schema && !schema->no_grad_reason.empty() ? StrCat(" (", schema->no_grad_reason, ")") : "");
    b.set_scope(node.name.empty() ? StrCat("node", i) : node.name);
    AutodiffGradContext ctx(node, &g->nodes[i], b, types, out_grads, needs);
    Status s = schema->grad(ctx);
    if (!s.ok()) return s.WithContext(StrCat("gradient of ", node.Describe()));
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (needs[k] && !ctx.input_grads()[k].empty()) contributions[node.inputs[k]].push_back(ctx.input_grads()[k]);
  }

  grads->clear();
  b.set_scope("result");
  for (const std::string& w : wrt) {
    std::string grad = total(w);
    if (grad.empty()) {
      // The loss does not depend on w: its gradient is zero.
      std::string shape = b.Emit("Shape", {w}, {}, 1, "")[0];
      Tensor zero = OneLike(types.types.at(w).dtype).Clone();
      std::memset(zero.raw_data(), 0, zero.byte_size());
      AttributeMap attrs;
      attrs["value"] = Attribute::TensorValue(zero.Reshaped(Shape{1}).value());
      grad = b.Emit("ConstantOfShape", {shape}, std::move(attrs), 1, "")[0];
    }
    (*grads)[w] = grad;
  }
  for (Node& n : b.emitted()) g->nodes.push_back(std::move(n));
  return TopologicalSort(g);
}

}  // namespace strata::graph
