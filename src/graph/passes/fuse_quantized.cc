// QDQ convolutions -> strata.QuantizedConv (ops/defs/fused/quantized_conv.cc), which the oneDNN int8 kernel runs:
//
//   DequantizeLinear(x_q) ─┐
//   DequantizeLinear(w_q) ─┼─ Conv ─ [Add(Z)] ─ [activation] ─ [QuantizeLinear] ─>
//   [DequantizeLinear(b_q) or float B] ─┘
//
// x's DequantizeLinear must be per tensor with constant scale and zero point; w's must read a constant int8 tensor
// with constant per-tensor or per-output-channel (axis 0) scales and zero points that are all 0; an int32 bias
// behind a DequantizeLinear (zero point 0) is folded into a float32 bias. A residual Z behind a per-tensor
// DequantizeLinear stays quantized (the fused node reads the 8-bit tensor); a float32 Z of the output's shape is taken
// as is, and then no QuantizeLinear is absorbed (the int8 kernel's sum post-op needs Z in the destination's type).
// The DequantizeLinear nodes stay in place for their other readers; dead code elimination removes the rest. Runs
// before constant folding, which would otherwise fold the weights' DequantizeLinear into float32 weights. Does nothing
// (with a warning) where ops::Int8ConvolutionsAvailable() is false: no VNNI.
#include <cmath>
#include <mutex>

#include "core/logging.h"
#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"
#include "ops/int8_support.h"

namespace strata::graph {
namespace {

bool IsOnnx(const Node& n, std::string_view op) { return n.domain.empty() && n.op_type == op; }

// A constant that holds one value (scalar or [1]).
const Tensor* ScalarConstant(const Graph& g, const Node& n, int i) {
  if (!n.has_input(i)) return nullptr;
  const Tensor* t = passes::FindConstant(g, n.inputs[i]);
  return t != nullptr && t->num_elements() == 1 ? t : nullptr;
}

bool AllZero(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.byte_size(); ++i)
    if (p[i] != 0) return false;
  return true;
}

// A per-tensor DequantizeLinear of a runtime 8-bit value: its node index, else -1.
int PerTensorDequantize(const Graph& g, const std::unordered_map<std::string, int>& producer, const std::string& v) {
  auto it = producer.find(v);
  if (it == producer.end()) return -1;
  const Node& dq = g.nodes[it->second];
  if (!IsOnnx(dq, "DequantizeLinear") || dq.outputs.size() != 1) return -1;
  const Tensor* scale = ScalarConstant(g, dq, 1);
  if (scale == nullptr || scale->dtype() != DType::kFloat32) return -1;
  if (passes::FindConstant(g, dq.inputs[0]) != nullptr) return -1;
  if (dq.has_input(2)) {
    const Tensor* zp = ScalarConstant(g, dq, 2);
    if (zp == nullptr || (zp->dtype() != DType::kUInt8 && zp->dtype() != DType::kInt8)) return -1;
  }
  return it->second;
}

// Whether `dq` dequantizes constant int8 weights of rank `rank` with zero points all 0, per tensor or per output
// channel (`m` of them, along `axis`).
bool WeightDequantize(const Graph& g, const Node& dq, int64_t m, int rank = 4, int64_t axis = 0) {
  if (!IsOnnx(dq, "DequantizeLinear")) return false;
  const Tensor* w = passes::FindConstant(g, dq.inputs[0]);
  const Tensor* scale = dq.has_input(1) ? passes::FindConstant(g, dq.inputs[1]) : nullptr;
  if (w == nullptr || w->dtype() != DType::kInt8 || w->rank() != rank || scale == nullptr) return false;
  if (scale->dtype() != DType::kFloat32 || (scale->num_elements() != 1 && scale->num_elements() != m)) return false;
  int64_t dq_axis = dq.GetInt("axis", 1);
  if (dq_axis < 0) dq_axis += rank;
  if (scale->num_elements() > 1 && (scale->rank() != 1 || dq_axis != axis)) return false;
  if (dq.has_input(2)) {
    const Tensor* zp = passes::FindConstant(g, dq.inputs[2]);
    if (zp == nullptr || !AllZero(*zp)) return false;
  }
  return true;
}

// A float32 [M] bias: a constant, or a DequantizeLinear of a constant int32 tensor (zero point 0).
std::optional<Tensor> Bias(const Graph& g, const std::unordered_map<std::string, int>& producer, const std::string& v,
                           int64_t m) {
  if (const Tensor* b = passes::FindConstant(g, v))
    return b->dtype() == DType::kFloat32 && b->num_elements() == m ? std::optional<Tensor>(b->Clone()) : std::nullopt;
  auto it = producer.find(v);
  if (it == producer.end()) return std::nullopt;
  const Node& dq = g.nodes[it->second];
  if (!IsOnnx(dq, "DequantizeLinear")) return std::nullopt;
  const Tensor* q = passes::FindConstant(g, dq.inputs[0]);
  const Tensor* s = dq.has_input(1) ? passes::FindConstant(g, dq.inputs[1]) : nullptr;
  const Tensor* zp = dq.has_input(2) ? passes::FindConstant(g, dq.inputs[2]) : nullptr;
  if (q == nullptr || q->dtype() != DType::kInt32 || q->num_elements() != m || s == nullptr ||
      s->dtype() != DType::kFloat32 || (s->num_elements() != 1 && s->num_elements() != m) ||
      (dq.has_input(2) && (zp == nullptr || !AllZero(*zp))))
    return std::nullopt;
  std::vector<float> b(m);
  for (int64_t c = 0; c < m; ++c)
    b[c] = static_cast<float>(q->data<int32_t>()[c]) * s->data<float>()[s->num_elements() == 1 ? 0 : c];
  return Tensor::FromVector(b);
}

// The tail both fusions share: a QuantizeLinear of the chain's value with a constant float32 scale (and constant zero
// point, if any) is absorbed, its scale and zero point becoming the fused node's inputs `scale_input` and
// `scale_input + 1`; trailing unused inputs are dropped; the fused node replaces node `start` (nothing absorbed) or
// the whole chain.
void FinishFusion(Graph* g, passes::Chain& chain, bool absorb_quantize, size_t scale_input, int start, Node fused,
                  std::vector<bool>* frozen, std::vector<bool>* dead) {
  const int qi = chain.NextNode();
  if (absorb_quantize && qi >= 0) {
    const Node& q = g->nodes[qi];
    const Tensor* s = ScalarConstant(*g, q, 1);
    const Tensor* zp = ScalarConstant(*g, q, 2);
    if (IsOnnx(q, "QuantizeLinear") && q.inputs[0] == chain.value() && s != nullptr &&
        s->dtype() == DType::kFloat32 && (!q.has_input(2) || zp != nullptr)) {
      fused.inputs[scale_input] = q.inputs[1];
      if (q.has_input(2)) fused.inputs[scale_input + 1] = q.inputs[2];
      chain.Absorb();
    }
  }
  while (!fused.inputs.empty() && fused.inputs.back().empty()) fused.inputs.pop_back();
  if (chain.length() == 0) {
    (*frozen)[start] = true;
    g->nodes[start] = std::move(fused);
  } else {
    chain.Commit(std::move(fused), dead);
  }
}

}  // namespace

