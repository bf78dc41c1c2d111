#include <algorithm>
#include <unordered_set>

#include "ops/op.h"
#include "strata/graph.h"

namespace strata::graph {

Status VerifyGraph(const Graph& graph, const std::vector<std::string>& outer_scope) {
  std::unordered_set<std::string> defined(outer_scope.begin(), outer_scope.end());
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
      if (!in.empty() && !defined.count(in))
        return InvalidArgumentError(node.Describe(), ": input '", in, "' is not defined before it is used");
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      if (!defined.insert(out).second)
        return InvalidArgumentError(node.Describe(), ": output '", out, "' is already defined elsewhere");
    }
  }
  for (const auto& out : graph.outputs)
    if (!defined.count(out.name)) return InvalidArgumentError("graph output '", out.name, "' is never produced");
  return Status::OK();
}

}  // namespace strata::graph
