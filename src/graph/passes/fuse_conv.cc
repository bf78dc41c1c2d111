// Conv / ConvTranspose [+ per-channel bias Add] [+ residual Add] [+ activation] -> strata.FusedConv
// (ops/defs/fused/fused_conv.cc), which the oneDNN kernel runs as one convolution with sum and eltwise post-ops.
//
// Each absorbed value must be read by the next node of the chain alone and must not be a graph output; the
// convolution output must be float32 (the fast path); a bias Add needs a constant of shape [M,1,..] or
// [1,M,1,..] and a Conv without B; a residual Add needs an addend whose shape is provably the convolution's. The
// fused node takes the place of the last absorbed node, so every input it reads is defined before it.
#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

// A per-output-channel constant ([M,1,...] or [1,M,1,...] against an output of rank r) as a [M] tensor.
std::optional<Tensor> ChannelBias(const Tensor& c, int out_rank, int64_t m) {
  if (c.dtype() != DType::kFloat32 || m < 0 || c.num_elements() != m) return std::nullopt;
  const int r = c.rank();
  if (r > out_rank || r < out_rank - 1 || out_rank < 3) return std::nullopt;
  // The channel axis of the output is 1, i.e. index r - (out_rank - 1) of c.
  const int axis = r - (out_rank - 1);
  if (axis < 0 || c.dim(axis) != m) return std::nullopt;
  auto t = c.Reshaped(Shape{m});
  if (!t.ok()) return std::nullopt;
  return t->Clone();
}

}  // namespace

Status FuseConvActivation(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"Conv", "ConvTranspose"})) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::vector<bool> dead(g->nodes.size(), false), frozen(g->nodes.size(), false);
  bool changed = false;
  for (size_t ci = 0; ci < g->nodes.size(); ++ci) {
    const Node& conv = g->nodes[ci];
    if (frozen[ci] || !conv.domain.empty() || (conv.op_type != "Conv" && conv.op_type != "ConvTranspose")) continue;
    if (conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const ops::ValueType* yt = passes::TypeOf(types, conv.outputs[0]);
    if (yt == nullptr || yt->dtype != DType::kFloat32) continue;
    const int64_t m = yt->shape.rank() >= 2 && yt->shape.dims[1].known() ? yt->shape.dims[1].value : -1;

    passes::Chain chain(*g, uses, static_cast<int>(ci), &frozen);
    Node fused = conv;
    fused.op_type = "FusedConv";
    fused.domain = std::string(kStrataDomain);
    fused.inputs.resize(4);
    if (conv.op_type == "ConvTranspose") fused.attrs["transpose"] = Attribute::Int(1);
    // Bias Add (Conv without B).
    if (!conv.has_input(2)) {
      std::string other;
      if (chain.NextIsAdd(&other)) {
        const Tensor* c = passes::FindConstant(*g, other);
        std::optional<Tensor> b = c != nullptr ? ChannelBias(*c, yt->shape.rank(), m) : std::nullopt;
        if (b) {
          const std::string name = names.Make(other + "_as_bias");
          g->initializers[name] = *b;
          fused.inputs[2] = name;
          chain.Absorb();
        }
      }
    }
    // Residual Add.
    std::string other;
    if (chain.NextIsAdd(&other)) {
      const ops::ValueType* zt = passes::TypeOf(types, other);
      if (zt != nullptr && zt->dtype == DType::kFloat32 && passes::SameShape(zt->shape, yt->shape)) {
        fused.inputs[3] = other;
        chain.Absorb();
      }
    }
    // Activation.
    if (std::optional<ops::Activation> act = chain.NextActivation()) {
      ops::WriteFusedActivation(*act, &fused.attrs);
      chain.Absorb();
    }
    if (chain.length() == 0) continue;
    while (!fused.inputs.empty() && fused.inputs.back().empty()) fused.inputs.pop_back();
    chain.Commit(std::move(fused), &dead);
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
