// Gradient rows for the shape/indexing ops, the reductions and the losses: float64 inputs checked against central
// finite differences by the op harness.
#include "tests/ops/grad_test_util.h"

namespace strata::testing {
namespace {

TEST(GradTensorTest, ShapeOps) {
  GradRow({.label = "reshape",
           .op_type = "Reshape",
           .inputs = {RD({2, 3, 2}, 1), I64({3, -1}, {2})},
           .constant_inputs = {1}});
  GradRow({.label = "reshape runtime shape", .op_type = "Reshape", .inputs = {RD({2, 3, 2}, 2), I64({4, 3}, {2})}});
  GradRow({.label = "flatten", .op_type = "Flatten", .attrs = {{"axis", AInt(2)}}, .inputs = {RD({2, 3, 2}, 3)}});
  GradRow({.label = "squeeze",
           .op_type = "Squeeze",
           .inputs = {RD({2, 1, 3, 1}, 4), I64({1, -1}, {2})},
           .constant_inputs = {1}});
  GradRow({.label = "unsqueeze",
           .op_type = "Unsqueeze",
           .inputs = {RD({2, 3}, 5), I64({0, 3}, {2})},
           .constant_inputs = {1}});
  GradRow({.label = "transpose perm",
           .op_type = "Transpose",
           .attrs = {{"perm", AInts({1, 2, 0})}},
           .inputs = {RD({2, 3, 4}, 6)}});
  GradRow({.label = "transpose default", .op_type = "Transpose", .inputs = {RD({2, 3, 4}, 7)}});
  GradRow(
      {.label = "expand", .op_type = "Expand", .inputs = {RD({3, 1}, 8), I64({2, 3, 4}, {3})}, .constant_inputs = {1}});
  GradRow({.label = "expand runtime shape", .op_type = "Expand", .inputs = {RD({3, 1}, 9), I64({2, 1, 4}, {3})}});
  GradRow({.label = "tile", .op_type = "Tile", .inputs = {RD({2, 3}, 10), I64({2, 3}, {2})}, .constant_inputs = {1}});
}

TEST(GradTensorTest, ConcatSplitSlice) {
  GradRow({.label = "concat",
           .op_type = "Concat",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 1, 2}, 1), RD({2, 3, 2}, 2), RD({2, 2, 2}, 3)}});
  GradRow({.label = "concat negative axis",
           .op_type = "Concat",
           .attrs = {{"axis", AInt(-1)}},
           .inputs = {RD({2, 2}, 4), RD({2, 3}, 5)}});
  GradRow({.label = "split sizes",
           .op_type = "Split",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 5}, 6), I64({2, 3}, {2})},
           .num_outputs = 2,
           .constant_inputs = {1}});
  GradRow({.label = "split equal", .op_type = "Split", .inputs = {RD({6, 2}, 7)}, .num_outputs = 3});
  GradRow({.label = "slice steps",
           .op_type = "Slice",
           .inputs = {RD({4, 5}, 8), I64({1, 4}, {2}), I64({4, 0}, {2}), I64({0, 1}, {2}), I64({2, -2}, {2})},
           .constant_inputs = {1, 2, 3, 4}});
  GradRow({.label = "slice runtime starts",
           .op_type = "Slice",
           .inputs = {RD({3, 4}, 9), I64({1}, {1}), I64({100}, {1}), I64({-1}, {1})}});
  GradRow({.label = "slice opset 1",
           .op_type = "Slice",
           .opset = 1,
           .attrs = {{"starts", AInts({0, 1})}, {"ends", AInts({2, 3})}},
           .inputs = {RD({3, 4}, 10)}});
}

