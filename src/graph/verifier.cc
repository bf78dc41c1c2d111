#include <algorithm>
#include <unordered_set>

#include "ops/op.h"
#include "strata/graph.h"

namespace strata::graph {

namespace {

Status VerifyScope(const Graph& graph, const std::unordered_set<std::string>& outer, int depth);

// Verifies the subgraphs of `node` (If/Loop/Scan bodies) against the names visible at the node.
Status VerifySubgraphs(const Node& node, const std::unordered_set<std::string>& outer,
                       const std::unordered_set<std::string>& local, int depth) {
  std::vector<std::pair<std::string, const Graph*>> subs;
  for (const auto& [name, a] : node.attrs) {
    if (a.type() == Attribute::Type::kGraph && a.g()) subs.emplace_back(name, a.g().get());
    if (a.type() == Attribute::Type::kGraphs)
      for (const auto& g : a.graphs())
        if (g) subs.emplace_back(name, g.get());
  }
  if (subs.empty()) return Status::OK();
  if (depth > 32) return InvalidArgumentError(node.Describe(), ": subgraphs are nested more than 32 deep");
  std::unordered_set<std::string> visible = outer;
  visible.insert(local.begin(), local.end());
  for (const auto& [name, g] : subs) {
    Status s = VerifyScope(*g, visible, depth + 1);
    if (!s.ok()) return s.WithContext(StrCat(node.Describe(), " attribute '", name, "'"));
  }
  return Status::OK();
}

// Names a graph defines must be unique within it; they may shadow names of enclosing scopes (`outer`).
Status VerifyScope(const Graph& graph, const std::unordered_set<std::string>& outer, int depth) {
  std::unordered_set<std::string> defined;
  auto visible = [&](const std::string& n) { return defined.count(n) > 0 || outer.count(n) > 0; };
  for (const auto& in : graph.inputs) {
    if (in.name.empty()) return InvalidArgumentError("a graph input has an empty name");
    if (!defined.insert(in.name).second) return InvalidArgumentError("graph input '", in.name, "' is declared twice");
  }
  for (const auto& [name, t] : graph.initializers) defined.insert(name);
  const ops::OpRegistry& registry = ops::OpRegistry::Global();
  for (const Node& node : graph.nodes) {
    const ops::OpSchema* schema = registry.Find(node.domain, node.op_type);
    if (schema == nullptr)
      return UnimplementedError(node.Describe(), ": op type '", node.op_type, "'",
                                node.domain.empty() ? "" : StrCat(" of domain '", node.domain, "'"),
                                " is not supported");
    const int n_in = static_cast<int>(node.inputs.size());
    const int n_out = static_cast<int>(node.outputs.size());
    // Trailing omitted inputs do not count.
    int last_in = n_in;
    while (last_in > 0 && node.inputs[last_in - 1].empty()) --last_in;
    if (last_in < schema->min_inputs || (schema->max_inputs >= 0 && last_in > schema->max_inputs))
      return InvalidArgumentError(node.Describe(), ": expects ", schema->min_inputs,
                                  schema->max_inputs == schema->min_inputs
                                      ? std::string()
                                      : StrCat(" to ", schema->max_inputs < 0 ? std::string("any number of")
                                                                              : std::to_string(schema->max_inputs)),
                                  " inputs, got ", last_in);
    if (n_out < schema->min_outputs || (schema->max_outputs >= 0 && n_out > schema->max_outputs))
      return InvalidArgumentError(node.Describe(), ": expects ", schema->min_outputs, " to ", schema->max_outputs,
                                  " outputs, got ", n_out);
    for (int i = 0; i < std::min(schema->min_inputs, n_in); ++i)
      if (node.inputs[i].empty())
        return InvalidArgumentError(node.Describe(), ": input ", i, " is required but its name is empty");
    for (const auto& in : node.inputs)
      if (!in.empty() && !visible(in))
        return InvalidArgumentError(node.Describe(), ": input '", in, "' is not defined before it is used");
    STRATA_RETURN_IF_ERROR(VerifySubgraphs(node, outer, defined, depth));
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      if (!defined.insert(out).second)
        return InvalidArgumentError(node.Describe(), ": output '", out, "' is already defined elsewhere");
    }
  }
  for (const auto& out : graph.outputs)
    if (!visible(out.name)) return InvalidArgumentError("graph output '", out.name, "' is never produced");
  return Status::OK();
}

}  // namespace

Status VerifyGraph(const Graph& graph, const std::vector<std::string>& outer_scope) {
  return VerifyScope(graph, std::unordered_set<std::string>(outer_scope.begin(), outer_scope.end()), 0);
}

}  // namespace strata::graph
