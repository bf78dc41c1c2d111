// NHWC -> NCHW layout clean-up of an imported SavedModel graph (see layout.h).
#include "tf/layout.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/passes.h"

namespace strata::tf {
namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

constexpr std::string_view kUnary[] = {"Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softplus", "Clip",
                                       "Abs", "Neg", "Sqrt", "Exp", "Log", "HardSigmoid", "HardSwish", "Erf"};
constexpr std::string_view kBinary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};

bool In(std::string_view op, const auto& list) { return std::find(std::begin(list), std::end(list), op) != std::end(list); }

bool IsTranspose(const graph::Node& n, const std::vector<int64_t>& perm) {
  return n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.GetInts("perm") == perm;
}

// A float32 constant of rank <= 4 broadcast against an NHWC value, as the constant to broadcast against the NCHW
// value: leading 1s up to rank 4, then the axes permuted like the activation.
Tensor ToNchwConstant(const Tensor& t) {
  std::vector<int64_t> d(4, 1);
  for (int i = 0; i < t.rank(); ++i) d[4 - t.rank() + i] = t.dim(i);
  Tensor out = Tensor::Empty(DType::kFloat32, Shape({d[0], d[3], d[1], d[2]}));
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t h = 0; h < d[1]; ++h)
      for (int64_t w = 0; w < d[2]; ++w)
        for (int64_t c = 0; c < d[3]; ++c)
          dst[((n * d[3] + c) * d[1] + h) * d[2] + w] = src[((n * d[1] + h) * d[2] + w) * d[3] + c];
  return out;
}

// The per-output-channel values of `t` for a Conv with `co` output channels ([co], [co,1,1], [1,co,1,1]); empty when
// it is not such a float32 constant.
std::vector<float> PerChannel(const Tensor& t, int64_t co) {
  if (t.dtype() != DType::kFloat32 || t.num_elements() != co || t.rank() < 1 || t.rank() > 4) return {};
  const int channel_axis = t.rank() == 4 ? 1 : 0;
  for (int i = 0; i < t.rank(); ++i)
    if (i != channel_axis && t.dim(i) != 1) return {};
  if (t.dim(channel_axis) != co) return {};
  return std::vector<float>(t.data<float>(), t.data<float>() + co);
}

// Conv -> Sub/Mul/Add of per-channel constants (Keras's batch normalisation after constant folding) -> the Conv with
// scaled weights and a bias. Only where the Conv's output has that one consumer.
int FoldConvScaleShift(graph::Graph* g, const std::unordered_set<std::string>& graph_outputs) {
  int folded = 0;
  for (bool again = true; again;) {
    again = false;
    std::unordered_map<std::string, int> uses;
    std::unordered_map<std::string, size_t> consumer;
    for (size_t i = 0; i < g->nodes.size(); ++i)
      for (const std::string& v : g->nodes[i].inputs) {
        ++uses[v];
        consumer[v] = i;
      }
    for (graph::Node& conv : g->nodes) {
      if (!conv.domain.empty() || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
      const std::string y = conv.outputs[0];
      if (uses[y] != 1 || graph_outputs.count(y)) continue;
      graph::Node& next = g->nodes[consumer[y]];
      if (!next.domain.empty() || next.inputs.size() != 2 ||
          (next.op_type != "Mul" && next.op_type != "Add" && !(next.op_type == "Sub" && next.inputs[0] == y)))
        continue;
      const std::string other = next.inputs[0] == y ? next.inputs[1] : next.inputs[0];
      auto w = g->initializers.find(conv.inputs[1]);
      auto k = g->initializers.find(other);
      if (w == g->initializers.end() || k == g->initializers.end() || w->second.dtype() != DType::kFloat32 ||
          w->second.rank() < 3)
        continue;
      const int64_t co = w->second.dim(0);
      const std::vector<float> v = PerChannel(k->second, co);
      if (v.empty()) continue;
      const Tensor* bias = nullptr;
      if (conv.has_input(2)) {
        auto b = g->initializers.find(conv.inputs[2]);
        if (b == g->initializers.end() || b->second.dtype() != DType::kFloat32 || b->second.num_elements() != co) continue;
        bias = &b->second;
      }
      Tensor nb = Tensor::Empty(DType::kFloat32, Shape({co}));
      for (int64_t c = 0; c < co; ++c) nb.data<float>()[c] = bias ? bias->data<float>()[c] : 0.f;
      if (next.op_type == "Mul") {
        Tensor nw = Tensor::Empty(DType::kFloat32, w->second.shape());
        const int64_t per = w->second.num_elements() / co;
        for (int64_t c = 0; c < co; ++c)
          for (int64_t j = 0; j < per; ++j)
            nw.data<float>()[c * per + j] = w->second.data<float>()[c * per + j] * v[c];
        for (int64_t c = 0; c < co; ++c) nb.data<float>()[c] *= v[c];
        const std::string wn = StrCat(conv.name, "/_scaled_w", folded);
        g->initializers[wn] = std::move(nw);
        conv.inputs[1] = wn;
      } else {
        for (int64_t c = 0; c < co; ++c) nb.data<float>()[c] += next.op_type == "Sub" ? -v[c] : v[c];
      }
      const std::string bn = StrCat(conv.name, "/_bias", folded);
      g->initializers[bn] = std::move(nb);
      conv.inputs.resize(3);
      conv.inputs[2] = bn;
      // The Conv now computes the Sub/Mul/Add's value under its name (the Sub/Mul/Add, after the Conv in topological
      // order, goes; its consumers come after it), so a following per-channel op folds next.
      conv.outputs[0] = next.outputs[0];
      g->nodes.erase(g->nodes.begin() + static_cast<std::ptrdiff_t>(consumer[y]));
      ++folded;
      again = true;
      break;  // consumer indices changed meaning: recount
    }
  }
  return folded;
}

// Node `n` (elementwise, its output NHWC) run on NCHW operands `ins` instead, and a Transpose of its result back to
// NHWC under the original output name; the NCHW result is recorded in `nchw_source` for the nodes downstream.
void EmitInNchw(const graph::Node& n, std::vector<std::string> ins,
                std::unordered_map<std::string, std::string>* nchw_source, std::vector<graph::Node>* out) {
  graph::Node e = n;
  e.inputs = std::move(ins);
  e.outputs[0] = n.outputs[0] + "/_nchw";
  graph::Node t;
  t.name = n.name + "/_to_nhwc";
  t.op_type = "Transpose";
  t.opset = n.opset;
  t.attrs["perm"] = graph::Attribute::Ints(kToNhwc);
  t.inputs = {e.outputs[0]};
  t.outputs = {n.outputs[0]};
  (*nchw_source)[n.outputs[0]] = e.outputs[0];
  out->push_back(std::move(e));
  out->push_back(std::move(t));
}

}  // namespace

