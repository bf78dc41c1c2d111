#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "strata/graph.h"

namespace strata::graph {

Attribute Attribute::Float(float v) {
  Attribute a;
  a.type_ = Type::kFloat;
  a.f_ = v;
  return a;
}
Attribute Attribute::Int(int64_t v) {
  Attribute a;
  a.type_ = Type::kInt;
  a.i_ = v;
  return a;
}
Attribute Attribute::String(std::string v) {
  Attribute a;
  a.type_ = Type::kString;
  a.s_ = std::move(v);
  return a;
}
Attribute Attribute::TensorValue(Tensor v) {
  Attribute a;
  a.type_ = Type::kTensor;
  a.t_ = std::move(v);
  return a;
}
Attribute Attribute::GraphValue(std::shared_ptr<Graph> g) {
  Attribute a;
  a.type_ = Type::kGraph;
  a.g_ = std::move(g);
  return a;
}
Attribute Attribute::Floats(std::vector<float> v) {
  Attribute a;
  a.type_ = Type::kFloats;
  a.floats_ = std::move(v);
  return a;
}
Attribute Attribute::Ints(std::vector<int64_t> v) {
  Attribute a;
  a.type_ = Type::kInts;
  a.ints_ = std::move(v);
  return a;
}
Attribute Attribute::Strings(std::vector<std::string> v) {
  Attribute a;
  a.type_ = Type::kStrings;
  a.strings_ = std::move(v);
  return a;
}
Attribute Attribute::Tensors(std::vector<Tensor> v) {
  Attribute a;
  a.type_ = Type::kTensors;
  a.tensors_ = std::move(v);
  return a;
}
Attribute Attribute::Graphs(std::vector<std::shared_ptr<Graph>> v) {
  Attribute a;
  a.type_ = Type::kGraphs;
  a.graphs_ = std::move(v);
  return a;
}

std::string_view AttributeTypeName(Attribute::Type t) {
  switch (t) {
    case Attribute::Type::kUndefined: return "undefined";
    case Attribute::Type::kFloat: return "float";
    case Attribute::Type::kInt: return "int";
    case Attribute::Type::kString: return "string";
    case Attribute::Type::kTensor: return "tensor";
    case Attribute::Type::kGraph: return "graph";
    case Attribute::Type::kFloats: return "floats";
    case Attribute::Type::kInts: return "ints";
    case Attribute::Type::kStrings: return "strings";
    case Attribute::Type::kTensors: return "tensors";
    case Attribute::Type::kGraphs: return "graphs";
  }
  return "undefined";
}

const Attribute* Node::FindAttr(std::string_view attr_name) const {
  auto it = attrs.find(attr_name);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::GetInt(std::string_view attr_name, int64_t def) const {
  const Attribute* a = FindAttr(attr_name);
  return a && a->type() == Attribute::Type::kInt ? a->i() : def;
}

float Node::GetFloat(std::string_view attr_name, float def) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kFloat) return a->f();
  if (a && a->type() == Attribute::Type::kInt) return static_cast<float>(a->i());
  return def;
}

std::string Node::GetString(std::string_view attr_name, std::string_view def) const {
  const Attribute* a = FindAttr(attr_name);
  return a && a->type() == Attribute::Type::kString ? a->s() : std::string(def);
}

std::vector<int64_t> Node::GetInts(std::string_view attr_name, std::vector<int64_t> def) const {
  const Attribute* a = FindAttr(attr_name);
  return a && a->type() == Attribute::Type::kInts ? a->ints() : def;
}

std::vector<float> Node::GetFloats(std::string_view attr_name, std::vector<float> def) const {
  const Attribute* a = FindAttr(attr_name);
  return a && a->type() == Attribute::Type::kFloats ? a->floats() : def;
}

std::vector<std::string> Node::GetStrings(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  return a && a->type() == Attribute::Type::kStrings ? a->strings() : std::vector<std::string>{};
}

namespace {
Status AttrError(const Node& n, std::string_view attr_name, Attribute::Type want) {
  const Attribute* a = n.FindAttr(attr_name);
  if (a == nullptr)
    return InvalidArgumentError(n.Describe(), ": required attribute '", attr_name, "' (", AttributeTypeName(want),
                                ") is missing");
  return InvalidArgumentError(n.Describe(), ": attribute '", attr_name, "' must be of type ", AttributeTypeName(want),
                              ", got ", AttributeTypeName(a->type()));
}
}  // namespace

StatusOr<int64_t> Node::RequireInt(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kInt) return a->i();
  return AttrError(*this, attr_name, Attribute::Type::kInt);
}

StatusOr<float> Node::RequireFloat(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kFloat) return a->f();
  return AttrError(*this, attr_name, Attribute::Type::kFloat);
}

StatusOr<std::string> Node::RequireString(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kString) return a->s();
  return AttrError(*this, attr_name, Attribute::Type::kString);
}

