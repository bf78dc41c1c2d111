#include <unordered_set>

#include "graph/interpreter.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {
constexpr size_t kMaxFoldedBytes = size_t{64} << 20;

bool HasSubgraph(const Node& n) {
  for (const auto& [name, a] : n.attrs)
    if (a.type() == Attribute::Type::kGraph || a.type() == Attribute::Type::kGraphs) return true;
  return false;
}
}  // namespace

Status FoldConstants(Graph* g) {
  std::unordered_set<std::string> graph_inputs;
  for (const auto& in : g->inputs) graph_inputs.insert(in.name);
  const ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
  std::vector<Node> kept;
  for (Node& node : g->nodes) {
    const ops::OpSchema* schema = ops::OpRegistry::Global().Find(node.domain, node.op_type);
    bool foldable = schema != nullptr && schema->deterministic && !HasSubgraph(node);
    std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
    for (size_t i = 0; foldable && i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      auto it = g->initializers.find(node.inputs[i]);
      if (it == g->initializers.end() || graph_inputs.count(node.inputs[i])) {
        foldable = false;
      } else {
        ins[i] = &it->second;
      }
    }
    if (foldable) {
      std::vector<Tensor> outs;
      Status s = RunNodeReference(node, ins, none, DefaultAllocator(), &outs);
      size_t bytes = 0;
      for (const Tensor& t : outs) bytes += t.defined() ? t.byte_size() : 0;
      if (s.ok() && bytes <= kMaxFoldedBytes) {
        for (size_t i = 0; i < node.outputs.size(); ++i)
          if (!node.outputs[i].empty()) g->initializers[node.outputs[i]] = outs[i];
        continue;
      }
      // Errors surface when the node runs, with the run's context; keep the node.
    }
    kept.push_back(std::move(node));
  }
  g->nodes = std::move(kept);
  return Status::OK();
}

}  // namespace strata::graph