Status SinkLayoutTransposes(graph::Graph* g) {
  STRATA_RETURN_IF_ERROR(graph::FoldConstants(g));
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : g->outputs) graph_outputs.insert(o.name);
  // value -> the Transpose(0,2,3,1) that produces it: its NCHW input.
  std::unordered_map<std::string, std::string> nchw_source;
  std::vector<graph::Node> out;
  out.reserve(g->nodes.size());
  int changed = 0;
  for (graph::Node& n : g->nodes) {
    if (IsTranspose(n, kToNhwc)) {
      nchw_source[n.outputs[0]] = n.inputs[0];
      out.push_back(std::move(n));
      continue;
    }
    const bool unary = n.domain.empty() && In(n.op_type, kUnary) && n.outputs.size() == 1;
    const bool binary = n.domain.empty() && In(n.op_type, kBinary) && n.inputs.size() == 2 && n.outputs.size() == 1;
    if (unary && !n.inputs.empty() && nchw_source.count(n.inputs[0])) {
      // Elementwise on one NHWC activation (Clip's bounds are scalars): run it on the NCHW value.
      std::vector<std::string> ins = n.inputs;
      ins[0] = nchw_source[n.inputs[0]];
      EmitInNchw(n, std::move(ins), &nchw_source, &out);
      ++changed;
      continue;
    }
    if (binary) {
      // Each operand an NHWC activation (at least one) or a float32 constant of rank <= 4.
      int activations = 0, constants = 0;
      for (size_t i = 0; i < 2; ++i) {
        auto c = g->initializers.find(n.inputs[i]);
        if (nchw_source.count(n.inputs[i]))
          ++activations;
        else if (c != g->initializers.end() && c->second.dtype() == DType::kFloat32 && c->second.rank() <= 4)
          ++constants;
      }
      if (activations > 0 && activations + constants == 2) {
        std::vector<std::string> ins = n.inputs;
        for (size_t i = 0; i < 2; ++i) {
          if (nchw_source.count(n.inputs[i])) {
            ins[i] = nchw_source[n.inputs[i]];
          } else {
            ins[i] = StrCat(n.name, "/_nchw_", i);
            g->initializers[ins[i]] = ToNchwConstant(g->initializers.at(n.inputs[i]));
          }
        }
        EmitInNchw(n, std::move(ins), &nchw_source, &out);
        ++changed;
        continue;
      }
    }
    if (n.domain.empty() && n.op_type == "ReduceMean" && n.inputs.size() == 1 && nchw_source.count(n.inputs[0]) &&
        n.GetInt("keepdims", 1) == 0) {
      // Global average pooling of an NHWC value over H and W: the same [N, C] from the NCHW value over 2 and 3.
      std::vector<int64_t> axes = n.GetInts("axes");
      for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
      std::sort(axes.begin(), axes.end());
      if (axes == std::vector<int64_t>{1, 2}) {
        n.inputs[0] = nchw_source[n.inputs[0]];
        n.attrs["axes"] = graph::Attribute::Ints({2, 3});
        ++changed;
      }
    }
    if (IsTranspose(n, kToNchw) && nchw_source.count(n.inputs[0]) && !graph_outputs.count(n.outputs[0])) {
      // NCHW -> NHWC -> NCHW: the consumers read the NCHW value (renamed below).
      n.op_type = "Identity";
      n.attrs.clear();
      n.inputs[0] = nchw_source[n.inputs[0]];
      ++changed;
    }
    out.push_back(std::move(n));
  }
  g->nodes = std::move(out);
  if (changed > 0) STRATA_RETURN_IF_ERROR(graph::EliminateDeadCode(g));  // the bypassed Transposes' extra uses
  changed += FoldConvScaleShift(g, graph_outputs);
  if (changed == 0) return Status::OK();
  // Identities from cancelled pairs: their consumers read the source directly.
  std::unordered_map<std::string, std::string> alias;
  for (const graph::Node& n : g->nodes)
    if (n.domain.empty() && n.op_type == "Identity" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        !graph_outputs.count(n.outputs[0]) && n.name.find("/_output") == std::string::npos)
      alias[n.outputs[0]] = alias.count(n.inputs[0]) ? alias[n.inputs[0]] : n.inputs[0];
  for (graph::Node& n : g->nodes)
    for (std::string& v : n.inputs)
      if (auto a = alias.find(v); a != alias.end()) v = a->second;
  return graph::EliminateDeadCode(g);
}

}  // namespace strata::tf
