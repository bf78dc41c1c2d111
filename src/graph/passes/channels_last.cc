// Regions of convolutions and pools run channels-last: Conv / strata.FusedConv / pools / BatchNormalization become
// strata.ChannelsLast nodes (ops/defs/fused/channels_last.cc) on [N, H, W, C] activations, elementwise ops and
// channel Concats between them work on the transposed values unchanged (broadcasting commutes with a permutation
// applied to every operand), and Transposes convert at the region's edges only. oneDNN's optimised kernels read and
// write nhwc directly, where NCHW costs a reorder of every activation in and out of every convolution.
//
// Training graphs: the gradient ops of those anchors (strata.MaxPoolGrad, AveragePoolGrad, ConvBackwardData,
// ConvBackwardFilter except grouped ones other than depthwise, and training-mode strata.BatchNormalizationGrad) join a
// region when one of their activation inputs is already in it, so the backward pass reads the forward activations where
// they are instead of through a Transpose back to NCHW. ConvBackwardFilter's output is a weight gradient and stays as
// it is (`nhwc_output` = 0). Training-mode BatchNormalization is an anchor too (its running-statistics outputs 1 and 2,
// and the gradient's dScale and dB, are per-channel vectors and keep their names and layout), as are Sum and
// strata.FusedElementwise with every input in the region (gradient sums, residual Add+Relu): without them every
// training-mode batch norm split the region, and each convolution transposed its input and output.
//
// Runs only when strata.ChannelsLast has a fast kernel (otherwise the reference would transpose around every node),
// and only on graphs with a 2-D convolution. Every value involved is float32 and 4-D; a region value read outside the
// region (or a graph output) gets one Transpose back to NCHW under its original name.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/fusion.h"
#include "graph/passes/passes.h"

