#include "train/tensorboard_graph.h"

#include <map>
#include <set>
#include <string>

#include "graph/infer.h"

namespace strata::train {
namespace {

using io::GraphAttr;
using io::GraphNode;

GraphAttr IntAttr(int64_t v) {
  GraphAttr a;
  a.kind = GraphAttr::Kind::kInt;
  a.i = v;
  return a;
}
GraphAttr StringAttr(std::string v) {
  GraphAttr a;
  a.kind = GraphAttr::Kind::kString;
  a.s = std::move(v);
  return a;
}
GraphAttr DtypeAttr(DType t) {
  GraphAttr a;
  a.kind = GraphAttr::Kind::kDtype;
  a.dtype = TfDataType(t);
  return a;
}

void AddShape(const PartialShape& p, GraphAttr* a) {
  std::vector<int64_t> dims;
  for (const Dim& d : p.dims) dims.push_back(d.known() ? d.value : -1);
  a->shapes.push_back(std::move(dims));
  a->unknown_rank.push_back(!p.rank_known);
}

GraphAttr ConvertAttr(const graph::Attribute& at) {
  using T = graph::Attribute::Type;
  GraphAttr a;
  switch (at.type()) {
    case T::kFloat:
      a.kind = GraphAttr::Kind::kFloat;
      a.f = at.f();
      return a;
    case T::kInt:
      return IntAttr(at.i());
    case T::kString:
      return StringAttr(at.s());
    case T::kFloats:
      a.kind = GraphAttr::Kind::kFloats;
      a.floats = at.floats();
      return a;
    case T::kInts:
      a.kind = GraphAttr::Kind::kInts;
      a.ints = at.ints();
      return a;
    case T::kStrings:
      a.kind = GraphAttr::Kind::kStrings;
      a.strings = at.strings();
      return a;
    case T::kTensor:
      return StringAttr(StrCat("tensor ", at.t().TypeString()));
    case T::kTensors:
      return StringAttr(StrCat(at.tensors().size(), " tensors"));
    case T::kGraph:
      return StringAttr(StrCat("graph '", at.g() ? at.g()->name : "", "'"));
    case T::kGraphs:
      return StringAttr(StrCat(at.graphs().size(), " graphs"));
    case T::kUndefined:
      break;
  }
  return StringAttr("undefined");
}

// Known type information of a value: graph-level inference (no constant folding) from the graph inputs' types,
// else the graph's own annotations (inputs, outputs, value_info, initializers).
struct ValueTypes {
  std::map<std::string, const graph::ValueInfo*> info;
  graph::InferredGraph inferred;
  const graph::Graph* g;
  explicit ValueTypes(const graph::Graph& graph) : g(&graph) {
    for (const auto& v : graph.inputs) info[v.name] = &v;
    for (const auto& [name, v] : graph.value_info) info[name] = &v;
    for (const auto& v : graph.outputs) info[v.name] = &v;
    graph::InferOptions o;
    o.fold_constants = false;
    // A graph that does not infer (out of order, unknown op) keeps its annotations only: the picture is optional.
    if (!graph::InferGraph(graph, graph.inputs, o, &inferred).ok()) inferred.types.clear();
  }
  // Fills dtype and shape; false when nothing is known.
  bool Find(const std::string& value, DType* dtype, PartialShape* shape) const {
    if (auto it = inferred.types.find(value); it != inferred.types.end() && it->second.dtype != DType::kUndefined) {
      *dtype = it->second.dtype;
      *shape = it->second.shape;
      return true;
    }
    if (auto it = g->initializers.find(value); it != g->initializers.end()) {
      *dtype = it->second.dtype();
      *shape = PartialShape::Of(it->second.shape());
      return true;
    }
    auto it = info.find(value);
    if (it == info.end()) return false;
    *dtype = it->second->dtype;
    *shape = it->second->shape;
    return true;
  }
};

}  // namespace

int TfDataType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 1;
    case DType::kFloat64:
      return 2;
    case DType::kInt32:
      return 3;
    case DType::kUInt8:
      return 4;
    case DType::kInt16:
      return 5;
    case DType::kInt8:
      return 6;
    case DType::kString:
      return 7;
    case DType::kInt64:
      return 9;
    case DType::kBool:
      return 10;
    case DType::kBFloat16:
      return 14;
    case DType::kUInt16:
      return 17;
    case DType::kFloat16:
      return 19;
    case DType::kUInt32:
      return 22;
    case DType::kUInt64:
      return 23;
    case DType::kUndefined:
      break;
  }
  return 0;
}

std::vector<GraphNode> ToTensorBoardGraph(const graph::Graph& g) {
  const ValueTypes types(g);
  std::vector<GraphNode> out;
  std::set<std::string> used;
  std::map<std::string, std::string> producer;  // value -> "node" or "node:k"
  auto unique = [&used](std::string name, const std::string& fallback) {
    if (name.empty() || used.count(name)) name = fallback;
    while (used.count(name)) name += "_";
    used.insert(name);
    return name;
  };
  auto source = [&](const std::string& value, const std::string& op) {
    GraphNode n;
    n.name = unique(value, op + "_" + std::to_string(out.size()));
    n.op = op;
    DType dt = DType::kUndefined;
    PartialShape shape;
    if (types.Find(value, &dt, &shape)) {
      n.attrs.emplace_back("dtype", DtypeAttr(dt));
      GraphAttr s;
      s.kind = GraphAttr::Kind::kShapes;
      AddShape(shape, &s);
      n.attrs.emplace_back("_output_shapes", s);
    }
    producer[value] = n.name;
    out.push_back(std::move(n));
  };
  for (const auto& v : g.inputs) source(v.name, "Placeholder");
  for (const auto& [name, t] : g.initializers) source(name, "Const");
  // Names first, so that inputs can refer to nodes defined later in the list.
  std::vector<std::string> names;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& node = g.nodes[i];
    names.push_back(unique(node.name, node.op_type + "_" + std::to_string(i)));
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      producer[node.outputs[k]] = k == 0 ? names.back() : StrCat(names.back(), ":", k);
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& node = g.nodes[i];
    GraphNode n;
    n.name = names[i];
    n.op = node.domain.empty() ? node.op_type : StrCat(node.domain, ".", node.op_type);
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      n.inputs.push_back(it != producer.end() ? it->second : in);
    }
    for (const auto& [name, at] : node.attrs) n.attrs.emplace_back(name, ConvertAttr(at));
    GraphAttr shapes;
    shapes.kind = GraphAttr::Kind::kShapes;
    bool any_known = false;
    DType first = DType::kUndefined;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      DType dt = DType::kUndefined;
      PartialShape shape;
      if (types.Find(node.outputs[k], &dt, &shape)) {
        any_known = true;
        if (k == 0) first = dt;
      }
      AddShape(shape, &shapes);
    }
    if (any_known) n.attrs.emplace_back("_output_shapes", shapes);
    if (first != DType::kUndefined) n.attrs.emplace_back("T", DtypeAttr(first));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace strata::train