Status FuseQuantizedConv(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"DequantizeLinear"}) || !passes::HasOnnxOp(*g, {"Conv"})) return Status::OK();
  if (!ops::Int8ConvolutionsAvailable()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      LogWarning(
          "QDQ model: this CPU (or DNNL_MAX_CPU_ISA) has no VNNI, so its convolutions run in float32 on the "
          "dequantized values, as the QDQ graph is written (same results as the int8 kernels up to one "
          "quantization step, without their speed)");
    });
    return Status::OK();
  }
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::unordered_map<std::string, int> producer;
  for (size_t i = 0; i < g->nodes.size(); ++i)
    for (const std::string& o : g->nodes[i].outputs)
      if (!o.empty()) producer[o] = static_cast<int>(i);
  std::vector<bool> dead(g->nodes.size(), false), frozen(g->nodes.size(), false);
  bool changed = false;
  for (size_t ci = 0; ci < g->nodes.size(); ++ci) {
    const Node conv = g->nodes[ci];
    if (frozen[ci] || !IsOnnx(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const ops::ValueType* yt = passes::TypeOf(types, conv.outputs[0]);
    if (yt == nullptr || yt->shape.rank() != 4 || !yt->shape.dims[1].known()) continue;
    const int64_t m = yt->shape.dims[1].value;
    const int xi = PerTensorDequantize(*g, producer, conv.inputs[0]);
    auto wi = producer.find(conv.inputs[1]);
    if (xi < 0 || wi == producer.end() || !WeightDequantize(*g, g->nodes[wi->second], m)) continue;
    std::optional<Tensor> bias;
    if (conv.has_input(2) && !(bias = Bias(*g, producer, conv.inputs[2], m))) continue;
    const Node& xdq = g->nodes[xi];
    const Node& wdq = g->nodes[wi->second];

    Node fused = conv;
    fused.op_type = "QuantizedConv";
    fused.domain = std::string(kStrataDomain);
    fused.opset = 1;
    fused.inputs.assign(11, "");
    fused.inputs[0] = xdq.inputs[0];
    fused.inputs[1] = xdq.inputs[1];
    if (xdq.has_input(2)) fused.inputs[2] = xdq.inputs[2];
    fused.inputs[3] = wdq.inputs[0];
    fused.inputs[4] = wdq.inputs[1];
    if (bias) {
      const std::string name = names.Make(conv.inputs[2] + "_float");
      g->initializers[name] = *bias;
      fused.inputs[5] = name;
    }
    passes::Chain chain(*g, uses, static_cast<int>(ci), &frozen);
    bool float_z = false;
    std::string other;
    if (chain.NextIsAdd(&other)) {
      const ops::ValueType* zt = passes::TypeOf(types, other);
      const int zi = PerTensorDequantize(*g, producer, other);
      if (zi >= 0 && zt != nullptr && passes::SameShape(zt->shape, yt->shape)) {
        const Node& zdq = g->nodes[zi];
        fused.inputs[6] = zdq.inputs[0];
        fused.inputs[7] = zdq.inputs[1];
        if (zdq.has_input(2)) fused.inputs[8] = zdq.inputs[2];
        chain.Absorb();
      } else if (zt != nullptr && zt->dtype == DType::kFloat32 && passes::SameShape(zt->shape, yt->shape)) {
        fused.inputs[6] = other;
        float_z = true;
        chain.Absorb();
      }
    }
    if (std::optional<ops::Activation> act = chain.NextActivation()) {
      ops::WriteFusedActivation(*act, &fused.attrs);
      chain.Absorb();
    }
    FinishFusion(g, chain, !float_z, 9, static_cast<int>(ci), std::move(fused), &frozen, &dead);
    changed = true;
  }
  if (changed) {
    passes::RemoveNodes(g, dead);
    STRATA_RETURN_IF_ERROR(EliminateDeadCode(g));
  }
  return Status::OK();
}

Status FuseQuantizedMatMul(Graph* g) {
  if (!passes::HasOnnxOp(*g, {"DequantizeLinear"}) || !passes::HasOnnxOp(*g, {"MatMul", "Gemm"})) return Status::OK();
  if (!ops::Int8ConvolutionsAvailable()) return Status::OK();  // FuseQuantizedConv warns
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  passes::FreshNames names(*g);
  std::unordered_map<std::string, int> producer;
  for (size_t i = 0; i < g->nodes.size(); ++i)
    for (const std::string& o : g->nodes[i].outputs)
      if (!o.empty()) producer[o] = static_cast<int>(i);
  std::vector<bool> dead(g->nodes.size(), false), frozen(g->nodes.size(), false);
  bool changed = false;
  for (size_t mi = 0; mi < g->nodes.size(); ++mi) {
    const Node mm = g->nodes[mi];
    const bool gemm = IsOnnx(mm, "Gemm");
    if (frozen[mi] || !(gemm || IsOnnx(mm, "MatMul")) || mm.outputs.size() != 1 || mm.inputs.size() < 2) continue;
    if (gemm && (mm.GetInt("transA", 0) != 0 || mm.GetFloat("alpha", 1.0f) != 1.0f ||
                 (mm.has_input(2) && mm.GetFloat("beta", 1.0f) != 1.0f)))
      continue;
    const bool trans_b = gemm && mm.GetInt("transB", 0) != 0;
    const int ai = PerTensorDequantize(*g, producer, mm.inputs[0]);
    auto bi = producer.find(mm.inputs[1]);
    if (ai < 0 || bi == producer.end()) continue;
    const Tensor* b = passes::FindConstant(*g, g->nodes[bi->second].inputs[0]);
    if (b == nullptr || b->rank() != 2) continue;
    const int64_t n = trans_b ? b->dim(0) : b->dim(1);
    if (!WeightDequantize(*g, g->nodes[bi->second], n, 2, trans_b ? 0 : 1)) continue;
    std::optional<Tensor> bias;
    if (mm.has_input(2) && !(bias = Bias(*g, producer, mm.inputs[2], n))) continue;
    const Node& adq = g->nodes[ai];
    const Node& bdq = g->nodes[bi->second];
    Node fused;
    fused.name = mm.name;
    fused.op_type = "QuantizedMatMul";
    fused.domain = std::string(kStrataDomain);
    fused.opset = 1;
    fused.outputs = mm.outputs;
    if (trans_b) fused.attrs["transB"] = Attribute::Int(1);
    fused.inputs.assign(8, "");
    fused.inputs[0] = adq.inputs[0];
    fused.inputs[1] = adq.inputs[1];
    if (adq.has_input(2)) fused.inputs[2] = adq.inputs[2];
    fused.inputs[3] = bdq.inputs[0];
    fused.inputs[4] = bdq.inputs[1];
    if (bias) {
      const std::string name = names.Make(mm.inputs[2] + "_float");
      g->initializers[name] = *bias;
      fused.inputs[5] = name;
    }
    passes::Chain chain(*g, uses, static_cast<int>(mi), &frozen);
    if (std::optional<ops::Activation> act = chain.NextActivation()) {
      ops::WriteFusedActivation(*act, &fused.attrs);
      chain.Absorb();
    }
    FinishFusion(g, chain, true, 6, static_cast<int>(mi), std::move(fused), &frozen, &dead);
    changed = true;
  }
  if (changed) {
    passes::RemoveNodes(g, dead);
    STRATA_RETURN_IF_ERROR(EliminateDeadCode(g));
  }
  return Status::OK();
}

}  // namespace strata::graph
