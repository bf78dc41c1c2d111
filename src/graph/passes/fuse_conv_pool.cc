// Channels-last Conv / strata.FusedConv whose output only a channels-last MaxPool reads -> one channels-last
// strata.ConvMaxPool (ops/defs/fused/conv_max_pool.cc), for the convolutions the hand-written kernel computes
// (ops/cpu/conv_max_pool_nhwc.cc: few input taps, as an image model's first layer has; a pool without padding). The
// convolution's output, the largest activation of such a model, then never reaches memory.
//
// Runs after ConvertToChannelsLast, and only when strata.ChannelsLast has the hand-written ("cpu") kernel: the
// fused node has no oneDNN kernel, and its reference kernel would be far slower than the two nodes it replaces.
#include <algorithm>

#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"
#include "ops/defs/fused/conv_max_pool.h"

namespace strata::graph {
namespace {

bool IsWrapped(const Node& n, std::string_view op, std::string_view domain) {
  return n.domain == kStrataDomain && n.op_type == "ChannelsLast" && n.GetString("op", "") == op &&
         n.GetString("op_domain", "") == domain && n.GetInts("nhwc_inputs", {0}) == std::vector<int64_t>{0} &&
         n.GetInt("nhwc_output", 1) == 1;
}

bool HasCpuKernel() {
  const ops::OpSchema* s = ops::OpRegistry::Global().Find(kStrataDomain, "ChannelsLast");
  if (s == nullptr) return false;
  return std::any_of(s->kernels.begin(), s->kernels.end(), [](const ops::KernelEntry& e) { return e.name == "cpu"; });
}

}  // namespace

Status FuseConvMaxPool(Graph* g) {
  if (!HasCpuKernel()) return Status::OK();
  const bool has_pool =
      std::any_of(g->nodes.begin(), g->nodes.end(), [](const Node& n) { return IsWrapped(n, "MaxPool", ""); });
  if (!has_pool) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  std::vector<bool> dead(g->nodes.size(), false);
  bool changed = false;
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    const Node& conv = g->nodes[ni];
    const bool fused_conv = IsWrapped(conv, "FusedConv", kStrataDomain);
    if (!fused_conv && !IsWrapped(conv, "Conv", "")) continue;
    if (conv.outputs.size() != 1 || conv.inputs.size() < 2 || conv.inputs.size() > 3) continue;
    const int r = passes::SoleReader(uses, conv.outputs[0]);
    if (r < 0 || dead[r]) continue;
    const Node& pool = g->nodes[r];
    if (!IsWrapped(pool, "MaxPool", "") || pool.inputs.size() != 1 || pool.outputs.empty()) continue;
    bool extra_outputs = false;
    for (size_t i = 1; i < pool.outputs.size(); ++i) extra_outputs |= !pool.outputs[i].empty();
    if (extra_outputs) continue;

    Node fused = conv;
    fused.name = StrCat(conv.name, "+", pool.name);
    fused.attrs["op"] = Attribute::String("ConvMaxPool");
    fused.attrs["op_domain"] = Attribute::String(std::string(kStrataDomain));
    for (const auto& [name, a] : pool.attrs)
      if (name != "op" && name != "op_domain" && name != "nhwc_inputs" && name != "nhwc_output")
        fused.attrs[StrCat("pool_", name)] = a;
    fused.outputs = {pool.outputs[0]};
    fused.opset = std::max(conv.opset, pool.opset);
    const ops::ValueType* x = passes::TypeOf(types, conv.inputs[0]);
    const ops::ValueType* w = passes::TypeOf(types, conv.inputs[1]);
    if (x == nullptr || w == nullptr || !ops::ConvMaxPoolFastFits(fused, *x, *w).ok()) continue;
    g->nodes[r] = std::move(fused);
    dead[ni] = true;
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
