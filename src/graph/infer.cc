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

// The inferred values of the graphs enclosing a subgraph, innermost first.
struct Scope {
  const InferredGraph* graph = nullptr;
  const Scope* parent = nullptr;
};

const ops::ValueType* FindInScopes(const Scope* scope, const std::string& name) {
  for (; scope != nullptr; scope = scope->parent) {
    auto it = scope->graph->types.find(name);
    if (it != scope->graph->types.end()) return &it->second;
  }
  return nullptr;
}

// `known` refined with what `more` adds: its dtype when defined, its shape when its rank is known (dimensions it
// leaves unknown keep `known`'s values when the ranks agree).
void Refine(ops::ValueType* known, const ops::ValueType& more) {
  if (more.dtype != DType::kUndefined) known->dtype = more.dtype;
  if (!more.shape.rank_known) return;
  if (!known->shape.rank_known || known->shape.rank() != more.shape.rank()) {
    known->shape = more.shape;
    return;
  }
  for (size_t i = 0; i < more.shape.dims.size(); ++i)
    if (more.shape.dims[i].known() || !more.shape.dims[i].symbol.empty()) known->shape.dims[i] = more.shape.dims[i];
}

Status InferScope(const Graph& g, const std::vector<ValueInfo>& inputs, const InferOptions& options,
                  const Scope* parent, int depth, InferredGraph* out);

// Infers a subgraph of a node of the graph `scope` describes: its inputs get the given types (refining the declared
// ones), and its outputs the inferred types (refining the declared ones).
Status InferBody(const Graph& body, const std::vector<ops::ValueType>& ins, const InferOptions& options,
                 const Scope& scope, int depth, std::vector<ops::ValueType>* outs) {
  if (depth > 32) return InvalidArgumentError("subgraphs are nested more than 32 deep");
  std::vector<ValueInfo> infos;
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    ops::ValueType vt{body.inputs[i].dtype, body.inputs[i].shape, nullptr};
    if (i < ins.size()) Refine(&vt, ins[i]);
    infos.push_back({body.inputs[i].name, vt.dtype, vt.shape, ""});
  }
  InferredGraph sub;
  Status s = InferScope(body, infos, options, &scope, depth + 1, &sub);
  if (!s.ok()) return s.WithContext(StrCat("subgraph '", body.name, "'"));
  outs->clear();
  for (const ValueInfo& o : body.outputs) {
    ops::ValueType vt{o.dtype, o.shape, nullptr};
    auto it = sub.types.find(o.name);
    const ops::ValueType* t = it != sub.types.end() ? &it->second : FindInScopes(&scope, o.name);
    if (t != nullptr) Refine(&vt, *t);
    vt.value = nullptr;
    outs->push_back(std::move(vt));
  }
  return Status::OK();
}

}  // namespace

Status InferGraph(const Graph& g, const std::vector<ValueInfo>& inputs, const InferOptions& options,
                  InferredGraph* out) {
  return InferScope(g, inputs, options, nullptr, 0, out);
}

namespace {

Status InferScope(const Graph& g, const std::vector<ValueInfo>& inputs, const InferOptions& options,
                  const Scope* parent, int depth, InferredGraph* out) {
  const ops::OpRegistry& registry = ops::OpRegistry::Global();
  const Scope scope{out, parent};
  out->folded.assign(g.nodes.size(), false);
  for (const auto& [name, t] : g.initializers) {
    Tensor& c = out->constants[name];
    c = t;
    out->types[name] = ops::ValueType{t.dtype(), PartialShape::Of(t.shape()), &c};
  }
  for (const ValueInfo& in : inputs) out->types[in.name] = ops::ValueType{in.dtype, in.shape, nullptr};
  const ValueLookup lookup = [&](const std::string& name) -> const Tensor* {
    auto it = out->constants.find(name);
    if (it != out->constants.end()) return &it->second;
    const ops::ValueType* t = FindInScopes(parent, name);
    return t != nullptr && t->has_value() ? t->value : nullptr;
  };
  const ops::SubgraphInferFn infer_body = [&](const Graph& body, const std::vector<ops::ValueType>& ins,
                                              std::vector<ops::ValueType>* outs) {
    return InferBody(body, ins, options, scope, depth, outs);
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
      // A value from an enclosing scope (subgraphs); unknown when there is no enclosing scope to ask.
      const ops::ValueType* t = it != out->types.end() ? &it->second : FindInScopes(parent, node.inputs[i]);
      in_types[i] = t != nullptr ? t : &kUnknown;
      all_const &= in_types[i]->has_value();
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
    ictx.set_subgraph_infer(&infer_body);
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

}  // namespace
}  // namespace strata::graph
