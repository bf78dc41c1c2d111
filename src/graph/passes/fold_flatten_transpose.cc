// Transpose [N, H, W, C] -> [N, C, H, W] (perm 0,3,1,2), Flatten (axis 1), then a Gemm / MatMul (or their fused
// forms) with a constant weight: the channels-last region of a CNN ends in front of its classifier with such a
// Transpose. Flattening the channels-last value directly gives the same numbers in another order along K,
// (h * W + w) * C + c instead of c * H * W + h * W + w, so the weight's K rows are permuted once here (into a new
// initializer) and the Transpose goes away. Runs after ConvertToChannelsLast.
#include <cstring>

#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

bool IsToNchw(const Node& n) {
  return n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.GetInts("perm", {}) == std::vector<int64_t>{0, 3, 1, 2};
}

// The K-rows (or, with `k_is_columns`, K-columns) of a 2-D weight reordered from NCHW flattening to NHWC flattening.
Tensor PermuteK(const Tensor& w, int64_t c, int64_t h, int64_t wd, bool k_is_columns) {
  Tensor out = Tensor::Empty(w.dtype(), w.shape());
  const size_t elem = DTypeSize(w.dtype());
  const int64_t rows = w.shape()[0], cols = w.shape()[1];
  const char* src = static_cast<const char*>(w.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t wi = 0; wi < wd; ++wi) {
        const int64_t from = (ci * h + hi) * wd + wi, to = (hi * wd + wi) * c + ci;
        if (k_is_columns) {
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(dst + (r * cols + to) * elem, src + (r * cols + from) * elem, elem);
        } else {
          std::memcpy(dst + to * cols * elem, src + from * cols * elem, cols * elem);
        }
      }
  return out;
}

}  // namespace

Status FoldFlattenTranspose(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"Flatten"}) || !passes::HasOnnxOp(*g, {"Transpose"})) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::vector<bool> dead(g->nodes.size(), false);
  bool changed = false;
  for (size_t ti = 0; ti < g->nodes.size(); ++ti) {
    const Node& t = g->nodes[ti];
    if (!IsToNchw(t)) continue;
    const ops::ValueType* xt = passes::TypeOf(types, t.inputs[0]);
    if (xt == nullptr || !xt->shape.rank_known || xt->shape.rank() != 4) continue;
    const Dim& hd = xt->shape.dims[1];
    const Dim& wdim = xt->shape.dims[2];
    const Dim& cd = xt->shape.dims[3];
    if (!hd.known() || !wdim.known() || !cd.known()) continue;
    const int fi = passes::SoleReader(uses, t.outputs[0]);
    if (fi < 0 || dead[fi]) continue;
    const Node& f = g->nodes[fi];
    if (!f.domain.empty() || f.op_type != "Flatten" || f.GetInt("axis", 1) != 1 || f.outputs.size() != 1) continue;
    const int mi = passes::SoleReader(uses, f.outputs[0]);
    if (mi < 0) continue;
    Node& m = g->nodes[mi];
    const bool gemm =
        (m.domain.empty() && m.op_type == "Gemm") || (m.domain == kStrataDomain && m.op_type == "FusedGemm");
    const bool matmul =
        (m.domain.empty() && m.op_type == "MatMul") || (m.domain == kStrataDomain && m.op_type == "FusedMatMul");
    if (!gemm && !matmul) continue;
    if (m.inputs.size() < 2 || m.inputs[0] != f.outputs[0] || m.inputs[1] == f.outputs[0]) continue;
    if (gemm && m.GetInt("transA", 0) != 0) continue;
    const Tensor* w = passes::FindConstant(*g, m.inputs[1]);
    const int64_t k = hd.value * wdim.value * cd.value;
    if (w == nullptr || w->rank() != 2 || w->dtype() == DType::kString || DTypeSize(w->dtype()) == 0) continue;
    const bool k_is_columns = gemm && m.GetInt("transB", 0) != 0;
    if ((k_is_columns ? w->shape()[1] : w->shape()[0]) != k) continue;

    Tensor permuted = PermuteK(*w, cd.value, hd.value, wdim.value, k_is_columns);
    const std::string name = names.Make(m.inputs[1] + "__nhwc_rows");
    g->initializers[name] = std::move(permuted);
    m.inputs[1] = name;
    g->nodes[fi].inputs[0] = t.inputs[0];
    dead[ti] = true;
    changed = true;
  }
  if (changed) passes::RemoveNodes(g, dead);
  return Status::OK();
}

}  // namespace strata::graph
