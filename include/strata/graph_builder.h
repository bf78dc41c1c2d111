// graph::Builder: appends IR nodes and constants to a Graph under a name prefix. It is how code outside the library
// emits graph nodes: custom losses (nn::Loss::Custom) and the update rules of Optimizer subclasses
// (optim::Optimizer::BuildUpdate). Ops are ONNX's (opset 17) or strata's training helpers (domain "strata"); every op
// that has a gradient (docs/engine.md) lets a custom loss train through autodiff.
//
//   graph::Builder b(&g, "loss/y");
//   std::string diff = b.Emit1("Sub", {y_pred, y_true});
//   std::string loss = b.Emit1("ReduceMean", {b.Emit1("Mul", {diff, diff})}, {{"keepdims", graph::Attribute::Int(0)}});
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/graph.h"
#include "strata/tensor.h"

namespace strata::graph {

class Builder {
 public:
  // Node and constant names are "<prefix>/<op or 'const'>_<n>": the caller gives a prefix that no other value of `g`
  // starts with (the trainer and the optimizer do: "loss/<output>", "optimizer/<variable>/update").
  Builder(Graph* g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {}

  // Adds one node ("" = the ONNX domain at opset 17, "strata" at 1) and returns the names of its outputs.
  std::vector<std::string> Emit(std::string_view op, std::vector<std::string> inputs, AttributeMap attrs = {},
                                int num_outputs = 1, std::string_view domain = "");
  std::string Emit1(std::string_view op, std::vector<std::string> inputs, AttributeMap attrs = {},
                    std::string_view domain = "") {
    return Emit(op, std::move(inputs), std::move(attrs), 1, domain)[0];
  }
  // A constant (a graph initializer) and its name.
  std::string Constant(Tensor value);
  // A float32 scalar constant.
  std::string Scalar(float value);

  Graph& graph() { return *g_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string NextName(std::string_view stem);
  Graph* g_;
  std::string prefix_;
  int counter_ = 0;
};

}  // namespace strata::graph
