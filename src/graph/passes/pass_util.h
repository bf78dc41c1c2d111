// Helpers shared by the fusion passes: who reads each value, constants, value types, fresh names.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/infer.h"
#include "strata/graph.h"

namespace strata::graph::passes {

// Readers of every value: (node index, input index) pairs. Graph outputs and names read by subgraphs (If/Loop/Scan
// bodies reach outer values by name) are "pinned": a pass must not remove or rename them.
struct Uses {
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> readers;
  std::unordered_set<std::string> pinned;
};
Uses CollectUses(const Graph& g);

// The node that is the only reader of `value`, or -1 (no reader, several, or pinned).
int SoleReader(const Uses& uses, const std::string& value);

// The initializer called `name` (null when it is not one, or a graph input overrides it).
const Tensor* FindConstant(const Graph& g, const std::string& name);

// Fresh value names for one run of a pass: names not yet used by any value of the graph, derived from a base. The
// graph's names are collected once, on the first call, and each name handed out is remembered, so a pass that makes
// k names in a graph of n values does O(n + k) work (collecting them per call made long chains of fusions O(n k)).
class FreshNames {
 public:
  explicit FreshNames(const Graph& g) : g_(g) {}
  std::string Make(const std::string& base);

 private:
  const Graph& g_;
  bool collected_ = false;
  std::unordered_set<std::string> used_;
};

// Whether some node of `g` (not of its subgraphs) is an ONNX-domain op of one of these types: passes whose pattern
// starts with such an op return at once when there is none, without inferring the graph's types.
bool HasOnnxOp(const Graph& g, std::initializer_list<std::string_view> op_types);

// Types of the graph's values for the passes (inferred from the declared input types; symbolic dims kept).
// Returns false when inference fails: the passes then leave the graph alone.
bool InferTypes(const Graph& g, InferredGraph* out);

// True when both shapes are known to be equal (same rank, each dim equal or the same symbol).
bool SameShape(const PartialShape& a, const PartialShape& b);

// True when `c` provably broadcasts to `y` without changing y's shape: rank(c) <= rank(y) and each of c's dims is 1
// or equal to y's (same value or same symbol).
bool BroadcastsInto(const PartialShape& c, const PartialShape& y);

// Removes the nodes whose index is in `dead` (keeps order).
void RemoveNodes(Graph* g, const std::vector<bool>& dead);

}  // namespace strata::graph::passes
