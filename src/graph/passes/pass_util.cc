#include "graph/passes/pass_util.h"

namespace strata::graph::passes {
namespace {

void CollectSubgraphNames(const Graph& g, std::unordered_set<std::string>* names) {
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) names->insert(in);
    for (const auto& [k, a] : n.attrs) {
      if (a.type() == Attribute::Type::kGraph && a.g()) CollectSubgraphNames(*a.g(), names);
      for (const auto& sub : a.graphs()) CollectSubgraphNames(*sub, names);
    }
  }
}

}  // namespace

Uses CollectUses(const Graph& g) {
  Uses u;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty()) u.readers[n.inputs[i]].emplace_back(static_cast<int>(ni), static_cast<int>(i));
    for (const auto& [k, a] : n.attrs) {
      if (a.type() == Attribute::Type::kGraph && a.g()) CollectSubgraphNames(*a.g(), &u.pinned);
      for (const auto& sub : a.graphs()) CollectSubgraphNames(*sub, &u.pinned);
    }
  }
  for (const ValueInfo& out : g.outputs) u.pinned.insert(out.name);
  return u;
}

int SoleReader(const Uses& uses, const std::string& value) {
  if (uses.pinned.count(value)) return -1;
  auto it = uses.readers.find(value);
  if (it == uses.readers.end() || it->second.size() != 1) return -1;
  return it->second[0].first;
}

const Tensor* FindConstant(const Graph& g, const std::string& name) {
  if (name.empty() || g.FindInput(name) != nullptr) return nullptr;
  auto it = g.initializers.find(name);
  return it == g.initializers.end() ? nullptr : &it->second;
}

std::string FreshNames::Make(const std::string& base) {
  if (!collected_) {
    for (const auto& [name, t] : g_.initializers) used_.insert(name);
    for (const ValueInfo& v : g_.inputs) used_.insert(v.name);
    for (const Node& n : g_.nodes)
      for (const std::string& o : n.outputs) used_.insert(o);
    collected_ = true;
  }
  std::string name = base;
  for (int i = 1; used_.count(name); ++i) name = StrCat(base, "_", i);
  used_.insert(name);
  return name;
}

bool HasOnnxOp(const Graph& g, std::initializer_list<std::string_view> op_types) {
  for (const Node& n : g.nodes)
    if (n.domain.empty())
      for (std::string_view t : op_types)
        if (n.op_type == t) return true;
  return false;
}

bool InferTypes(const Graph& g, InferredGraph* out) {
  InferOptions opts;
  opts.fold_constants = false;
  return InferGraph(g, g.inputs, opts, out).ok();
}

bool SameShape(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    const Dim& x = a.dims[i];
    const Dim& y = b.dims[i];
    if (x.known() && y.known() && x.value == y.value) continue;
    if (!x.known() && !y.known() && !x.symbol.empty() && x.symbol == y.symbol) continue;
    return false;
  }
  return true;
}

bool BroadcastsInto(const PartialShape& c, const PartialShape& y) {
  if (!c.rank_known || !y.rank_known || c.rank() > y.rank()) return false;
  for (int i = 0; i < c.rank(); ++i) {
    const Dim& cd = c.dims[c.rank() - 1 - i];
    const Dim& yd = y.dims[y.rank() - 1 - i];
    if (cd.known() && cd.value == 1) continue;
    if (cd.known() && yd.known() && cd.value == yd.value) continue;
    if (!cd.known() && !yd.known() && !cd.symbol.empty() && cd.symbol == yd.symbol) continue;
    return false;
  }
  return true;
}

void RemoveNodes(Graph* g, const std::vector<bool>& dead) {
  std::vector<Node> kept;
  kept.reserve(g->nodes.size());
  for (size_t i = 0; i < g->nodes.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(g->nodes[i]));
  g->nodes = std::move(kept);
}

}  // namespace strata::graph::passes
