// The op graph TensorBoard's Graphs dashboard shows, built from strata's IR (docs/training.md, TensorBoard).
#pragma once

#include <vector>

#include "io/tfevents.h"
#include "strata/graph.h"

namespace strata::train {

// One GraphDef node per IR node (name, op = "<domain>.<op_type>" outside ai.onnx, inputs as "producer[:k]"), one
// "Placeholder" node per graph input and one "Const" node per initializer (attrs dtype and shape). Shapes and dtypes
// of node outputs (from graph-level inference on the inputs' types, else the graph's annotations) go into the attrs
// "_output_shapes" and "T"/"dtype" as TF writes them; ONNX attributes become
// AttrValues of the same name (tensors and subgraphs are summarised as strings). Nameless or duplicate node names
// get "<op_type>_<index>".
std::vector<io::GraphNode> ToTensorBoardGraph(const graph::Graph& g);

// tensorflow.DataType number of a strata dtype (DT_INVALID = 0 when TF has none).
int TfDataType(DType t);

}  // namespace strata::train
