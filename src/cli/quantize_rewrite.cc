// The QDQ rewrite of `strata quantize` (see quantize_calibrate.h for the format it writes).
//
// Activations are uint8, per tensor, asymmetric: scale = (hi - lo) / 255, zero point = round(-lo / scale), with the
// calibrated range widened to contain 0. uint8 because oneDNN's int8 convolutions on VNNI multiply unsigned 8-bit
// activations by signed 8-bit weights natively (VPDPBUSD), and because ReLU outputs (most of a CNN's activations)
// then use all 256 levels with zero point 0; ONNX Runtime's quantizer defaults to the same. Weights are int8,
// symmetric (zero point 0, range [-127, 127]), one scale per output channel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cli/quantize_calibrate.h"

namespace strata::cli::quant {
namespace {

const Tensor* Constant(const graph::Graph& g, const std::string& name) {
  if (name.empty() || g.FindInput(name) != nullptr) return nullptr;
  auto it = g.initializers.find(name);
  return it == g.initializers.end() ? nullptr : &it->second;
}

// The axis of a quantizable node's weight that indexes output channels, or -1 when the node is not quantizable.
int WeightAxis(const graph::Graph& g, const graph::Node& n) {
  if (!n.domain.empty() || n.inputs.size() < 2) return -1;
  const Tensor* w = Constant(g, n.inputs[1]);
  if (w == nullptr || w->dtype() != DType::kFloat32 || w->num_elements() == 0) return -1;
  if (n.op_type == "Conv") return w->rank() >= 3 ? 0 : -1;
  if (n.op_type == "Gemm") return w->rank() == 2 ? (n.GetInt("transB", 0) != 0 ? 0 : 1) : -1;
  if (n.op_type == "MatMul") return w->rank() == 2 ? 1 : -1;
  return -1;
}

struct UniqueNames {
  std::set<std::string> used;
  explicit UniqueNames(const graph::Graph& g) {
    for (const auto& n : g.nodes) {
      used.insert(n.name);
      used.insert(n.outputs.begin(), n.outputs.end());
    }
    for (const auto& [k, v] : g.initializers) used.insert(k);
    for (const auto& in : g.inputs) used.insert(in.name);
  }
  std::string Make(const std::string& base) {
    std::string name = base;
    for (int i = 1; used.count(name) != 0; ++i) name = base + "_" + std::to_string(i);
    used.insert(name);
    return name;
  }
};

graph::Node MakeNode(const std::string& op, std::string name, std::vector<std::string> inputs, std::string output,
                     int opset, int64_t axis = -1) {
  graph::Node n;
  n.op_type = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = {std::move(output)};
  n.opset = opset;
  if (axis >= 0) n.attrs["axis"] = graph::Attribute::Int(axis);
  return n;
}

// Per-channel symmetric int8: scales and the quantized weight.
std::pair<Tensor, Tensor> QuantizeWeight(const Tensor& w, int axis) {
  const Shape& s = w.shape();
  const int64_t channels = s[axis], inner = s.Product(axis + 1, s.rank());
  std::vector<float> amax(channels, 0.0f);
  const float* src = w.data<float>();
  const int64_t n = w.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i / inner) % channels;
    amax[c] = std::max(amax[c], std::fabs(src[i]));
  }
  std::vector<float> scale(channels);
  for (int64_t c = 0; c < channels; ++c) scale[c] = amax[c] > 0 && std::isfinite(amax[c]) ? amax[c] / 127.0f : 1.0f;
  Tensor q = Tensor::Empty(DType::kInt8, s);
  int8_t* dst = q.data<int8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(src[i] / scale[(i / inner) % channels]);
    dst[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  return {Tensor::FromVector(scale), q};
}

}  // namespace

QuantizableOps FindQuantizableOps(const graph::Graph& g) {
  QuantizableOps out;
  std::set<std::string> acts;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (WeightAxis(g, g.nodes[i]) < 0) continue;
    out.nodes.push_back(static_cast<int>(i));
    if (Constant(g, g.nodes[i].inputs[0]) == nullptr) acts.insert(g.nodes[i].inputs[0]);
  }
  out.activations.assign(acts.begin(), acts.end());
  return out;
}

