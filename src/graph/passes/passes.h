// Graph optimisation passes, one per file. Each takes a topologically sorted graph and keeps it sorted and
// semantically equal (tests compare every pass against the reference interpreter).
#pragma once

#include "strata/graph.h"

namespace strata::graph {

// Evaluates nodes whose inputs are all initializers and turns their outputs into initializers.
Status FoldConstants(Graph* g);
// Removes nodes whose outputs reach no graph output, and initializers nothing reads.
Status EliminateDeadCode(Graph* g);

// The default pipeline used by Session when SessionOptions::optimize is set.
Status RunDefaultPasses(Graph* g, const SessionOptions& options);

}  // namespace strata::graph
