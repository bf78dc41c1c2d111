// Conv followed by an inference-mode BatchNormalization folds into the Conv: with a = scale / sqrt(var + epsilon),
// W'[m] = W[m] * a[m] and B'[m] = (B[m] - mean[m]) * a[m] + bias[m] (computed in double, stored in W's type) as new
// initializers. Fires only when W, B and the BN parameters are constants of one float type, the Conv output feeds the
// BN alone (not a graph output), and the BN computes only Y in inference mode (training_mode 0, and spatial 1 for
// opsets before 9).
#include <cmath>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

bool IsBatchNormForInference(const Node& bn) {
  if (!bn.domain.empty() || bn.op_type != "BatchNormalization") return false;
  if (bn.GetInt("training_mode", 0) != 0) return false;
  if (bn.opset < 9 && bn.GetInt("spatial", 1) != 1) return false;
  if (bn.opset < 7 && bn.GetInt("is_test", 0) == 0) return false;  // opset 6 and before: training unless is_test
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (!bn.outputs[i].empty()) return false;  // running statistics wanted: training
  return bn.inputs.size() == 5;
}

template <typename T>
Tensor Folded(const Tensor& w, const std::vector<double>& a) {
  Tensor out = w.Clone();
  const int64_t m = w.dim(0), per = w.num_elements() / std::max<int64_t>(1, m);
  T* p = out.data<T>();
  for (int64_t o = 0; o < m; ++o)
    for (int64_t j = 0; j < per; ++j) p[o * per + j] = static_cast<T>(static_cast<double>(p[o * per + j]) * a[o]);
  return out;
}

template <typename T>
std::vector<double> AsDouble(const Tensor& t) {
  std::vector<double> v;
  for (T x : t.values<T>()) v.push_back(static_cast<double>(x));
  return v;
}

// Returns true when it folded bn (index bi) into conv (index ci).
bool TryFold(Graph* g, Node& conv, const Node& bn, passes::FreshNames& names) {
  const Tensor* w = passes::FindConstant(*g, conv.inputs[1]);
  const Tensor* b = conv.has_input(2) ? passes::FindConstant(*g, conv.inputs[2]) : nullptr;
  const Tensor* params[4];
  for (int i = 0; i < 4; ++i) params[i] = passes::FindConstant(*g, bn.inputs[1 + i]);
  if (w == nullptr || (conv.has_input(2) && b == nullptr) || w->rank() < 3) return false;
  const DType t = w->dtype();
  if (t != DType::kFloat32 && t != DType::kFloat64) return false;
  const int64_t m = w->dim(0);
  for (const Tensor* p : params)
    if (p == nullptr || p->dtype() != t || p->rank() != 1 || p->dim(0) != m) return false;
  if (b != nullptr && (b->dtype() != t || b->rank() != 1 || b->dim(0) != m)) return false;

  auto vec = [&](const Tensor& x) { return t == DType::kFloat32 ? AsDouble<float>(x) : AsDouble<double>(x); };
  const std::vector<double> scale = vec(*params[0]), shift = vec(*params[1]), mean = vec(*params[2]),
                            var = vec(*params[3]);
  const double eps = bn.GetFloat("epsilon", 1e-5f);
  std::vector<double> a(m), bias(m);
  const std::vector<double> b0 = b != nullptr ? vec(*b) : std::vector<double>(m, 0.0);
  for (int64_t o = 0; o < m; ++o) {
    a[o] = scale[o] / std::sqrt(var[o] + eps);
    bias[o] = (b0[o] - mean[o]) * a[o] + shift[o];
  }
  Tensor w2 = t == DType::kFloat32 ? Folded<float>(*w, a) : Folded<double>(*w, a);
  Tensor b2 = Tensor::Empty(t, Shape{m});
  for (int64_t o = 0; o < m; ++o) {
    if (t == DType::kFloat32)
      b2.data<float>()[o] = static_cast<float>(bias[o]);
    else
      b2.data<double>()[o] = bias[o];
  }
  const std::string wn = names.Make(conv.inputs[1] + "_bn_folded");
  g->initializers[wn] = std::move(w2);
  const std::string bname = names.Make((conv.has_input(2) ? conv.inputs[2] : conv.name + "_bias") + "_bn_folded");
  g->initializers[bname] = std::move(b2);
  conv.inputs.resize(3);
  conv.inputs[1] = wn;
  conv.inputs[2] = bname;
  conv.outputs[0] = bn.outputs[0];
  return true;
}

}  // namespace

Status FuseConvBatchNorm(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"Conv"})) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::vector<bool> dead(g->nodes.size(), false);
  bool changed = false;
  for (size_t ci = 0; ci < g->nodes.size(); ++ci) {
    Node& conv = g->nodes[ci];
    if (!conv.domain.empty() || conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const int bi = passes::SoleReader(uses, conv.outputs[0]);
    if (bi < 0 || dead[bi]) continue;
    const Node& bn = g->nodes[bi];
    if (!IsBatchNormForInference(bn) || bn.inputs[0] != conv.outputs[0]) continue;
    if (!TryFold(g, conv, bn, names)) continue;
    dead[bi] = true;
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
