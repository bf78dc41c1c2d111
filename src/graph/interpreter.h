// The reference interpreter: runs a graph node by node with reference kernels, allocating every output as it is
// produced. It is the oracle every optimised path is compared with, and it runs subgraphs (If/Loop/Scan bodies)
// and plan-time constant folding.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ops/op.h"
#include "strata/graph.h"

namespace strata::graph {

// Looks up a value of an enclosing scope by name (null when unknown).
using ValueLookup = std::function<const Tensor*(const std::string&)>;

// Runs `g` on `feeds` and returns its outputs in graph order. Values not defined in `g` are looked up in `outer`.
Status InterpretGraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                      const ValueLookup& outer, Allocator* alloc, std::vector<Tensor>* outputs);

// Runs one node with its reference kernel. `inputs` has one entry per node input (null for omitted ones); outputs
// get one tensor per node output (undefined for unwanted ones).
Status RunNodeReference(const Node& node, const std::vector<const Tensor*>& inputs, const ValueLookup& outer,
                        Allocator* alloc, std::vector<Tensor>* outputs);

// The KernelContext of the interpreter: outputs are freshly allocated tensors.
class DynamicKernelContext : public ops::KernelContext {
 public:
  // `outer` resolves names for subgraphs: this node's scope (and the scopes around it).
  DynamicKernelContext(const Node& node, const std::vector<const Tensor*>& inputs, Allocator* alloc,
                       const ValueLookup* outer);
  StatusOr<Tensor*> Output(int i, DType dtype, const Shape& shape) override;
  void SetOutput(int i, Tensor t) override;
  Allocator* allocator() override { return alloc_; }
  Status RunSubgraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     std::vector<Tensor>* outputs) override;
  std::vector<Tensor>& outputs() { return outputs_; }

 private:
  std::vector<Tensor> outputs_;
  Allocator* alloc_;
  const ValueLookup* outer_;
};

}  // namespace strata::graph
