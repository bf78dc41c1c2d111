// Add/Sub/Mul/Div followed by binary ops and activations -> strata.FusedElementwise (ops/defs/fused/), which the
// oneDNN kernel runs as one binary primitive with binary and eltwise post-ops.
//
// The fused op broadcasts every step as the ONNX ops do, so no shape needs to be known here (the oneDNN kernel
// checks at plan time, with concrete shapes, that it can take the node as one primitive). Each later binary op must
// read the running value as its left operand (either side for Add and Mul). Every absorbed value is read by the next
// node alone and is not a graph output; every value involved is float32.
#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

bool IsBinary(const Node& n) {
  return n.domain.empty() && n.opset >= 7 && n.inputs.size() == 2 && n.outputs.size() == 1 &&
         (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div");
}

bool IsFloat32(const ops::ValueType* t) { return t != nullptr && t->dtype == DType::kFloat32; }

}  // namespace

Status FuseElementwise(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"Add", "Sub", "Mul", "Div"})) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  std::vector<bool> dead(g->nodes.size(), false), frozen(g->nodes.size(), false);
  bool changed = false;
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    const Node& node = g->nodes[ni];
    if (frozen[ni] || !IsBinary(node) || node.inputs[0].empty() || node.inputs[1].empty()) continue;
    const ops::ValueType* yt = passes::TypeOf(types, node.outputs[0]);
    const ops::ValueType* at = passes::TypeOf(types, node.inputs[0]);
    const ops::ValueType* bt = passes::TypeOf(types, node.inputs[1]);
    if (!IsFloat32(yt) || !IsFloat32(at) || !IsFloat32(bt)) continue;

    passes::Chain chain(*g, uses, static_cast<int>(ni), &frozen);
    Node fused;
    fused.name = node.name;
    fused.op_type = "FusedElementwise";
    fused.domain = std::string(kStrataDomain);
    fused.opset = node.opset;
    fused.inputs = node.inputs;
    std::vector<std::string> ops = {node.op_type};
    std::vector<float> alphas = {0}, betas = {0};
    for (;;) {
      std::string op, other;
      int position = 0;
      if (chain.NextBinary(&op, &other, &position)) {
        const ops::ValueType* ct = passes::TypeOf(types, other);
        const bool left_ok = position == 0 || op == "Add" || op == "Mul";
        if (!left_ok || !IsFloat32(ct)) break;
        ops.push_back(op);
        alphas.push_back(0);
        betas.push_back(0);
        fused.inputs.push_back(other);
        chain.Absorb();
      } else if (std::optional<ops::Activation> act = chain.NextActivation()) {
        ops.push_back(act->op);
        alphas.push_back(act->alpha);
        betas.push_back(act->beta);
        chain.Absorb();
      } else {
        break;
      }
    }
    if (chain.length() == 0) continue;
    fused.attrs["ops"] = Attribute::Strings(std::move(ops));
    fused.attrs["alphas"] = Attribute::Floats(std::move(alphas));
    fused.attrs["betas"] = Attribute::Floats(std::move(betas));
    chain.Commit(std::move(fused), &dead);
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