TEST(GradTensorTest, GatherPadDropout) {
  GradRow({.label = "gather rows repeated (embedding)",
           .op_type = "Gather",
           .inputs = {RD({5, 3}, 1), I64({4, 0, 4, 2, -1, 0}, {2, 3})}});
  GradRow({.label = "gather axis 1",
           .op_type = "Gather",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 4, 3}, 2), I32({3, 1, 3}, {3})}});
  GradRow({.label = "gather scalar index", .op_type = "Gather", .inputs = {RD({4, 2}, 3), I64({2}, {})}});
  GradRow({.label = "gather elements",
           .op_type = "GatherElements",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 3}, 4), I64({0, 0, 2, 1, 1, 1}, {2, 3})}});
  GradRow({.label = "pad constant with crop",
           .op_type = "Pad",
           .inputs = {RD({3, 4}, 5), I64({1, -1, 0, 2}, {4}), D({0.5}, {})},
           .constant_inputs = {1}});
  GradRow({.label = "pad reflect",
           .op_type = "Pad",
           .attrs = {{"mode", AString("reflect")}},
           .inputs = {RD({3, 4}, 6), I64({0, 2, 1, 1}, {4})},
           .constant_inputs = {1},
           .grad_inputs = {0}});
  GradRow({.label = "pad edge",
           .op_type = "Pad",
           .attrs = {{"mode", AString("edge")}},
           .inputs = {RD({2, 3}, 7), I64({1, 0, 2, 2}, {4})},
           .constant_inputs = {1},
           .grad_inputs = {0}});
  GradRow({.label = "pad opset 2",
           .op_type = "Pad",
           .opset = 2,
           .attrs = {{"pads", AInts({1, 0, 0, 2})}},
           .inputs = {RD({2, 3}, 8)}});
  GradRow({.label = "dropout training",
           .op_type = "Dropout",
           .attrs = {{"seed", AInt(3)}},
           .inputs = {RD({4, 5}, 9), D({0.3}, {}), B({true}, {})},
           .constant_inputs = {1, 2},
           .grad_inputs = {0}});
  GradRow({.label = "dropout training mode at run time",
           .op_type = "Dropout",
           .attrs = {{"seed", AInt(4)}},
           .inputs = {RD({4, 5}, 10), D({0.4}, {}), B({true}, {})},
           .grad_inputs = {0}});
  GradRow({.label = "dropout mask used",
           .op_type = "Dropout",
           .attrs = {{"seed", AInt(5)}},
           .inputs = {RD({6}, 11), Tensor(), B({true}, {})},
           .num_outputs = 2,
           .constant_inputs = {2},
           .grad_inputs = {0}});
  GradRow({.label = "dropout inference", .op_type = "Dropout", .inputs = {RD({6}, 12)}});
}

TEST(GradTensorTest, PermutationsMasksAndScatters) {
  for (const char* mode : {"DCR", "CRD"})
    GradRow({.label = mode,
             .op_type = "DepthToSpace",
             .attrs = {{"blocksize", AInt(2)}, {"mode", AString(mode)}},
             .inputs = {RD({1, 8, 2, 3}, 1)}});
  GradRow({.label = "space to depth",
           .op_type = "SpaceToDepth",
           .attrs = {{"blocksize", AInt(2)}},
           .inputs = {RD({1, 2, 4, 2}, 2)}});
  GradRow(
      {.label = "reverse sequence", .op_type = "ReverseSequence", .inputs = {RD({4, 3, 2}, 3), I64({4, 1, 3}, {3})}});
  GradRow({.label = "compress axis",
           .op_type = "Compress",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 4}, 4), B({true, false, true}, {3})}});
  GradRow({.label = "compress flat",
           .op_type = "Compress",
           .inputs = {RD({2, 3}, 5), B({false, true, true, false, true}, {5})}});
  GradRow({.label = "trilu lower k",
           .op_type = "Trilu",
           .attrs = {{"upper", AInt(0)}},
           .inputs = {RD({2, 3, 4}, 6), I64({1}, {})},
           .constant_inputs = {1}});
  for (int excl : {0, 1})
    for (int rev : {0, 1})
      GradRow({.label = "cumsum",
               .op_type = "CumSum",
               .attrs = {{"exclusive", AInt(excl)}, {"reverse", AInt(rev)}},
               .inputs = {RD({2, 4}, 7), I64({1}, {})}});
  GradRow({.label = "gather nd repeated",
           .op_type = "GatherND",
           .inputs = {RD({3, 2, 2}, 8), I64({2, 1, 0, 0, 2, 1}, {3, 2})}});
  GradRow(
      {.label = "scatter nd", .op_type = "ScatterND", .inputs = {RD({4, 3}, 9), I64({2, 0}, {2, 1}), RD({2, 3}, 10)}});
  GradRow({.label = "scatter nd add repeated",
           .op_type = "ScatterND",
           .attrs = {{"reduction", AString("add")}},
           .inputs = {RD({4, 3}, 11), I64({1, 1}, {2, 1}), RD({2, 3}, 12)}});
  GradRow({.label = "scatter elements",
           .op_type = "ScatterElements",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {RD({2, 4}, 13), I64({3, 0, 1, 2}, {2, 2}), RD({2, 2}, 14)}});
  GradRow({.label = "scatter elements add",
           .op_type = "ScatterElements",
           .attrs = {{"reduction", AString("add")}},
           .inputs = {RD({3, 2}, 15), I64({0, 0, 2, 0}, {2, 2}), RD({2, 2}, 16)}});
  GradRow({.label = "scatter (opset 9)",
           .op_type = "Scatter",
           .opset = 9,
           .inputs = {RD({3, 2}, 17), I64({2, 0}, {1, 2}), RD({1, 2}, 18)}});
  GradRow({.label = "topk",
           .op_type = "TopK",
           .attrs = {{"axis", AInt(1)}},
           .inputs = {DistinctD({2, 5}, 19), I64({2}, {1})},
           .num_outputs = 2,
           .constant_inputs = {1}});
  GradRow({.label = "topk smallest",
           .op_type = "TopK",
           .attrs = {{"largest", AInt(0)}},
           .inputs = {DistinctD({6}, 20), I64({3}, {1})},
           .num_outputs = 2});
  GradRow({.label = "max unpool",
           .op_type = "MaxUnpool",
           .attrs = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}},
           .inputs = {RD({1, 1, 2, 2}, 21), I64({1, 2, 12, 15}, {1, 1, 2, 2})}});
}