StatusOr<std::vector<int64_t>> Node::RequireInts(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kInts) return a->ints();
  return AttrError(*this, attr_name, Attribute::Type::kInts);
}

StatusOr<Tensor> Node::RequireTensor(std::string_view attr_name) const {
  const Attribute* a = FindAttr(attr_name);
  if (a && a->type() == Attribute::Type::kTensor) return a->t();
  return AttrError(*this, attr_name, Attribute::Type::kTensor);
}

std::string Node::Describe() const {
  std::string op = domain.empty() ? op_type : StrCat(domain, ".", op_type);
  if (!name.empty()) return StrCat("node '", name, "' (", op, ")");
  if (!outputs.empty()) return StrCat("node producing '", outputs[0], "' (", op, ")");
  return StrCat("node (", op, ")");
}

const ValueInfo* Graph::FindInput(std::string_view n) const {
  for (const auto& v : inputs)
    if (v.name == n) return &v;
  return nullptr;
}

const ValueInfo* Graph::FindOutput(std::string_view n) const {
  for (const auto& v : outputs)
    if (v.name == n) return &v;
  return nullptr;
}

int64_t Model::OpsetFor(std::string_view domain_name) const {
  auto it = opset_imports.find(std::string(domain_name));
  return it == opset_imports.end() ? 0 : it->second;
}

std::string_view ConvAlgorithmName(ConvAlgorithm a) { return a == ConvAlgorithm::kDirect ? "direct" : "auto"; }

StatusOr<ConvAlgorithm> ParseConvAlgorithm(std::string_view text, std::string_view where) {
  if (text == "auto") return ConvAlgorithm::kAuto;
  if (text == "direct") return ConvAlgorithm::kDirect;
  return InvalidArgumentError(where, " expects 'auto' or 'direct', got '", text, "'");
}

std::string_view PrecisionName(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

StatusOr<Precision> ParsePrecision(std::string_view text, std::string_view where) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  return InvalidArgumentError(where, " expects 'fp32' or 'bf16', got '", text, "'");
}

namespace {

void CollectOuterInputs(const Node& node, std::set<std::string>* out);

void CollectGraphOuterInputs(const Graph& g, std::set<std::string>* out) {
  std::unordered_set<std::string> local;
  for (const auto& in : g.inputs) local.insert(in.name);
  for (const auto& [name, t] : g.initializers) local.insert(name);
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) local.insert(o);
  std::set<std::string> used;
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty()) used.insert(in);
    CollectOuterInputs(n, &used);
  }
  for (const auto& o : g.outputs) used.insert(o.name);
  for (const auto& u : used)
    if (!local.count(u)) out->insert(u);
}

void CollectOuterInputs(const Node& node, std::set<std::string>* out) {
  for (const auto& [attr_name, attr] : node.attrs) {
    if (attr.type() == Attribute::Type::kGraph && attr.g()) CollectGraphOuterInputs(*attr.g(), out);
    if (attr.type() == Attribute::Type::kGraphs)
      for (const auto& g : attr.graphs())
        if (g) CollectGraphOuterInputs(*g, out);
  }
}

}  // namespace

std::vector<std::string> SubgraphOuterInputs(const Node& node) {
  std::set<std::string> names;
  CollectOuterInputs(node, &names);
  return {names.begin(), names.end()};
}

std::vector<std::string> GraphOuterInputs(const Graph& g) {
  std::set<std::string> names;
  CollectGraphOuterInputs(g, &names);
  return {names.begin(), names.end()};
}

Status TopologicalSort(Graph* graph, const std::vector<std::string>& outer_scope) {
  std::unordered_set<std::string> available(outer_scope.begin(), outer_scope.end());
  for (const auto& in : graph->inputs) available.insert(in.name);
  for (const auto& [name, t] : graph->initializers) available.insert(name);
  const size_t n = graph->nodes.size();
  // Producer index of each value, and the names each node needs (its inputs and those its subgraphs use).
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i)
    for (const auto& o : graph->nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<int> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::set<size_t> deps;
    const Node& node = graph->nodes[i];
    for (const auto& in : node.inputs) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return FailedPreconditionError(node.Describe(), ": input '", in,
                                       "' is not a graph input, an initializer or the output of any node");
      deps.insert(it->second);
    }
    // Values a subgraph reads from this scope (at any depth, graph outputs included) must be computed before the
    // node that owns the subgraph.
    for (const auto& in : SubgraphOuterInputs(node)) {
      auto it = producer.find(in);
      if (it != producer.end() && it->second != i) deps.insert(it->second);
    }
    pending[i] = static_cast<int>(deps.size());
    for (size_t d : deps) consumers[d].push_back(i);
  }
  // Kahn's algorithm; ties keep the original order so sorting a sorted graph changes nothing.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (pending[i] > 0)
        return FailedPreconditionError("the graph has a cycle through ", graph->nodes[i].Describe());
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(graph->nodes[i]));
  graph->nodes = std::move(sorted);
  return Status::OK();
}

}  // namespace strata::graph