Status RewriteQdq(graph::Model* model, const QuantizableOps& ops, const std::map<std::string, Range>& ranges) {
  const int64_t opset = model->OpsetFor("");
  if (opset < 13)
    return UnimplementedError("the model imports ONNX opset ", opset,
                              "; strata quantize writes per-channel DequantizeLinear, which needs opset 13 or later "
                              "(convert the model to opset 13 first, e.g. with onnx.version_converter)");
  graph::Graph& g = model->graph;
  UniqueNames names(g);
  std::map<std::string, std::pair<float, int>> act_params;  // activation -> (scale, zero point)
  std::map<std::string, std::string> dequantized;           // activation -> its DequantizeLinear output
  std::vector<graph::Node> added;
  for (const auto& [value, r] : ranges) {
    float scale = (r.hi - r.lo) / 255.0f;
    if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0f;
    const int zp = static_cast<int>(std::clamp(std::nearbyint(-r.lo / scale), 0.0f, 255.0f));
    act_params[value] = {scale, zp};
    const std::string s_name = names.Make(value + "_scale"), zp_name = names.Make(value + "_zero_point");
    g.initializers[s_name] = Tensor::Scalar(scale);
    g.initializers[zp_name] = Tensor::Scalar(static_cast<uint8_t>(zp));
    const std::string q = names.Make(value + "_quantized"), dq = names.Make(value + "_dequantized");
    added.push_back(MakeNode("QuantizeLinear", names.Make(value + "_QuantizeLinear"), {value, s_name, zp_name}, q,
                             static_cast<int>(opset)));
    added.push_back(MakeNode("DequantizeLinear", names.Make(value + "_DequantizeLinear"), {q, s_name, zp_name}, dq,
                             static_cast<int>(opset)));
    dequantized[value] = dq;
  }
  // Every reader of a quantized activation reads its dequantized value (graph outputs keep the float value).
  for (graph::Node& n : g.nodes)
    for (std::string& in : n.inputs) {
      auto it = dequantized.find(in);
      if (it != dequantized.end()) in = it->second;
    }
  for (int idx : ops.nodes) {
    graph::Node& n = g.nodes[idx];
    const int axis = WeightAxis(g, n);
    const std::string w_name = n.inputs[1];
    auto [w_scale, w_q] = QuantizeWeight(g.initializers.at(w_name), axis);
    const int64_t channels = w_scale.num_elements();
    const std::string base = n.name.empty() ? w_name : n.name;
    const std::string wq_name = names.Make(w_name + "_quantized"), ws_name = names.Make(w_name + "_scale"),
                      wz_name = names.Make(w_name + "_zero_point"), wdq = names.Make(w_name + "_dequantized");
    g.initializers[wq_name] = w_q;
    g.initializers[ws_name] = w_scale;
    g.initializers[wz_name] = Tensor::Zeros(DType::kInt8, Shape{channels});
    added.push_back(MakeNode("DequantizeLinear", names.Make(base + "_weight_DequantizeLinear"),
                             {wq_name, ws_name, wz_name}, wdq, static_cast<int>(opset), axis));
    // The bias of a Conv (or a 1-D Gemm C) in int32 with scale x_scale * w_scale, when the input is quantized.
    const std::string x_orig = [&] {
      for (const auto& [a, dq] : dequantized)
        if (dq == n.inputs[0]) return a;
      return std::string();
    }();
    const Tensor* b = n.inputs.size() > 2 ? Constant(g, n.inputs[2]) : nullptr;
    const bool bias_ok = (n.op_type == "Conv" || n.op_type == "Gemm") && b != nullptr &&
                         b->dtype() == DType::kFloat32 && b->rank() == 1 && b->num_elements() == channels &&
                         !x_orig.empty() && (n.op_type == "Conv" || n.GetFloat("beta", 1.0f) == 1.0f);
    if (bias_ok) {
      const float xs = act_params.at(x_orig).first;
      std::vector<float> bs(channels);
      std::vector<int32_t> bq(channels);
      for (int64_t c = 0; c < channels; ++c) {
        bs[c] = xs * w_scale.data<float>()[c];
        const double v = std::nearbyint(static_cast<double>(b->data<float>()[c]) / bs[c]);
        bq[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
      }
      const std::string b_name = n.inputs[2];
      const std::string bq_name = names.Make(b_name + "_quantized"), bs_name = names.Make(b_name + "_scale"),
                        bz_name = names.Make(b_name + "_zero_point"), bdq = names.Make(b_name + "_dequantized");
      g.initializers[bq_name] = Tensor::FromVector(bq);
      g.initializers[bs_name] = Tensor::FromVector(bs);
      g.initializers[bz_name] = Tensor::Zeros(DType::kInt32, Shape{channels});
      added.push_back(MakeNode("DequantizeLinear", names.Make(base + "_bias_DequantizeLinear"),
                               {bq_name, bs_name, bz_name}, bdq, static_cast<int>(opset), 0));
      g.nodes[idx].inputs[2] = bdq;
    }
    g.nodes[idx].inputs[1] = wdq;
  }
  g.nodes.insert(g.nodes.end(), added.begin(), added.end());
  // Float initializers nothing reads any more (the replaced weights and biases) are dropped.
  std::set<std::string> read;
  for (const auto& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (const auto& o : g.outputs) read.insert(o.name);
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = read.count(it->first) == 0 && g.FindInput(it->first) == nullptr ? g.initializers.erase(it) : std::next(it);
  return graph::TopologicalSort(&g);
}

}  // namespace strata::cli::quant