TEST(GradTensorTest, Reductions) {
  for (int keep : {0, 1}) {
    GradRow({.label = "sum axes input",
             .op_type = "ReduceSum",
             .attrs = {{"keepdims", AInt(keep)}},
             .inputs = {RD({2, 3, 4}, 1), I64({0, -1}, {2})},
             .constant_inputs = {1}});
    GradRow({.label = "sum runtime axes",
             .op_type = "ReduceSum",
             .attrs = {{"keepdims", AInt(keep)}},
             .inputs = {RD({2, 3, 4}, 2), I64({1}, {1})}});
    GradRow(
        {.label = "sum all", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(keep)}}, .inputs = {RD({2, 3}, 3)}});
    GradRow({.label = "mean",
             .op_type = "ReduceMean",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({1})}},
             .inputs = {RD({2, 3, 2}, 4)}});
    GradRow({.label = "sum square",
             .op_type = "ReduceSumSquare",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({0, 2})}},
             .inputs = {RD({2, 3, 2}, 5)}});
    GradRow({.label = "l1",
             .op_type = "ReduceL1",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({-1})}},
             .inputs = {AwayD({2, 3}, 6)}});
    GradRow({.label = "l2",
             .op_type = "ReduceL2",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({1})}},
             .inputs = {AwayD({2, 3}, 7)}});
    GradRow({.label = "log sum",
             .op_type = "ReduceLogSum",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({0})}},
             .inputs = {RD({3, 2}, 8, 0.2, 2)}});
    GradRow({.label = "log sum exp",
             .op_type = "ReduceLogSumExp",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({1})}},
             .inputs = {RD({2, 4}, 9, -3, 3)}});
    GradRow({.label = "max",
             .op_type = "ReduceMax",
             .attrs = {{"keepdims", AInt(keep)}, {"axes", AInts({1})}},
             .inputs = {DistinctD({2, 4, 3}, 10)}});
    GradRow({.label = "min all",
             .op_type = "ReduceMin",
             .attrs = {{"keepdims", AInt(keep)}},
             .inputs = {DistinctD({3, 4}, 11)}});
  }
  GradRow({.label = "sum noop with empty axes",
           .op_type = "ReduceSum",
           .attrs = {{"noop_with_empty_axes", AInt(1)}},
           .inputs = {RD({2, 3}, 12)}});
  GradRow({.label = "mean opset 18 axes input",
           .op_type = "ReduceMean",
           .opset = 18,
           .inputs = {RD({2, 3}, 13), I64({0}, {1})},
           .constant_inputs = {1}});
}

TEST(GradTensorTest, Losses) {
  const Tensor target = I64({2, 0, 1, 2}, {4});
  for (const char* red : {"none", "sum", "mean"}) {
    GradRow({.label = red,
             .op_type = "SoftmaxCrossEntropyLoss",
             .attrs = {{"reduction", AString(red)}},
             .inputs = {RD({4, 3}, 1, -2, 2), target}});
    GradRow({.label = "weights",
             .op_type = "SoftmaxCrossEntropyLoss",
             .attrs = {{"reduction", AString(red)}},
             .inputs = {RD({4, 3}, 2, -2, 2), target, D({0.5, 2, 1.5}, {3})},
             .grad_inputs = {0}});
    GradRow({.label = "ignore index, spatial",
             .op_type = "SoftmaxCrossEntropyLoss",
             .attrs = {{"reduction", AString(red)}, {"ignore_index", AInt(1)}},
             .inputs = {RD({2, 3, 2, 2}, 3, -2, 2), I64({0, 1, 2, 1, 1, 0, 2, 2}, {2, 2, 2}), D({0.5, 2, 1.5}, {3})},
             .grad_inputs = {0}});
    GradRow({.label = "log_prob output too",
             .op_type = "SoftmaxCrossEntropyLoss",
             .attrs = {{"reduction", AString(red)}},
             .inputs = {RD({4, 3}, 4, -2, 2), I32({2, 0, 1, 2}, {4})},
             .num_outputs = 2});
    GradRow({.label = red,
             .op_type = "NegativeLogLikelihoodLoss",
             .attrs = {{"reduction", AString(red)}},
             .inputs = {RD({4, 3}, 5, -2, 0), target}});
    GradRow({.label = "weights, ignore, spatial",
             .op_type = "NegativeLogLikelihoodLoss",
             .attrs = {{"reduction", AString(red)}, {"ignore_index", AInt(0)}},
             .inputs = {RD({2, 3, 3}, 6, -2, 0), I64({0, 1, 2, 2, 0, 1}, {2, 3}), D({0.5, 2, 1.5}, {3})},
             .grad_inputs = {0}});
  }
}

}  // namespace
}  // namespace strata::testing
