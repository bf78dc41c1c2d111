#include "graph/infer.h"

#include "graph/interpreter.h"

namespace strata::graph {
namespace {

bool IsShapeQuery(const Node& n) { return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size"); }

bool HasSubgraph(const Node& n) {
  for (const auto& [name, a] : n.attrs)
    if (a.type() == Attribute::Type::kGraph || a.type() == Attribute::Type::kGraphs) return true;
  return false;
}

// Checks inferred outputs against what the node produced when it was folded; a mismatch is an inference bug.
void RecordFolded(const Node& node, std::vector<Tensor>& outs, InferredGraph* out) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    Tensor& t = out->constants[node.outputs[i]];
    t = std::move(outs[i]);
    ops::ValueType vt;
    vt.dtype = t.dtype();
    vt.shape = PartialShape::Of(t.shape());
    vt.value = &t;
    out->types[node.outputs[i]] = vt;
  }
}

}  // namespace

Status InferGraph(const Graph& g, const std::vector<ValueInfo>& inputs, const InferOptions& options,
                  InferredGraph* out) {
  const ops::OpRegistry& registry = ops::OpRegistry::Global();
  out->folded.assign(g.nodes.size(), false);
  for (const auto& [name, t] : g.initializers) {
    Tensor& c = out->constants[name];
    c = t;
    out->types[name] = ops::ValueType{t.dtype(), PartialShape::Of(t.shape()), &c};
  }
  for (const ValueInfo& in : inputs) out->types[in.name] = ops::ValueType{in.dtype, in.shape, nullptr};
  const ValueLookup lookup = [&](const std::string& name) -> const Tensor* {
    auto it = out->constants.find(name);
    return it == out->constants.end() ? nullptr : &it->second;
  };

  static const ops::ValueType kUnknown;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& node = g.nodes[ni];
    const ops::OpSchema* schema = registry.Find(node.domain, node.op_type);
    if (schema == nullptr)
      return UnimplementedError(node.Describe(), ": op type '", node.op_type, "'",
                                node.domain.empty() ? "" : StrCat(" of domain '", node.domain, "'"),
                                " is not supported");
    std::vector<const ops::ValueType*> in_types(node.inputs.size(), nullptr);
    bool all_const = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      auto it = out->types.find(node.inputs[i]);
      if (it == out->types.end()) {
        // A value from an enclosing scope (subgraphs): type unknown here.
        in_types[i] = &kUnknown;
        all_const = false;
        continue;
      }
      in_types[i] = &it->second;
      all_const &= it->second.has_value();
    }

    // Fold: all inputs known (or a shape query on a fully known shape), deterministic, no subgraph.
    const bool shape_query = IsShapeQuery(node) && in_types.size() == 1 && in_types[0] != nullptr &&
                             in_types[0]->shape.IsFullyKnown();
    if (options.fold_constants && schema->deterministic && !HasSubgraph(node) && (all_const || shape_query)) {
      std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
      Tensor shape_stub;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i].empty()) continue;
        if (shape_query && !in_types[i]->has_value()) {
          // Shape/Size only read the shape: a zero-stride stand-in avoids allocating the real tensor.
          static float dummy = 0;
          shape_stub = Tensor::Wrap(in_types[i]->dtype, in_types[i]->shape.ToShape(), &dummy);
          ins[i] = &shape_stub;
        } else {
          ins[i] = in_types[i]->value;
        }
      }
      std::vector<Tensor> outs;
      Status s = RunNodeReference(node, ins, lookup, DefaultAllocator(), &outs);
      if (!s.ok()) return s;
      size_t bytes = 0;
      for (const Tensor& t : outs) bytes += t.defined() ? t.byte_size() : 0;
      if (bytes <= options.max_fold_bytes) {
        RecordFolded(node, outs, out);
        out->folded[ni] = true;
        continue;
      }
    }

    ops::InferContext ictx(node, in_types, static_cast<int>(node.outputs.size()));
    Status s = schema->infer(ictx);
    if (!s.ok()) {
      if (s.message().find(node.Describe()) == std::string::npos) s.WithContext(node.Describe());
      return s;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      ops::ValueType vt = ictx.output(static_cast<int>(i));
      vt.value = nullptr;
      out->types[node.outputs[i]] = std::move(vt);
    }
  }
  return Status::OK();
}

}  // namespace strata::graph
