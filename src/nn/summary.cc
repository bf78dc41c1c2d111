// Model::Summary (a Keras-style table) and Model::ToDot (Graphviz).
#include "nn/model_impl.h"

namespace strata::nn {
namespace {

std::string Pad(std::string s, size_t width) {
  if (s.size() + 1 > width) return s + " ";
  s.resize(width, ' ');
  return s;
}

std::string WithCommas(int64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

int64_t LayerParams(const Layer& l) {
  int64_t n = 0;
  for (const WeightSpec& w : l.weights()) n += w.shape.NumElements();
  return n;
}

std::string Label(const internal::CallNode& n) {
  return n.layer ? StrCat(n.layer->name(), " (", n.layer->type(), ")") : StrCat(n.input_name, " (InputLayer)");
}

}  // namespace

StatusOr<std::string> Model::Summary() const {
  if (!impl_->built) return FailedPreconditionError("model '", impl_->name, "' is not built: call Build() first");
  constexpr size_t kW1 = 32, kW2 = 26, kW3 = 12;
  const std::string rule(kW1 + kW2 + kW3, '_'), double_rule(kW1 + kW2 + kW3, '=');
  std::string out = StrCat("Model: \"", impl_->name, "\"\n", rule, "\n");
  out += Pad(" Layer (type)", kW1) + Pad("Output Shape", kW2) + "Param #\n" + double_rule + "\n";
  std::set<const Layer*> counted;
  for (const auto& n : impl_->order) {
    const auto& specs = impl_->out_specs[n.get()];
    std::string shape;
    if (!n->layer) {
      shape = StrCat("[", n->input_spec.ToString(), "]");
    } else {
      std::vector<std::string> parts;
      for (const TensorSpec& s : specs) parts.push_back(s.ToString());
      shape = parts.size() == 1 ? parts[0] : StrCat("[", StrJoin(parts, ", "), "]");
    }
    // A shared layer's weights are counted at its first call only.
    const int64_t params = n->layer && counted.insert(n->layer.get()).second ? LayerParams(*n->layer) : 0;
    out += Pad(StrCat(" ", Label(*n)), kW1) + Pad(shape, kW2) + WithCommas(params) + "\n";
  }
  const int64_t total = CountParams(false), trainable = CountParams(true);
  out += double_rule + "\n";
  out += StrCat("Total params: ", WithCommas(total), "\n");
  out += StrCat("Trainable params: ", WithCommas(trainable), "\n");
  out += StrCat("Non-trainable params: ", WithCommas(total - trainable), "\n", rule, "\n");
  return out;
}

StatusOr<std::string> Model::ToDot() const {
  if (!impl_->built) return FailedPreconditionError("model '", impl_->name, "' is not built: call Build() first");
  std::string out = StrCat("digraph \"", impl_->name, "\" {\n  rankdir=TB;\n  node [shape=record, fontname=\"Helvetica\"];\n");
  std::map<const internal::CallNode*, int> ids;
  for (const auto& n : impl_->order) {
    const int id = static_cast<int>(ids.size());
    ids[n.get()] = id;
    std::vector<std::string> shapes;
    if (!n->layer) shapes.push_back(n->input_spec.ToString());
    else
      for (const TensorSpec& s : impl_->out_specs[n.get()]) shapes.push_back(s.ToString());
    out += StrCat("  n", id, " [label=\"{", Label(*n), "|", StrJoin(shapes, ", "), "}\"];\n");
  }
  for (const auto& n : impl_->order)
    for (const KerasTensor& in : n->inputs) out += StrCat("  n", ids[in.node().get()], " -> n", ids[n.get()], ";\n");
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    out += StrCat("  out", i, " [shape=oval, label=\"", impl_->outputs[i].name, "\"];\n");
    out += StrCat("  n", ids[impl_->outputs[i].tensor.node().get()], " -> out", i, ";\n");
  }
  return out + "}\n";
}

}  // namespace strata::nn
