// Layout clean-up of an imported SavedModel graph. The importer keeps TF's NHWC layout between ops and wraps each
// convolution and pool in Transposes (NHWC -> NCHW -> NHWC); a Keras CNN then runs a Transpose pair around every
// layer, which at batch 32 cost more than the convolutions (bench/tf/inference.py).
#pragma once

#include "strata/graph.h"

namespace strata::tf {

// Folds constants (Keras's batch normalisation arithmetic on variables becomes per-channel initializers), then sinks
// every Transpose(0,2,3,1) through the elementwise ops after it (unary activations; Add/Sub/Mul/Div/Max/Min/Pow whose
// other operand is an activation in the same state or a float32 constant of rank <= 4, which is permuted to match),
// through a ReduceMean over H and W (keepdims 0), and cancels it against a following Transpose(0,3,1,2). Values
// read elsewhere keep their NHWC names (a Transpose recreates them); dead nodes are removed. `g` must be
// topologically sorted; it stays so.
Status SinkLayoutTransposes(graph::Graph* g);

}  // namespace strata::tf
