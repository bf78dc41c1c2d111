// Layer normalisation written out as elementwise ops (what torch.onnx exports for nn.LayerNorm before opset 17)
// becomes one LayerNormalization node (opset 17 semantics, axis -1), which has a oneDNN kernel:
//
//   m = ReduceMean(x, axes=[last]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), axes=[last]);
//   n = Div(d, Sqrt(Add(v, eps))) [; Mul(n, gamma)] [; Add(., beta)]
//
// Fires only when: x is float32 with a known rank and a known last dim C; both ReduceMeans reduce the last axis alone
// with keepdims; the exponent and eps are scalar constants (exponent exactly 2); gamma and beta are constants with C
// elements laid along the last axis (any leading dims 1); every intermediate is read only inside the pattern (d by the
// Pow and the Div) and is no graph output. Without a Mul, gamma is ones; without the Add, there is no B.
#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

// The node reading `value` as its only reader, when it is an ONNX op of type `op` (opset >= 7 for binaries).
int ReaderOfType(const Graph& g, const passes::Uses& uses, const std::vector<bool>& used, const std::string& value,
                 std::string_view op) {
  const int r = passes::SoleReader(uses, value);
  if (r < 0 || used[r]) return -1;
  const Node& n = g.nodes[r];
  if (!n.domain.empty() || n.op_type != op || n.outputs.size() != 1 || n.outputs[0].empty()) return -1;
  return r;
}

// A scalar (one element) float32 constant's value.
bool ScalarConstant(const Graph& g, const std::string& name, float* v) {
  const Tensor* t = passes::FindConstant(g, name);
  if (t == nullptr || t->dtype() != DType::kFloat32 || t->num_elements() != 1) return false;
  *v = t->data<float>()[0];
  return true;
}

