#include <unordered_set>

#include "graph/passes/passes.h"

namespace strata::graph {

Status EliminateDeadCode(Graph* g) {
  std::unordered_set<std::string> needed;
  for (const auto& out : g->outputs) needed.insert(out.name);
  std::vector<bool> keep(g->nodes.size(), false);
  for (size_t i = g->nodes.size(); i-- > 0;) {
    const Node& n = g->nodes[i];
    bool used = false;
    for (const auto& o : n.outputs) used |= !o.empty() && needed.count(o) > 0;
    if (!used) continue;
    keep[i] = true;
    for (const auto& in : n.inputs) needed.insert(in);
    // Values the node's subgraphs read from this scope, at any depth (graph outputs that name an outer value too).
    for (const auto& in : SubgraphOuterInputs(n)) needed.insert(in);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g->nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(g->nodes[i]));
  g->nodes = std::move(kept);
  for (auto it = g->initializers.begin(); it != g->initializers.end();) {
    if (needed.count(it->first) == 0)
      it = g->initializers.erase(it);
    else
      ++it;
  }
  return Status::OK();
}

Status RunDefaultPasses(Graph* g, const SessionOptions& options) {
  if (options.use_fast_kernels) {
    STRATA_RETURN_IF_ERROR(FuseQuantizedConv(g));
    STRATA_RETURN_IF_ERROR(FuseQuantizedMatMul(g));
  }
  STRATA_RETURN_IF_ERROR(FoldConstants(g));
  STRATA_RETURN_IF_ERROR(EliminateDeadCode(g));
  if (options.use_fast_kernels) {
    // Fusion targets the fast kernels (the fused ops' reference kernels only chain the unfused ones).
    STRATA_RETURN_IF_ERROR(FuseConvBatchNorm(g));
    STRATA_RETURN_IF_ERROR(FuseConvActivation(g));
    STRATA_RETURN_IF_ERROR(FuseMatMulActivation(g));
    STRATA_RETURN_IF_ERROR(FuseLayerNorm(g));
    STRATA_RETURN_IF_ERROR(FuseElementwise(g));
    STRATA_RETURN_IF_ERROR(ConvertToChannelsLast(g));
    STRATA_RETURN_IF_ERROR(FuseConvMaxPool(g));
    STRATA_RETURN_IF_ERROR(FoldFlattenTranspose(g));
    STRATA_RETURN_IF_ERROR(EliminateDeadCode(g));
  }
  return Status::OK();
}

}  // namespace strata::graph
