#include "graph/passes/fusion.h"

namespace strata::graph::passes {

const ops::ValueType* TypeOf(const InferredGraph& types, const std::string& name) {
  auto it = types.types.find(name);
  return it == types.types.end() ? nullptr : &it->second;
}

Chain::Chain(Graph& g, const Uses& uses, int start, std::vector<bool>* frozen)
    : g_(g), uses_(uses), frozen_(frozen), start_(start) {
  value_ = g.nodes[start].outputs[0];
}

int Chain::Next(int* input) const {
  const int r = SoleReader(uses_, value_);
  if (r < 0 || (*frozen_)[r]) return -1;
  const Node& n = g_.nodes[r];
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] == value_ && input != nullptr) *input = static_cast<int>(i);
  if (n.outputs.empty() || n.outputs[0].empty()) return -1;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return -1;
  return r;
}

bool Chain::NextIsAdd(std::string* other) const {
  int input = -1;
  const int r = Next(&input);
  if (r < 0) return false;
  const Node& n = g_.nodes[r];
  if (!n.domain.empty() || n.op_type != "Add" || n.inputs.size() != 2 || n.inputs[0].empty() || n.inputs[1].empty())
    return false;
  *other = n.inputs[1 - input];
  return *other != value_;
}

bool Chain::NextBinary(std::string* op, std::string* other, int* position) const {
  int input = -1;
  const int r = Next(&input);
  if (r < 0) return false;
  const Node& n = g_.nodes[r];
  if (!n.domain.empty() || n.opset < 7 || n.inputs.size() != 2 || n.inputs[0].empty() || n.inputs[1].empty())
    return false;
  if (n.op_type != "Add" && n.op_type != "Sub" && n.op_type != "Mul" && n.op_type != "Div") return false;
  *op = n.op_type;
  *other = n.inputs[1 - input];
  *position = input;
  return *other != value_;
}

std::optional<ops::Activation> Chain::NextActivation() const {
  int input = -1;
  const int r = Next(&input);
  if (r < 0 || input != 0) return std::nullopt;
  const Node& n = g_.nodes[r];
  const Tensor* lo = n.has_input(1) ? FindConstant(g_, n.inputs[1]) : nullptr;
  const Tensor* hi = n.has_input(2) ? FindConstant(g_, n.inputs[2]) : nullptr;
  return ops::ActivationOfNode(n, lo, hi);
}

void Chain::Absorb() {
  const int r = Next();
  STRATA_CHECK(r >= 0, "Chain::Absorb without a sole reader");
  absorbed_.push_back(r);
  value_ = g_.nodes[r].outputs[0];
}

void Chain::Commit(Node fused, std::vector<bool>* dead) {
  STRATA_CHECK(!absorbed_.empty(), "Chain::Commit of an empty chain");
  fused.outputs = {value_};
  (*dead)[start_] = true;
  for (size_t i = 0; i + 1 < absorbed_.size(); ++i) (*dead)[absorbed_[i]] = true;
  (*frozen_)[start_] = true;
  for (int i : absorbed_) (*frozen_)[i] = true;
  g_.nodes[absorbed_.back()] = std::move(fused);
}

}  // namespace strata::graph::passes