namespace strata::graph {
namespace {

enum class Role { kNone, kAnchor, kElementwise, kConcat, kPermuted };

constexpr std::string_view kElementwiseOps[] = {
    "Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Softplus", "Clip", "Abs",
    "Neg",  "Sqrt",      "Exp", "Log",  "Add",     "Sub",  "Mul",         "Div",       "Max",      "Min",  "Sum"};

// strata-domain activation gradients (dY, Y -> dX), elementwise like the ops above.
bool IsElementwiseGrad(const Node& n) {
  return n.domain == kStrataDomain && n.inputs.size() == 2 &&
         (n.op_type == "ReluGrad" || n.op_type == "SigmoidGrad" || n.op_type == "TanhGrad" ||
          n.op_type == "HardSwishGrad" || n.op_type == "HardSigmoidGrad" || n.op_type == "SwishGrad");
}

// strata-domain elementwise activations (strata.Swish, which training graphs write for x * sigmoid(x)).
bool IsStrataActivation(const Node& n) {
  return n.domain == kStrataDomain && n.op_type == "Swish" && n.inputs.size() == 1;
}

// strata.FusedElementwise: a chain of broadcasting elementwise ops, as layout-blind as they are when every input is a
// region value or a scalar constant (checked where it joins).
bool IsFusedElementwise(const Node& n) { return n.domain == kStrataDomain && n.op_type == "FusedElementwise"; }

// Training-mode batch normalization (opset >= 14): Y and the optional running mean/var, no saved statistics.
bool IsTrainingBatchNorm(const Node& n) {
  return n.domain.empty() && n.op_type == "BatchNormalization" && n.opset >= 14 && n.GetInt("training_mode", 0) == 1 &&
         n.inputs.size() == 5 && n.outputs.size() <= 3 && !n.outputs.empty() && !n.outputs[0].empty();
}

bool Is4DFloat(const InferredGraph& types, const std::string& v) {
  const ops::ValueType* t = passes::TypeOf(types, v);
  return t != nullptr && t->dtype == DType::kFloat32 && t->shape.rank() == 4;
}

// strata.QuantizedConv and the per-tensor QuantizeLinear/DequantizeLinear of QDQ models carry 8-bit activations.
bool Is4DActivation(const InferredGraph& types, const std::string& v) {
  const ops::ValueType* t = passes::TypeOf(types, v);
  return t != nullptr && t->shape.rank() == 4 &&
         (t->dtype == DType::kFloat32 || t->dtype == DType::kUInt8 || t->dtype == DType::kInt8);
}

bool IsQuantizeOp(const Node& n) {
  return n.domain.empty() && (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear");
}

bool OnlyOutput0(const Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return false;
  return !n.outputs.empty() && !n.outputs[0].empty();
}

// A ConvBackwardFilter (dY, X, w_shape) of a depthwise convolution: one input channel per group (group equal to X's
// channel count). w_shape is usually computed (Shape of a variable); where it is a constant, it must be [group, 1, ...]
// (a depth multiplier above 1 is left channels-first).
bool IsDepthwise(const Graph& g, const Node& n, const InferredGraph& types) {
  const int64_t group = n.GetInt("group", 1);
  const ops::ValueType* x = passes::TypeOf(types, n.inputs[1]);
  if (group <= 1 || x == nullptr || x->shape.rank() != 4 || x->shape.dims[1].value != group) return false;
  const Tensor* w = passes::FindConstant(g, n.inputs[2]);
  if (w == nullptr) return true;
  if (w->rank() != 1 || w->num_elements() != 4 || w->dtype() != DType::kInt64) return false;
  return w->data<int64_t>()[0] == group && w->data<int64_t>()[1] == 1;
}

// Gradient ops that become strata.ChannelsLast when one of their activation inputs is in a region: the activation
// inputs, and whether output 0 is an activation (false for ConvBackwardFilter's weight gradient).
bool IsGradAnchor(const Graph& g, const Node& n, const InferredGraph& types,
                  const std::unordered_set<std::string>& region, std::vector<int>* nhwc_inputs, bool* nhwc_output) {
  if (n.domain != kStrataDomain || n.outputs.empty() || n.outputs[0].empty()) return false;
  *nhwc_output = true;
  if (n.op_type == "MaxPoolGrad" && n.inputs.size() == 2 && OnlyOutput0(n)) {
    *nhwc_inputs = {0, 1};
  } else if (n.op_type == "AveragePoolGrad" && n.inputs.size() == 2 && OnlyOutput0(n)) {
    *nhwc_inputs = {0};
  } else if (n.op_type == "ConvBackwardData" && n.inputs.size() == 3 && OnlyOutput0(n)) {
    *nhwc_inputs = {0};
  } else if (n.op_type == "ConvBackwardFilter" && n.inputs.size() == 3 &&
             (n.GetInt("group", 1) == 1 || IsDepthwise(g, n, types))) {
    // Depthwise filter gradients join too: the hand-written channels-last kernel
    // (depthwise_conv_backward_filter_nhwc.cc) takes them all, also the shapes for which oneDNN 2.6 would pick its
    // slow gemm implementation. Other grouped ones stay channels-first.
    *nhwc_inputs = {0, 1};
    *nhwc_output = false;
  } else if (n.op_type == "BatchNormalizationGrad" && n.GetInt("training_mode", 0) == 1 &&
             n.GetInt("spatial", 1) == 1 && n.inputs.size() >= 3 && n.outputs.size() <= 3) {
    *nhwc_inputs = {0, 1};  // dY, X; dScale and dB (outputs 1, 2) are per channel
  } else {
    return false;
  }
  bool any_in_region = false;
  for (int k : *nhwc_inputs) {
    if (!Is4DFloat(types, n.inputs[k])) return false;
    any_in_region |= region.count(n.inputs[k]) > 0;
  }
  // A ConvBackwardData joins even when dY comes from outside (the head's gradient, through a Reshape or a Mul with a
  // non-scalar operand): its dX feeds the backward pass of the region below, which otherwise started outside it.
  const bool data_grad = n.op_type == "ConvBackwardData";
  return (any_in_region || data_grad) && (!*nhwc_output || Is4DFloat(types, n.outputs[0]));
}

// Nodes that become strata.ChannelsLast, with the inputs that are activations.
bool IsAnchor(const Node& n, const InferredGraph& types, std::vector<int>* nhwc_inputs, bool* is_conv) {
  if (n.domain == kStrataDomain && n.op_type == "QuantizedConv") {
    if (n.inputs.empty() || !OnlyOutput0(n) || !Is4DActivation(types, n.inputs[0]) ||
        !Is4DActivation(types, n.outputs[0]))
      return false;
    *nhwc_inputs = {0};
    if (n.has_input(6)) {
      if (!Is4DActivation(types, n.inputs[6])) return false;
      nhwc_inputs->push_back(6);
    }
    *is_conv = true;
    return true;
  }
  if (IsTrainingBatchNorm(n)) {
    if (!Is4DFloat(types, n.inputs[0]) || !Is4DFloat(types, n.outputs[0])) return false;
    *is_conv = false;
    *nhwc_inputs = {0};
    return true;
  }
  if (n.inputs.empty() || n.inputs[0].empty() || !OnlyOutput0(n) || !Is4DFloat(types, n.inputs[0]) ||
      !Is4DFloat(types, n.outputs[0]))
    return false;
  *is_conv = false;
  *nhwc_inputs = {0};
  if (n.domain == kStrataDomain && n.op_type == "FusedConv") {
    if (n.GetInt("transpose", 0) != 0) return false;
    if (n.has_input(3)) {
      if (!Is4DFloat(types, n.inputs[3])) return false;
      nhwc_inputs->push_back(3);
    }
    *is_conv = true;
    return true;
  }
  if (!n.domain.empty()) return false;
  if (n.op_type == "Conv") {
    *is_conv = true;
    return true;
  }
  if (n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool" ||
      n.op_type == "GlobalMaxPool")
    return true;
  if (n.op_type == "BatchNormalization")
    return n.inputs.size() == 5 && n.GetInt("training_mode", 0) == 0 && n.opset >= 9;
  return false;
}

// A value of one element whatever its layout (rank at most 4, every dim 1), computed or constant: the mean
// gradient's divisor (the pooled area, computed when the batch is not known at autodiff time) broadcasts the same
// over NHWC as over NCHW.
bool IsScalar(const InferredGraph& types, const std::string& v) {
  const ops::ValueType* t = passes::TypeOf(types, v);
  if (t == nullptr || !t->shape.rank_known || t->shape.rank() > 4) return false;
  for (const Dim& d : t->shape.dims)
    if (d.value != 1) return false;
  return true;
}

bool IsScalarConstant(const Graph& g, const std::string& v) {
  const Tensor* t = passes::FindConstant(g, v);
  return t != nullptr && t->num_elements() == 1 && t->rank() <= 4;
}

// 4-D values with one element per sample ([N, 1, 1, 1]): the same bytes and the same broadcast over NHWC as over
// NCHW. Stochastic depth's per-sample scale (Keras's Dropout with noise_shape (None, 1, 1, 1)) is one; without this
// its Mul, and the residual Add after it, split every such block's region in the forward and the backward pass. Its
// shape is computed (Concat of the batch size and [1, 1, 1]: type inference sees only a 4-D value), so besides the
// values typed [N, 1, 1, 1] this follows ConstantOfShape of such a Concat and the strata.SeededDropout of one.
std::unordered_set<std::string> PerSampleValues(const Graph& g, const InferredGraph& types) {
  std::unordered_set<std::string> out;
  const auto typed = [&](const std::string& v) {
    const ops::ValueType* t = passes::TypeOf(types, v);
    if (t == nullptr || !t->shape.rank_known || t->shape.rank() != 4) return false;
    for (int i = 1; i < 4; ++i)
      if (t->shape.dims[i].value != 1) return false;
    return true;
  };
  const auto one_element = [&](const std::string& v) {
    const ops::ValueType* t = passes::TypeOf(types, v);
    return t != nullptr && t->shape.rank_known && t->shape.rank() == 1 && t->shape.dims[0].value == 1;
  };
  std::unordered_set<std::string> batch_ones;  // int64 [n, 1, 1, 1] shapes
  for (const Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty()) continue;
    if (n.domain.empty() && n.op_type == "Concat" && n.GetInt("axis", -1) == 0 && n.inputs.size() == 2 &&
        one_element(n.inputs[0])) {
      const Tensor* c = passes::FindConstant(g, n.inputs[1]);
      if (c != nullptr && c->dtype() == DType::kInt64 && c->rank() == 1 && c->num_elements() == 3 &&
          std::all_of(c->data<int64_t>(), c->data<int64_t>() + 3, [](int64_t d) { return d == 1; }))
        batch_ones.insert(n.outputs[0]);
    } else if (n.domain.empty() && n.op_type == "ConstantOfShape" && n.inputs.size() == 1 &&
               batch_ones.count(n.inputs[0])) {
      out.insert(n.outputs[0]);
    } else if (n.domain == kStrataDomain && n.op_type == "SeededDropout" && !n.inputs.empty() &&
               out.count(n.inputs[0])) {
      for (const std::string& o : n.outputs)
        if (!o.empty()) out.insert(o);
    }
    for (const std::string& o : n.outputs)
      if (!o.empty() && typed(o)) out.insert(o);
  }
  for (const ValueInfo& vi : g.inputs)
    if (typed(vi.name)) out.insert(vi.name);
  return out;
}

// 4-D values [N, C, 1, 1] (their transpose to NHWC is a view): typed so, or a Reshape to the computed Shape of such a
// value (global pooling's gradient dY, reshaped back from squeeze-and-excite's flat [N, C] by autodiff), and such a
// value times or divided by a one-element one.
std::unordered_set<std::string> PooledValues(const Graph& g, const InferredGraph& types,
                                             const std::unordered_map<std::string, std::string>& shape_of) {
  const auto typed = [&](const std::string& v) {
    const ops::ValueType* t = passes::TypeOf(types, v);
    return t != nullptr && t->shape.rank_known && t->shape.rank() == 4 && t->shape.dims[2].value == 1 &&
           t->shape.dims[3].value == 1;
  };
  std::unordered_set<std::string> out;
  for (const Node& n : g.nodes) {
    if (!OnlyOutput0(n)) continue;
    if (typed(n.outputs[0])) {
      out.insert(n.outputs[0]);
    } else if (n.domain.empty() && n.op_type == "Reshape" && n.inputs.size() == 2) {
      auto it = shape_of.find(n.inputs[1]);
      if (it != shape_of.end() && typed(it->second)) out.insert(n.outputs[0]);
    } else if (n.domain.empty() && (n.op_type == "Div" || n.op_type == "Mul") && n.inputs.size() == 2 &&
               out.count(n.inputs[0]) && (IsScalarConstant(g, n.inputs[1]) || IsScalar(types, n.inputs[1]))) {
      out.insert(n.outputs[0]);  // ... divided by the pooled area
    }
  }
  return out;
}

// Ops that take a region value and an input 1 that names its axes in NCHW order, and are layout-free once that input
// is permuted to NHWC (role kPermuted; `values` gets a constant input 1, and stays empty for a computed shape, which
// the rewrite permutes with a Gather):
//  - Pad (opset >= 11, any mode, no axes input) with 8 constant pads and a scalar constant value (or none): Keras's
//    ZeroPadding2D before MobileNetV3's stride-2 depthwise layers, and its gradient (a Pad with negated pads);
//  - strata.ReduceSumTo and Expand to a 4-D shape, constant or computed: the gradients of broadcasting Muls
//    (squeeze-and-excite's [N, C, 1, 1] scale; swish's x * sigmoid(x), where the "reduction" is to the same shape,
//    a view) and of GlobalAveragePool. Without this each of them transposed its full-size input out of the region and
//    back. An Expand also joins with an input from outside the region when that input is [N, C, 1, 1] (its
//    transpose in is a view) and it expands to the computed Shape of a region value: GlobalAveragePool's gradient,
//    whose dY comes back through squeeze-and-excite's Reshapes outside the region.
bool IsPermutedConstantOp(const Graph& g, const Node& n, const InferredGraph& types,
                          const std::unordered_set<std::string>& region,
                          const std::unordered_map<std::string, std::string>& shape_of,
                          const std::unordered_set<std::string>& pooled, std::vector<int64_t>* values) {
  if (!OnlyOutput0(n) || n.inputs.size() < 2 || !Is4DFloat(types, n.outputs[0])) return false;
  const bool pad = n.domain.empty() && n.op_type == "Pad";
  const bool to_shape =
      (n.domain.empty() && n.op_type == "Expand") || (n.domain == kStrataDomain && n.op_type == "ReduceSumTo");
  if (!pad && !to_shape) return false;
  if (region.count(n.inputs[0]) == 0) {
    auto shape = shape_of.find(n.inputs[1]);
    const bool pooled_in = n.op_type == "Expand" && Is4DFloat(types, n.inputs[0]) && pooled.count(n.inputs[0]) &&
                           shape != shape_of.end() && region.count(shape->second) > 0;
    if (!pooled_in) return false;
  }
  const Tensor* c = passes::FindConstant(g, n.inputs[1]);
  if (c != nullptr) {
    if (c->dtype() != DType::kInt64 || c->rank() != 1) return false;
    values->assign(c->data<int64_t>(), c->data<int64_t>() + c->num_elements());
  } else if (to_shape) {
    // A computed shape (the gradients' Shape(v), batch unknown when the plan is made): permuted at run time by a
    // Gather; values stay empty.
    const ops::ValueType* t = passes::TypeOf(types, n.inputs[1]);
    if (t == nullptr || t->dtype != DType::kInt64 || t->shape.rank() != 1 || t->shape.dims[0].value != 4) return false;
    values->clear();
    return n.inputs.size() == 2;
  } else {
    return false;
  }
  if (pad) {
    return n.opset >= 11 && n.inputs.size() <= 3 && values->size() == 8 &&
           (n.inputs.size() < 3 || n.inputs[2].empty() || IsScalarConstant(g, n.inputs[2]));
  }
  return n.inputs.size() == 2 && values->size() == 4;
}

}  // namespace

Status ConvertToChannelsLast(Graph* g) {
  const ops::OpSchema* wrapper = ops::OpRegistry::Global().Find(kStrataDomain, "ChannelsLast");
  if (wrapper == nullptr || wrapper->kernels.empty()) return Status::OK();
  // Regions grow from convolutions: without one there is nothing to do (and no need to infer types).
  const bool has_conv = std::any_of(g->nodes.begin(), g->nodes.end(), [](const Node& n) {
    return (n.domain.empty() && n.op_type == "Conv") ||
           (n.domain == kStrataDomain && (n.op_type == "FusedConv" || n.op_type == "QuantizedConv"));
  });
  if (!has_conv) return Status::OK();
  InferredGraph types;
  if (!passes::InferTypes(*g, &types)) return Status::OK();
  const passes::Uses uses = passes::CollectUses(*g);
  const size_t n = g->nodes.size();

  // Roles, in topological order: an elementwise op or Concat joins when all its data inputs are region values.
  std::vector<Role> role(n, Role::kNone);
  std::vector<std::vector<int>> nhwc_inputs(n);
  std::vector<bool> nhwc_output(n, true);
  std::unordered_set<std::string> region;         // values (original names) held channels-last
  std::unordered_map<std::string, std::string> shape_of;  // the output of a plain Shape node -> its input
  const std::unordered_set<std::string> per_sample = PerSampleValues(*g, types);
  for (const Node& node : g->nodes)
    if (node.domain.empty() && node.op_type == "Shape" && node.inputs.size() == 1 && OnlyOutput0(node) &&
        !node.HasAttr("start") && !node.HasAttr("end"))
      shape_of[node.outputs[0]] = node.inputs[0];
  const std::unordered_set<std::string> pooled = PooledValues(*g, types, shape_of);
  std::vector<std::vector<int64_t>> permuted(n);  // kPermuted: the constant pads or shape, NCHW order (or none)
  bool any_conv = false;
  for (size_t i = 0; i < n; ++i) {
    const Node& node = g->nodes[i];
    bool is_conv = false, out_nhwc = true;
    if (IsAnchor(node, types, &nhwc_inputs[i], &is_conv)) {
      role[i] = Role::kAnchor;
      any_conv |= is_conv;
    } else if (IsGradAnchor(*g, node, types, region, &nhwc_inputs[i], &out_nhwc)) {
      role[i] = Role::kAnchor;
      nhwc_output[i] = out_nhwc;
    } else if (IsPermutedConstantOp(*g, node, types, region, shape_of, pooled, &permuted[i])) {
      role[i] = Role::kPermuted;
      nhwc_inputs[i] = {0};
    } else if ((node.domain.empty() || IsElementwiseGrad(node) || IsFusedElementwise(node) ||
                IsStrataActivation(node)) &&
               OnlyOutput0(node) &&
               (IsQuantizeOp(node) ? Is4DActivation(types, node.outputs[0]) : Is4DFloat(types, node.outputs[0]))) {
      const bool concat = node.domain.empty() && node.op_type == "Concat" &&
                          (node.GetInt("axis", -100) == 1 || node.GetInt("axis", -100) == -3);
      // A per-tensor QuantizeLinear/DequantizeLinear is elementwise (its scale and zero point are scalar constants,
      // checked below); a per-axis one is not (a non-scalar constant fails that check).
      const bool elementwise =
          IsElementwiseGrad(node) || IsFusedElementwise(node) || IsQuantizeOp(node) || IsStrataActivation(node) ||
          (node.domain.empty() &&
           std::find(std::begin(kElementwiseOps), std::end(kElementwiseOps), node.op_type) != std::end(kElementwiseOps));
      if (!concat && !elementwise) continue;
      // Input 0 must be a region value, except for the backward pass's activation gradients and gradient Sums:
      // those join when any input is, and their other computed 4-D inputs are transposed in (the head's ReluGrad
      // reads a gradient from outside the region and the forward activation inside it; without this it and every
      // Sum after it would split the backward region).
      const bool backward_join = IsElementwiseGrad(node) || (node.domain.empty() && node.op_type == "Sum");
      bool ok = node.has_input(0) && (backward_join || region.count(node.inputs[0]) > 0);
      bool any_in_region = false;
      std::vector<int> data;
      for (size_t k = 0; ok && k < node.inputs.size(); ++k) {
        const std::string& v = node.inputs[k];
        if (v.empty()) continue;
        if (region.count(v)) {
          data.push_back(static_cast<int>(k));
          any_in_region = true;
        } else if (backward_join && Is4DFloat(types, v) && passes::FindConstant(*g, v) == nullptr) {
          data.push_back(static_cast<int>(k));
        } else if (concat || !(IsScalarConstant(*g, v) || IsScalar(types, v) || per_sample.count(v) > 0)) {
          ok = false;
        }
      }
      if (!ok || !any_in_region) continue;
      role[i] = concat ? Role::kConcat : Role::kElementwise;
      nhwc_inputs[i] = std::move(data);
    }
    if (role[i] != Role::kNone && nhwc_output[i]) region.insert(node.outputs[0]);
  }
  if (!any_conv) return Status::OK();

  // Rewrite: region outputs get channels-last names; Transposes at the edges.
  std::unordered_set<std::string> used;
  for (const auto& [name, t] : g->initializers) used.insert(name);
  for (const ValueInfo& v : g->inputs) used.insert(v.name);
  for (const Node& node : g->nodes)
    for (const std::string& o : node.outputs) used.insert(o);
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; used.count(name); ++k) name = StrCat(base, "_", k);
    used.insert(name);
    return name;
  };
  std::unordered_map<std::string, std::string> nhwc_name;  // original value -> its channels-last value
  std::vector<Node> out;
  out.reserve(n + 8);
  auto transpose = [&](const std::string& from, const std::string& to, std::vector<int64_t> perm) {
    Node t;
    t.name = to;
    t.op_type = "Transpose";
    t.opset = 13;
    t.inputs = {from};
    t.outputs = {to};
    t.attrs["perm"] = Attribute::Ints(std::move(perm));
    out.push_back(std::move(t));
  };
  // Shape readers of region values (the gradients' shape operands) read the channels-last value and permute its
  // shape back: Shape(v_nhwc) then Gather [0, 3, 1, 2], instead of a Transpose of the whole activation.
  std::unordered_map<int, std::string> shape_readers;  // node -> the channels-last value it reads
  // Size readers (the mean gradients' element counts) read the channels-last value as it is: same element count.
  std::unordered_map<int, std::string> size_readers;
  std::string nchw_order, nhwc_order;
  for (size_t i = 0; i < n; ++i) {
    Node node = std::move(g->nodes[i]);
    if (role[i] == Role::kNone) {
      auto size_fix = size_readers.find(static_cast<int>(i));
      if (size_fix != size_readers.end()) node.inputs[0] = size_fix->second;
      auto fix = shape_readers.find(static_cast<int>(i));
      if (fix != shape_readers.end()) {
        if (nchw_order.empty()) {
          nchw_order = fresh("channels_last/nchw_order");
          g->initializers[nchw_order] = Tensor::FromVector<int64_t>({0, 3, 1, 2});
        }
        const std::string shape = node.outputs[0];
        node.inputs[0] = fix->second;
        node.outputs[0] = fresh(shape + "__nhwc");
        Node gather;
        gather.name = fresh(node.name + "/nchw_order");
        gather.op_type = "Gather";
        gather.opset = 13;
        gather.inputs = {node.outputs[0], nchw_order};
        gather.outputs = {shape};
        out.push_back(std::move(node));
        out.push_back(std::move(gather));
        continue;
      }
      out.push_back(std::move(node));
      continue;
    }
    for (int k : nhwc_inputs[i]) {
      std::string& v = node.inputs[k];
      auto it = nhwc_name.find(v);
      if (it == nhwc_name.end()) {  // a plain value entering the region
        const std::string name = fresh(v + "__nhwc");
        transpose(v, name, {0, 2, 3, 1});
        it = nhwc_name.emplace(v, name).first;
      }
      v = it->second;
    }
    const std::string original = node.outputs[0];
    const std::string renamed = nhwc_output[i] ? fresh(original + "__nhwc") : original;
    if (nhwc_output[i]) nhwc_name[original] = renamed;
    node.outputs[0] = renamed;
    if (role[i] == Role::kAnchor) {
      node.attrs["op"] = Attribute::String(node.op_type);
      if (!node.domain.empty()) node.attrs["op_domain"] = Attribute::String(node.domain);
      std::vector<int64_t> ins(nhwc_inputs[i].begin(), nhwc_inputs[i].end());
      node.attrs["nhwc_inputs"] = Attribute::Ints(std::move(ins));
      if (!nhwc_output[i]) node.attrs["nhwc_output"] = Attribute::Int(0);
      node.op_type = "ChannelsLast";
      node.domain = std::string(kStrataDomain);
    } else if (role[i] == Role::kConcat) {
      node.attrs["axis"] = Attribute::Int(3);
    } else if (role[i] == Role::kPermuted) {
      // A shape [n, c, h, w] -> [n, h, w, c]; pads [n, c, h, w begins, then ends] likewise, each half.
      const std::vector<int64_t>& p = permuted[i];
      if (p.empty()) {  // a computed shape: Gather [0, 2, 3, 1] of it
        if (nhwc_order.empty()) {
          nhwc_order = fresh("channels_last/nhwc_order");
          g->initializers[nhwc_order] = Tensor::FromVector<int64_t>({0, 2, 3, 1});
        }
        Node gather;
        gather.name = fresh(node.name + "/nhwc_order");
        gather.op_type = "Gather";
        gather.opset = 13;
        gather.inputs = {node.inputs[1], nhwc_order};
        gather.outputs = {fresh(node.inputs[1] + "__nhwc")};
        node.inputs[1] = gather.outputs[0];
        out.push_back(std::move(gather));
      } else {
        std::vector<int64_t> nhwc = {p[0], p[2], p[3], p[1]};
        if (p.size() == 8) nhwc.insert(nhwc.end(), {p[4], p[6], p[7], p[5]});
        const std::string name = fresh(node.name + "/nhwc_order");
        g->initializers[name] = Tensor::FromVector<int64_t>(nhwc);
        node.inputs[1] = name;
      }
    }
    out.push_back(std::move(node));
    if (!nhwc_output[i]) continue;
    // Readers outside the region (or the graph's outputs) keep the NCHW value under its name.
    bool outside = uses.pinned.count(original) > 0;
    auto readers = uses.readers.find(original);
    if (readers != uses.readers.end())
      for (const auto& [reader, input] : readers->second) {
        if (role[reader] != Role::kNone) continue;
        const Node& r = g->nodes[reader];  // a later node, not moved yet
        if (r.domain.empty() && r.op_type == "Shape" && r.inputs.size() == 1 && OnlyOutput0(r) && !r.HasAttr("start") &&
            !r.HasAttr("end")) {
          shape_readers[reader] = renamed;
          continue;
        }
        if (r.domain.empty() && r.op_type == "Size" && r.inputs.size() == 1 && OnlyOutput0(r)) {
          size_readers[reader] = renamed;
          continue;
        }
        outside = true;
      }
    if (outside) transpose(renamed, original, {0, 3, 1, 2});
  }
  g->nodes = std::move(out);
  return Status::OK();
}

}  // namespace strata::graph
