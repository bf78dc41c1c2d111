// Helpers shared by the fusion passes: who reads each value, constants, value types, fresh names.
#pragma once

#include <string>
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

// A name not yet used by any value of `g`, derived from `base`.
std::string FreshName(const Graph& g, const std::string& base);

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
