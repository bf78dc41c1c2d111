// Chain walking for the fusion passes: starting at a node, follow its output through sole readers (an Add, an
// activation) and replace the whole chain with one fused node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass_util.h"
#include "ops/defs/fused/activation.h"

namespace strata::graph::passes {

// The inferred type of a value, or null.
const ops::ValueType* TypeOf(const InferredGraph& types, const std::string& name);

class Chain {
 public:
  // The chain starts with node `start`; its output 0 is the current value. `frozen` marks nodes already removed or
  // rewritten by earlier chains (their readers and inputs are stale in `uses`): a chain never absorbs them, and
  // Commit adds its own.
  Chain(Graph& g, const Uses& uses, int start, std::vector<bool>* frozen);

  // When the sole reader of the current value is a two-input ONNX Add, true with its other operand.
  bool NextIsAdd(std::string* other) const;
  // When the sole reader of the current value is a two-input ONNX Add, Sub, Mul or Div (opset 7 or later), true with
  // the op, its other operand and the position (0 or 1) of the current value.
  bool NextBinary(std::string* op, std::string* other, int* position) const;
  // When the sole reader of the current value is an activation ops/defs/fused/activation.h lists (Clip needs
  // constant min/max), that activation.
  std::optional<ops::Activation> NextActivation() const;
  // The sole reader of the current value (a node with one output), or -1.
  int NextNode() const { return Next(); }
  // Takes the sole reader into the chain: its output becomes the current value.
  void Absorb();

  int length() const { return static_cast<int>(absorbed_.size()); }
  const std::string& value() const { return value_; }
  // Writes `fused` (its outputs set to the current value) in place of the last absorbed node and marks the start
  // node and the other absorbed nodes dead. The caller removes the dead nodes afterwards.
  void Commit(Node fused, std::vector<bool>* dead);

 private:
  // The sole reader of the current value (reading it as input `input`), or -1.
  int Next(int* input = nullptr) const;

  Graph& g_;
  const Uses& uses_;
  std::vector<bool>* frozen_;
  int start_;
  std::string value_;
  std::vector<int> absorbed_;
};

}  // namespace strata::graph::passes
