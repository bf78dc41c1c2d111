// Reverse-mode automatic differentiation over the IR: graph to graph. Each op's gradient function (OpSchema::grad)
// emits ordinary IR nodes (ONNX ops and `strata`-domain helpers such as ReluGrad), so a training graph is an
// ordinary graph: same executor, same passes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "strata/graph.h"

namespace strata::graph {

struct GradientOptions {
  // Opset of the default domain used for emitted ONNX nodes.
  int onnx_opset = 17;
  // Prefix of every emitted node and value name.
  std::string prefix = "grad";
};

// Appends to `g` the nodes that compute d(loss)/d(v) for every v in `wrt` (graph inputs or initializers of a
// floating-point type). `loss` must be a scalar (or one-element) floating-point value. On return `grads` maps each
// name in `wrt` to the name of its gradient value; values the loss does not depend on get zeros. Errors name the
// node whose op has no gradient. The graph is left topologically sorted.
Status BuildGradients(Graph* g, const std::string& loss, const std::vector<std::string>& wrt,
                      const GradientOptions& options, std::map<std::string, std::string>* grads);

}  // namespace strata::graph
