#include "graph/interpreter.h"

#include <unordered_map>

namespace strata::graph {

DynamicKernelContext::DynamicKernelContext(const Node& node, const std::vector<const Tensor*>& inputs,
                                           Allocator* alloc, const ValueLookup* outer)
    : outputs_(node.outputs.size()), alloc_(alloc), outer_(outer) {
  node_ = &node;
  inputs_ = inputs.data();
  num_inputs_ = static_cast<int>(inputs.size());
  num_outputs_ = static_cast<int>(node.outputs.size());
}

StatusOr<Tensor*> DynamicKernelContext::Output(int i, DType dtype, const Shape& shape) {
  STRATA_CHECK(i >= 0 && i < num_outputs_, node_->Describe(), ": output index ", i, " out of range");
  auto t = Tensor::Create(dtype, shape, alloc_);
  if (!t.ok()) return Status(t.status()).WithContext(node_->Describe());
  outputs_[i] = std::move(t).value();
  return &outputs_[i];
}

void DynamicKernelContext::SetOutput(int i, Tensor t) {
  STRATA_CHECK(i >= 0 && i < num_outputs_, node_->Describe(), ": output index ", i, " out of range");
  outputs_[i] = std::move(t);
}

Status DynamicKernelContext::RunSubgraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                                         std::vector<Tensor>* outputs) {
  static const ValueLookup kNone = [](const std::string&) -> const Tensor* { return nullptr; };
  return InterpretGraph(g, feeds, outer_ ? *outer_ : kNone, alloc_, outputs);
}

Status RunNodeReference(const Node& node, const std::vector<const Tensor*>& inputs, const ValueLookup& outer,
                        Allocator* alloc, std::vector<Tensor>* outputs) {
  const ops::OpSchema* schema = ops::OpRegistry::Global().Find(node.domain, node.op_type);
  if (schema == nullptr)
    return UnimplementedError(node.Describe(), ": op type '", node.op_type, "'",
                              node.domain.empty() ? "" : StrCat(" of domain '", node.domain, "'"),
                              " is not supported");
  for (int i = 0; i < schema->min_inputs; ++i)
    if (i >= static_cast<int>(inputs.size()) || inputs[i] == nullptr)
      return InvalidArgumentError(node.Describe(), ": input ", i, " is required but missing");
  DynamicKernelContext ctx(node, inputs, alloc, &outer);
  Status s = schema->reference(ctx);
  if (!s.ok()) {
    // Kernels usually prefix their own errors with the node; add it when they did not.
    if (s.message().find(node.Describe()) == std::string::npos) s.WithContext(node.Describe());
    return s;
  }
  for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
    if (node.has_output(i) && !ctx.outputs()[i].defined())
      return InternalError(node.Describe(), ": the kernel did not produce output ", i, " ('", node.outputs[i], "')");
  }
  *outputs = std::move(ctx.outputs());
  return Status::OK();
}

Status InterpretGraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                      const ValueLookup& outer, Allocator* alloc, std::vector<Tensor>* outputs) {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& [name, t] : g.initializers) values[name] = t;
  for (const auto& [name, t] : feeds) values[name] = t;
  const ValueLookup lookup = [&](const std::string& name) -> const Tensor* {
    auto it = values.find(name);
    if (it != values.end()) return &it->second;
    return outer(name);
  };
  for (const Node& node : g.nodes) {
    std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      ins[i] = lookup(node.inputs[i]);
      if (ins[i] == nullptr)
        return FailedPreconditionError(node.Describe(), ": input '", node.inputs[i], "' has no value (not a graph ",
                                       "input, initializer or earlier output)");
    }
    std::vector<Tensor> outs;
    STRATA_RETURN_IF_ERROR(RunNodeReference(node, ins, lookup, alloc, &outs));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) values[node.outputs[i]] = std::move(outs[i]);
  }
  outputs->clear();
  for (const ValueInfo& out : g.outputs) {
    const Tensor* t = lookup(out.name);
    if (t == nullptr) return FailedPreconditionError("graph output '", out.name, "' is never produced");
    outputs->push_back(*t);
  }
  return Status::OK();
}

Status RunReference(const Model& model, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    std::vector<Tensor>* results) {
  for (const ValueInfo& in : model.graph.inputs) {
    bool found = false;
    for (const auto& f : feeds) found |= f.first == in.name;
    if (!found) return InvalidArgumentError("missing input '", in.name, "'");
  }
  const ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
  return InterpretGraph(model.graph, feeds, none, DefaultAllocator(), results);
}

}  // namespace strata::graph
