// Graph-level type/shape inference with constant folding: the first step of compiling a plan, and what
// `strata inspect` prints.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ops/op.h"
#include "strata/graph.h"

namespace strata::graph {

struct InferOptions {
  // Evaluate nodes whose inputs are all known (initializers, Constants, folded values) with reference kernels,
  // and Shape/Size of values whose shape is fully known.
  bool fold_constants = true;
  // Do not fold values larger than this (they would bloat the plan).
  size_t max_fold_bytes = size_t{64} << 20;
};

struct InferredGraph {
  std::unordered_map<std::string, ops::ValueType> types;  // every value; .value points into `constants`
  std::unordered_map<std::string, Tensor> constants;      // initializers and folded values
  std::vector<bool> folded;                               // per node of the graph: computed at plan time
};

// `inputs` gives the type of every graph input (a concrete shape when specialising a plan). Nodes must be in
// topological order. Errors name the node.
Status InferGraph(const Graph& g, const std::vector<ValueInfo>& inputs, const InferOptions& options,
                  InferredGraph* out);

}  // namespace strata::graph
