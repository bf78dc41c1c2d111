// Small graphs for pass tests, and the check every pass test makes: the rewritten graph computes what the original
// computes (reference interpreter on both; the Session with fast kernels and passes on the original too).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/passes/passes.h"
#include "strata/graph.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {

class GraphBuilder {
 public:
  GraphBuilder() { model_.opset_imports[""] = 17; }
  // A graph input (its shape may use symbols: Dim::Symbol("batch")).
  GraphBuilder& Input(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    model_.graph.inputs.push_back({name, dtype, PartialShape::Of(std::move(dims))});
    return *this;
  }
  GraphBuilder& Constant(const std::string& name, Tensor t) {
    model_.graph.initializers[name] = std::move(t);
    return *this;
  }
  GraphBuilder& Node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                     graph::AttributeMap attrs = {}, int opset = 17) {
    graph::Node n;
    n.name = StrCat(op, "_", model_.graph.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    n.opset = opset;
    model_.graph.nodes.push_back(std::move(n));
    return *this;
  }
  GraphBuilder& Output(const std::string& name) {
    model_.graph.outputs.push_back({name, DType::kUndefined, PartialShape::Unknown()});
    return *this;
  }
  const graph::Model& model() const { return model_; }

 private:
  graph::Model model_;
};

// Node count of each op type ("strata.FusedConv" for strata-domain ops).
std::map<std::string, int> OpCounts(const graph::Graph& g);

// Runs `pass` on a copy of `model`; checks that the rewritten graph computes the original's outputs on `feeds`
// (reference interpreter, rtol/atol), and that a Session with fast kernels and the default passes does too.
// Returns the rewritten graph.
graph::Graph CheckPass(const graph::Model& model, const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::function<Status(graph::Graph*)>& pass, double rtol = 1e-4, double atol = 1e-5);

}  // namespace strata::testing