// ReduceMean over the last axis (of a rank-`rank` input) with keepdims.
bool IsLastAxisMean(const Graph& g, const Node& n, int rank) {
  if (!n.domain.empty() || n.op_type != "ReduceMean" || n.outputs.size() != 1 || n.inputs.empty()) return false;
  if (n.GetInt("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (n.opset >= 18) {
    if (n.inputs.size() < 2 || n.inputs[1].empty()) return false;
    const Tensor* a = passes::FindConstant(g, n.inputs[1]);
    if (a == nullptr || a->dtype() != DType::kInt64) return false;
    for (int64_t x : a->values<int64_t>()) axes.push_back(x);
  } else {
    if (n.inputs.size() != 1) return false;
    axes = n.GetInts("axes");
  }
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// A constant with C float32 elements along the last axis (leading dims 1), as a [C] tensor.
bool ChannelVector(const Graph& g, const std::string& name, int64_t c, Tensor* out) {
  const Tensor* t = passes::FindConstant(g, name);
  if (t == nullptr || t->dtype() != DType::kFloat32 || t->num_elements() != c || t->rank() < 1) return false;
  if (t->dim(t->rank() - 1) != c) return false;
  StatusOr<Tensor> r = t->Reshaped(Shape{c});
  if (!r.ok()) return false;
  *out = r->Clone();
  return true;
}

// The other operand of a two-input node that reads `value`.
std::string OtherOperand(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return "";
  if (n.inputs[0] == value && n.inputs[1] != value) return n.inputs[1];
  if (n.inputs[1] == value && n.inputs[0] != value) return n.inputs[0];
  return "";
}

}  // namespace

Status FuseLayerNorm(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"ReduceMean"})) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::vector<bool> dead(g->nodes.size(), false), used(g->nodes.size(), false);
  bool changed = false;
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    if (used[ni]) continue;
    const Node& mean = g->nodes[ni];
    if (!mean.domain.empty() || mean.op_type != "ReduceMean" || mean.inputs.empty()) continue;
    const std::string x = mean.inputs[0];
    const ops::ValueType* xt = passes::TypeOf(types, x);
    if (xt == nullptr || xt->dtype != DType::kFloat32 || !xt->shape.rank_known || xt->shape.rank() < 1) continue;
    const int rank = xt->shape.rank();
    const Dim& last = xt->shape.dims[rank - 1];
    if (!last.known() || last.value < 1) continue;
    const int64_t c = last.value;
    if (!IsLastAxisMean(*g, mean, rank)) continue;
    // d = x - mean
    const int sub = ReaderOfType(*g, uses, used, mean.outputs[0], "Sub");
    if (sub < 0 || g->nodes[sub].inputs.size() != 2 || g->nodes[sub].inputs[0] != x ||
        g->nodes[sub].inputs[1] != mean.outputs[0])
      continue;
    const std::string d = g->nodes[sub].outputs[0];
    if (uses.pinned.count(d)) continue;
    auto rd = uses.readers.find(d);
    if (rd == uses.readers.end() || rd->second.size() != 2) continue;
    int pow = -1, div = -1;
    for (const auto& [r, input] : rd->second) {
      const Node& n = g->nodes[r];
      if (used[r] || !n.domain.empty() || n.outputs.size() != 1) continue;
      if (n.op_type == "Pow" && input == 0 && n.inputs.size() == 2) pow = r;
      if (n.op_type == "Div" && input == 0 && n.inputs.size() == 2) div = r;
    }
    float v = 0;
    if (pow < 0 || div < 0 || !ScalarConstant(*g, g->nodes[pow].inputs[1], &v) || v != 2.0f) continue;
    // var = mean(d^2); s = sqrt(var + eps); n = d / s
    const int var = passes::SoleReader(uses, g->nodes[pow].outputs[0]);
    if (var < 0 || used[var] || !IsLastAxisMean(*g, g->nodes[var], rank)) continue;
    const int add_eps = ReaderOfType(*g, uses, used, g->nodes[var].outputs[0], "Add");
    if (add_eps < 0) continue;
    float eps = 0;
    if (!ScalarConstant(*g, OtherOperand(g->nodes[add_eps], g->nodes[var].outputs[0]), &eps)) continue;
    const int sqrt = ReaderOfType(*g, uses, used, g->nodes[add_eps].outputs[0], "Sqrt");
    if (sqrt < 0 || g->nodes[div].inputs[1] != g->nodes[sqrt].outputs[0]) continue;
    if (passes::SoleReader(uses, g->nodes[sqrt].outputs[0]) != div) continue;
    std::vector<int> chain = {static_cast<int>(ni), sub, pow, var, add_eps, sqrt, div};
    // [* gamma] [+ beta]
    std::string y = g->nodes[div].outputs[0];
    Tensor gamma, beta;
    bool has_gamma = false, has_beta = false;
    const int mul = ReaderOfType(*g, uses, used, y, "Mul");
    if (mul >= 0 && ChannelVector(*g, OtherOperand(g->nodes[mul], y), c, &gamma)) {
      has_gamma = true;
      chain.push_back(mul);
      y = g->nodes[mul].outputs[0];
    }
    const int add = ReaderOfType(*g, uses, used, y, "Add");
    if (add >= 0 && ChannelVector(*g, OtherOperand(g->nodes[add], y), c, &beta)) {
      has_beta = true;
      chain.push_back(add);
      y = g->nodes[add].outputs[0];
    }
    if (!has_gamma) gamma = Tensor::FromVector(std::vector<float>(c, 1.0f), Shape{c});
    const std::string scale_name = names.Make(mean.outputs[0] + "_ln_scale");
    g->initializers[scale_name] = std::move(gamma);
    Node ln;
    ln.op_type = "LayerNormalization";
    ln.opset = 17;
    ln.name = mean.name.empty() ? y + "_ln" : mean.name + "_ln";
    ln.inputs = {x, scale_name};
    if (has_beta) {
      const std::string bias_name = names.Make(mean.outputs[0] + "_ln_bias");
      g->initializers[bias_name] = std::move(beta);
      ln.inputs.push_back(bias_name);
    }
    ln.outputs = {y};
    ln.attrs["axis"] = Attribute::Int(-1);
    ln.attrs["epsilon"] = Attribute::Float(eps);
    for (int i : chain) used[i] = true;
    for (size_t i = 0; i + 1 < chain.size(); ++i) dead[chain[i]] = true;
    g->nodes[chain.back()] = std::move(ln);  // the last node's place keeps the graph sorted
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
