// MatMul [+ bias Add] [+ activation] -> strata.FusedMatMul, and Gemm + activation -> strata.FusedGemm
// (ops/defs/fused/), which the oneDNN kernel runs as one matmul with a bias and an eltwise post-op.
//
// Each absorbed value must be read by the next node alone and must not be a graph output; the product must be
// float32. The Add's other operand must provably broadcast to the product without changing its shape: every dim 1
// or equal to the product's (same value or same symbol), or, when the product's rank is unknown, a [N] vector with N
// the last dim of B.
#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

// Whether Add(product, c) has the product's shape; with the product's rank unknown, a [N] vector with N = B's last
// dim does.
bool BiasFits(const PartialShape& c, const PartialShape& y, const PartialShape& b) {
  if (y.rank_known) return passes::BroadcastsInto(c, y);
  return c.rank() == 1 && b.rank_known && b.rank() >= 2 &&
         passes::BroadcastsInto(c, PartialShape::Of({b.dims[b.rank() - 1]}));
}

}  // namespace

Status FuseMatMulActivation(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"MatMul", "Gemm"})) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  std::vector<bool> dead(g->nodes.size(), false), frozen(g->nodes.size(), false);
  bool changed = false;
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    const Node& node = g->nodes[ni];
    if (frozen[ni] || !node.domain.empty() || (node.op_type != "MatMul" && node.op_type != "Gemm")) continue;
    if (node.outputs.size() != 1 || node.inputs.size() < 2) continue;
    const ops::ValueType* yt = passes::TypeOf(types, node.outputs[0]);
    if (yt == nullptr || yt->dtype != DType::kFloat32) continue;
    passes::Chain chain(*g, uses, static_cast<int>(ni), &frozen);
    Node fused = node;
    fused.domain = std::string(kStrataDomain);
    if (node.op_type == "MatMul") {
      fused.op_type = "FusedMatMul";
      std::string other;
      const ops::ValueType* bt = passes::TypeOf(types, node.inputs[1]);
      if (chain.NextIsAdd(&other) && bt != nullptr) {
        const ops::ValueType* ct = passes::TypeOf(types, other);
        if (ct != nullptr && ct->dtype == DType::kFloat32 && BiasFits(ct->shape, yt->shape, bt->shape)) {
          fused.inputs.push_back(other);
          chain.Absorb();
        }
      }
    } else {
      fused.op_type = "FusedGemm";
    }
    if (std::optional<ops::Activation> act = chain.NextActivation()) {
      ops::WriteFusedActivation(*act, &fused.attrs);
      chain.Absorb();
    }
    if (chain.length() == 0) continue;
    chain.Commit(std::move(fused), &dead);
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
