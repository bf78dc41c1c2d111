// Table rows for the shape ops: Flatten, Squeeze, Unsqueeze, Transpose, Split, Slice, Concat, Expand, Tile, Pad,
// Trilu, DepthToSpace, SpaceToDepth. Expected values are by hand or from numpy (reshape, transpose, split, slicing,
// concatenate, broadcast_to, tile, pad, triu/tril).
#include <limits>
#include <map>

#include "graph/infer.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

// 0, 1, 2, ... as float32 (numpy.arange(n).reshape(shape)).
Tensor Iota(std::vector<int64_t> shape, float start = 0) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape(shape));
  float v = start;
  for (float& x : t.mutable_values<float>()) x = v++;
  return t;
}

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> shape) { return T_<std::string>(std::move(v), shape); }

TEST(FlattenTest, AxesAndEdges) {
  RunOpCase({.label = "default axis 1", .op_type = "Flatten", .inputs = {Iota({2, 3, 4})},
             .expected = {Iota({2, 12})}});
  RunOpCase({.label = "axis 0", .op_type = "Flatten", .attrs = {{"axis", AInt(0)}}, .inputs = {Iota({2, 3, 4})},
             .expected = {Iota({1, 24})}});
  RunOpCase({.label = "axis = rank", .op_type = "Flatten", .attrs = {{"axis", AInt(3)}}, .inputs = {Iota({2, 3, 4})},
             .expected = {Iota({24, 1})}});
  RunOpCase({.label = "axis -1", .op_type = "Flatten", .attrs = {{"axis", AInt(-1)}}, .inputs = {Iota({2, 3, 4})},
             .expected = {Iota({6, 4})}});
  RunOpCase({.label = "zero-size", .op_type = "Flatten", .attrs = {{"axis", AInt(2)}}, .inputs = {F({}, {2, 0, 3})},
             .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "scalar", .op_type = "Flatten", .attrs = {{"axis", AInt(0)}}, .inputs = {F({7}, {})},
             .expected = {F({7}, {1, 1})}});
  RunOpCase({.label = "strings", .op_type = "Flatten", .inputs = {Strings({"a", "b", "c", "d"}, {2, 1, 2})},
             .expected = {Strings({"a", "b", "c", "d"}, {2, 2})}});
  RunOpCase({.label = "axis too large", .op_type = "Flatten", .attrs = {{"axis", AInt(4)}}, .inputs = {Iota({2, 3, 4})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "axis 4 is out of range for rank 3"});
}

TEST(SqueezeTest, AttributeAndInputAxes) {
  RunOpCase({.label = "opset 13 axes input", .op_type = "Squeeze", .opset = 13,
             .inputs = {Iota({1, 3, 1, 2}), I64({0, 2}, {2})}, .expected = {Iota({3, 2})}, .constant_inputs = {1}});
  RunOpCase({.label = "opset 13 axes fed at run time", .op_type = "Squeeze", .opset = 13,
             .inputs = {Iota({1, 3, 1, 2}), I64({-2}, {1})}, .expected = {Iota({1, 3, 2})}});
  RunOpCase({.label = "opset 11 attribute, negative", .op_type = "Squeeze", .opset = 11,
             .attrs = {{"axes", AInts({-1})}},
             .inputs = {Iota({2, 1})}, .expected = {Iota({2})}});
  RunOpCase({.label = "no axes: every 1", .op_type = "Squeeze", .inputs = {Iota({1, 2, 1, 3, 1})},
             .expected = {Iota({2, 3})}});
  RunOpCase({.label = "to scalar", .op_type = "Squeeze", .inputs = {I64({5}, {1, 1})}, .expected = {I64({5}, {})}});
  RunOpCase({.label = "zero-size kept", .op_type = "Squeeze", .inputs = {F({}, {1, 0})}, .expected = {F({}, {0})}});
  RunOpCase({.label = "not size 1", .op_type = "Squeeze", .opset = 13, .inputs = {Iota({2, 3}), I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "its dimension is 3, expected 1"});
  RunOpCase({.label = "scalar axis", .op_type = "Squeeze", .opset = 11, .attrs = {{"axes", AInts({0})}},
             .inputs = {F({1}, {})}, .expect_error = StatusCode::kInvalidArgument, .error_substr = "of a scalar"});
}

TEST(UnsqueezeTest, AttributeAndInputAxes) {
  RunOpCase({.label = "opset 13", .op_type = "Unsqueeze", .opset = 13, .inputs = {Iota({2, 3}), I64({0, 3}, {2})},
             .expected = {Iota({1, 2, 3, 1})}, .constant_inputs = {1}});
  RunOpCase({.label = "opset 13 run-time axes", .op_type = "Unsqueeze", .opset = 13,
             .inputs = {Iota({2, 3}), I64({1}, {1})}, .expected = {Iota({2, 1, 3})}});
  RunOpCase({.label = "opset 11 negative", .op_type = "Unsqueeze", .opset = 11, .attrs = {{"axes", AInts({-1})}},
             .inputs = {Iota({2, 3})}, .expected = {Iota({2, 3, 1})}});
  RunOpCase({.label = "unsorted", .op_type = "Unsqueeze", .opset = 13, .inputs = {Iota({3}), I64({2, 0}, {2})},
             .expected = {Iota({1, 3, 1})}, .constant_inputs = {1}});
  RunOpCase({.label = "scalar", .op_type = "Unsqueeze", .opset = 13, .inputs = {B({true}, {}), I64({0}, {1})},
             .expected = {B({true}, {1})}});
  RunOpCase({.label = "zero-size", .op_type = "Unsqueeze", .opset = 13, .inputs = {F({}, {0, 2}), I64({1}, {1})},
             .expected = {F({}, {0, 1, 2})}});
  RunOpCase({.label = "repeated axis", .op_type = "Unsqueeze", .opset = 13, .inputs = {Iota({3}), I64({0, -3}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "appears more than once"});
  RunOpCase({.label = "axis out of range", .op_type = "Unsqueeze", .opset = 11, .attrs = {{"axes", AInts({3})}},
             .inputs = {Iota({3})}, .expect_error = StatusCode::kInvalidArgument, .error_substr = "out of range"});
  RunOpCase({.label = "opset 13 without axes", .op_type = "Unsqueeze", .opset = 13, .inputs = {Iota({3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "needs the axes input"});
}

TEST(TransposeTest, PermsAndTypes) {
  RunOpCase({.label = "default reverses", .op_type = "Transpose", .inputs = {Iota({2, 3, 4})},
             .expected = {F({0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23},
             {4, 3, 2})}});
  RunOpCase({.label = "perm 1,0,2", .op_type = "Transpose", .attrs = {{"perm", AInts({1, 0, 2})}},
             .inputs = {Iota({2, 3, 4})},
             .expected = {F({0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23},
             {3, 2, 4})}});
  RunOpCase({.label = "rank 5 int64", .op_type = "Transpose", .attrs = {{"perm", AInts({4, 2, 0, 3, 1})}},
             .inputs = {I64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
             {2, 1, 3, 2, 2})},
                 .expected = {I64({0, 2, 12, 14, 4, 6, 16, 18, 8, 10, 20, 22, 1, 3, 13, 15, 5, 7, 17, 19, 9, 11, 21,
                 23}, {2, 3, 2, 2, 1})}});
  RunOpCase({.label = "strings", .op_type = "Transpose", .inputs = {Strings({"a", "b", "c", "d", "e", "f"}, {2, 3})},
             .expected = {Strings({"a", "d", "b", "e", "c", "f"}, {3, 2})}});
  RunOpCase({.label = "zero-size", .op_type = "Transpose", .inputs = {F({}, {0, 3})}, .expected = {F({}, {3, 0})}});
  RunOpCase({.label = "scalar", .op_type = "Transpose", .inputs = {F({2}, {})}, .expected = {F({2}, {})}});
  RunOpCase({.label = "bad perm", .op_type = "Transpose", .attrs = {{"perm", AInts({0, 0})}}, .inputs = {Iota({2, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "is not a permutation"});
}

TEST(SplitTest, EqualVariableAndZeroParts) {
  RunOpCase({.label = "equal parts axis 1", .op_type = "Split", .attrs = {{"axis", AInt(1)}}, .inputs = {Iota({2, 6})},
             .num_outputs = 3,
             .expected = {F({0, 1, 6, 7}, {2, 2}), F({2, 3, 8, 9}, {2, 2}), F({4, 5, 10, 11}, {2, 2})}});
  RunOpCase({.label = "split input", .op_type = "Split", .opset = 13, .inputs = {Iota({6}), I64({1, 2, 3}, {3})},
             .num_outputs = 3, .expected = {Iota({1}), Iota({2}, 1), Iota({3}, 3)}, .constant_inputs = {1}});
  RunOpCase({.label = "split attribute opset 11, axis -1", .op_type = "Split", .opset = 11,
             .attrs = {{"axis", AInt(-1)}, {"split", AInts({1, 3})}}, .inputs = {Iota({2, 4})}, .num_outputs = 2,
             .expected = {F({0, 4}, {2, 1}), F({1, 2, 3, 5, 6, 7}, {2, 3})}});
  RunOpCase({.label = "zero-size part", .op_type = "Split", .opset = 13, .inputs = {Iota({3}), I64({0, 3}, {2})},
             .num_outputs = 2, .expected = {F({}, {0}), Iota({3})}});
  RunOpCase({.label = "num_outputs uneven (opset 18)", .op_type = "Split", .opset = 18,
             .attrs = {{"num_outputs", AInt(3)}}, .inputs = {Iota({7})}, .num_outputs = 3,
             .expected = {Iota({3}), Iota({3}, 3), Iota({1}, 6)}});
  RunOpCase({.label = "not divisible", .op_type = "Split", .inputs = {Iota({5})}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "into 2 equal parts"});
  RunOpCase({.label = "sizes overflow", .op_type = "Split", .opset = 13,
             .inputs = {Iota({5}), I64({std::numeric_limits<int64_t>::max(), 2}, {2})}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "overflows int64"});
  RunOpCase({.label = "sizes do not sum", .op_type = "Split", .opset = 13, .inputs = {Iota({5}), I64({1, 2}, {2})},
             .num_outputs = 2, .expect_error = StatusCode::kInvalidArgument, .error_substr = "sums to 3"});
}

TEST(SliceTest, StepsClampingAndOpsets) {
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  RunOpCase({.label = "basic", .op_type = "Slice", .inputs = {Iota({3, 4}), I64({0, 1}, {2}), I64({2, 3}, {2})},
             .expected = {F({1, 2, 5, 6}, {2, 2})}, .constant_inputs = {1, 2}});
  RunOpCase({.label = "axes and steps, run-time values", .op_type = "Slice",
             .inputs = {Iota({3, 5}), I64({4}, {1}), I64({-100}, {1}), I64({-1}, {1}), I64({-2}, {1})},
             .expected = {F({4, 2, 0, 9, 7, 5, 14, 12, 10}, {3, 3})}});
  RunOpCase({.label = "reverse everything", .op_type = "Slice",
             .inputs = {Iota({2, 3}), I64({-1, -1}, {2}), I64({kMin, kMin}, {2}), I64({0, 1}, {2}), I64({-1, -1}, {2})},
             .expected = {F({5, 4, 3, 2, 1, 0}, {2, 3})}, .constant_inputs = {1, 2, 3, 4}});
  RunOpCase({.label = "end past the end, step 2", .op_type = "Slice",
             .inputs = {Iota({10}), I64({1}, {1}), I64({kMax}, {1}), I64({0}, {1}), I64({2}, {1})},
             .expected = {F({1, 3, 5, 7, 9}, {5})}, .constant_inputs = {1, 2, 3, 4}});
  RunOpCase({.label = "start past the end is empty", .op_type = "Slice",
             .inputs = {Iota({2, 3}), I64({5}, {1}), I64({10}, {1}), I64({1}, {1})}, .expected = {F({}, {2, 0})},
             .constant_inputs = {1, 2, 3}});
  RunOpCase({.label = "huge negative step", .op_type = "Slice",
             .inputs = {Iota({4}), I64({3}, {1}), I64({kMin}, {1}), I64({0}, {1}), I64({kMin}, {1})},
             .expected = {F({3}, {1})}});
  RunOpCase({.label = "opset 1 attributes", .op_type = "Slice", .opset = 1,
             .attrs = {{"starts", AInts({1})}, {"ends", AInts({-1})}, {"axes", AInts({1})}}, .inputs = {Iota({2, 4})},
             .expected = {F({1, 2, 5, 6}, {2, 2})}});
  RunOpCase({.label = "int32 indices, strings", .op_type = "Slice",
             .inputs = {Strings({"a", "b", "c"}, {3}), I32({1}, {1}), I32({3}, {1})},
             .expected = {Strings({"b", "c"}, {2})}});
  RunOpCase({.label = "zero-size input", .op_type = "Slice",
             .inputs = {F({}, {0, 3}), I64({0, 1}, {2}), I64({1, 3}, {2})},
             .expected = {F({}, {0, 2})}});
  RunOpCase({.label = "step 0", .op_type = "Slice",
             .inputs = {Iota({4}), I64({0}, {1}), I64({4}, {1}), I64({0}, {1}), I64({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "contains 0"});
  RunOpCase({.label = "length mismatch", .op_type = "Slice", .inputs = {Iota({4}), I64({0, 1}, {2}), I64({4}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must have the same length"});
  RunOpCase({.label = "repeated axis", .op_type = "Slice",
             .inputs = {Iota({4}), I64({0, 1}, {2}), I64({4, 4}, {2}), I64({0, -1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "appears more than once"});
}

TEST(ConcatTest, AxesEmptyInputsAndTypes) {
  RunOpCase({.label = "axis 1", .op_type = "Concat", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({2, 1}), Iota({2, 2}, 10)},
             .expected = {F({0, 10, 11, 1, 12, 13}, {2, 3})}});
  RunOpCase({.label = "axis -3, three inputs", .op_type = "Concat", .attrs = {{"axis", AInt(-3)}},
             .inputs = {Iota({1, 2, 2}), Iota({2, 2, 2}, 4), Iota({1, 2, 2}, 12)}, .expected = {Iota({4, 2, 2})}});
  RunOpCase({.label = "empty input", .op_type = "Concat", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({2, 2}), F({}, {2, 0}), Iota({2, 1}, 4)}, .expected = {F({0, 1, 4, 2, 3, 5}, {2, 3})}});
  RunOpCase({.label = "all empty", .op_type = "Concat", .attrs = {{"axis", AInt(0)}},
             .inputs = {F({}, {0, 3}), F({}, {0, 3})},
             .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "strings", .op_type = "Concat", .attrs = {{"axis", AInt(0)}},
             .inputs = {Strings({"x"}, {1}), Strings({"y", "z"}, {2})}, .expected = {Strings({"x", "y", "z"}, {3})}});
  RunOpCase({.label = "single input", .op_type = "Concat", .attrs = {{"axis", AInt(0)}}, .inputs = {I32({1, 2}, {2})},
             .expected = {I32({1, 2}, {2})}});
  RunOpCase({.label = "other dims differ", .op_type = "Concat", .attrs = {{"axis", AInt(0)}},
             .inputs = {Iota({1, 2}), Iota({1, 3})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "only axis 0 may differ"});
  RunOpCase({.label = "no axis", .op_type = "Concat", .inputs = {Iota({1, 2}), Iota({1, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "axis"});
}

TEST(ExpandTest, BothWaysAndErrors) {
  RunOpCase({.label = "to higher rank", .op_type = "Expand", .inputs = {Iota({3, 1}), I64({2, 1, 6}, {3})},
             .expected = {F({0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1,
             2, 2, 2, 2, 2, 2}, {2, 3, 6})}, .constant_inputs = {1}});
  RunOpCase({.label = "shape 1 keeps the input dim", .op_type = "Expand", .inputs = {Iota({3}), I64({2, 1}, {2})},
             .expected = {F({0, 1, 2, 0, 1, 2}, {2, 3})}});
  RunOpCase({.label = "shorter shape", .op_type = "Expand", .inputs = {Iota({2, 1, 2}), I64({3, 1}, {2})},
             .expected = {F({0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}, {2, 3, 2})}, .constant_inputs = {1}});
  RunOpCase({.label = "zero-size", .op_type = "Expand", .inputs = {Iota({3}), I64({0, 3}, {2})},
             .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "scalar int", .op_type = "Expand", .inputs = {I32({7}, {}), I64({2}, {1})},
             .expected = {I32({7, 7}, {2})}});
  RunOpCase({.label = "incompatible", .op_type = "Expand", .inputs = {Iota({3}), I64({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "cannot be broadcast"});
  RunOpCase({.label = "negative dim", .op_type = "Expand", .inputs = {Iota({3}), I64({-1, 3}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "negative dimension"});
}

TEST(TileTest, RepeatsAndErrors) {
  RunOpCase({.label = "2x3", .op_type = "Tile", .inputs = {Iota({2, 2}), I64({2, 3}, {2})},
             .expected = {F({0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}, {4, 6})},
             .constant_inputs = {1}});
  RunOpCase({.label = "rank 3 run-time repeats", .op_type = "Tile", .inputs = {Iota({1, 2, 3}), I64({2, 1, 2}, {3})},
             .expected = {F({0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, {2, 2, 6})}});
  RunOpCase({.label = "repeat 0", .op_type = "Tile", .inputs = {Iota({2, 2}), I64({0, 2}, {2})},
             .expected = {F({}, {0, 4})}});
  RunOpCase({.label = "bool", .op_type = "Tile", .inputs = {B({true, false}, {2}), I64({2}, {1})},
             .expected = {B({true, false, true, false}, {4})}});
  RunOpCase({.label = "wrong length", .op_type = "Tile", .inputs = {Iota({2, 2}), I64({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "one per input dimension"});
  RunOpCase({.label = "negative", .op_type = "Tile", .inputs = {Iota({2}), I64({-1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "negative entry"});
}

TEST(PadTest, ModesOpsetsAndCropping) {
  RunOpCase({.label = "constant value input", .op_type = "Pad",
             .inputs = {Iota({2, 3}), I64({0, 2, 1, 0}, {4}), F({1.5f}, {})},
             .expected = {F({1.5, 1.5, 0, 1, 2, 1.5, 1.5, 3, 4, 5, 1.5, 1.5, 1.5, 1.5, 1.5}, {3, 5})},
             .constant_inputs = {1}});
  // Constant mode copies each row's input run as a block (pad.cc): padded rows, a padded run end, a cropped row.
  RunOpCase({.label = "constant, 3-D rows", .op_type = "Pad",
             .inputs = {Iota({2, 2, 2}), I64({0, 1, 0, 0, 0, 1}, {6})},
             .expected = {F({0, 0, 0, 0, 1, 0, 2, 3, 0, 0, 0, 0, 4, 5, 0, 6, 7, 0}, {2, 3, 3})},
             .constant_inputs = {1}});
  RunOpCase({.label = "constant, last axis cropped to nothing", .op_type = "Pad",
             .inputs = {Iota({2, 2}), I64({0, -2, 1, 1}, {4})}, .expected = {F({0, 0, 0}, {3, 1})},
             .constant_inputs = {1}});
  RunOpCase({.label = "reflect", .op_type = "Pad", .attrs = {{"mode", AString("reflect")}},
             .inputs = {Iota({3, 3}), I64({1, 2, 1, 2}, {4})},
             .expected = {F({5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3, 8, 7, 6, 7, 8, 7, 6, 5, 4,
             3, 4, 5, 4, 3}, {5, 7})}});
  RunOpCase({.label = "reflect past the edge bounces", .op_type = "Pad", .attrs = {{"mode", AString("reflect")}},
             .inputs = {Iota({3}), I64({5, 4}, {2})}, .expected = {F({1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2}, {12})}});
  RunOpCase({.label = "edge", .op_type = "Pad", .attrs = {{"mode", AString("edge")}},
             .inputs = {Iota({2, 3}), I64({1, 0, 2, 3}, {4})},
             .expected = {F({0, 1, 2, 2, 2, 2, 0, 1, 2, 2, 2, 2, 3, 4, 5, 5, 5, 5, 3, 4, 5, 5, 5, 5, 3, 4, 5, 5, 5,
             5}, {5, 6})}});
  RunOpCase({.label = "negative pads crop", .op_type = "Pad", .inputs = {Iota({3, 4}), I64({-1, 1, 0, -2}, {4})},
             .expected = {F({0, 4, 5, 0, 8, 9}, {2, 3})}});
  RunOpCase({.label = "opset 2 attributes", .op_type = "Pad", .opset = 2,
             .attrs = {{"pads", AInts({1, 0, 0, 1})}, {"value", AFloat(-1)}}, .inputs = {Iota({1, 2})},
             .expected = {F({-1, -1, -1, 0, 1, -1}, {2, 3})}});
  RunOpCase({.label = "opset 18 axes", .op_type = "Pad", .opset = 18,
             .inputs = {I32({1, 2, 3, 4}, {2, 2}), I64({1, 0}, {2}), I32({9}, {}), I64({-1}, {1})},
             .expected = {I32({9, 1, 2, 9, 3, 4}, {2, 3})}});
  RunOpCase({.label = "empty axis padded", .op_type = "Pad", .inputs = {F({}, {0, 2}), I64({1, 0, 0, 0}, {4})},
             .expected = {F({0, 0}, {1, 2})}});
  RunOpCase({.label = "wrap is opset 19", .op_type = "Pad", .attrs = {{"mode", AString("wrap")}},
             .inputs = {Iota({3}), I64({1, 1}, {2})}, .expect_error = StatusCode::kUnimplemented,
             .error_substr = "wrap"});
  RunOpCase({.label = "pads overflow", .op_type = "Pad",
             .inputs = {Iota({3}), I64({std::numeric_limits<int64_t>::max(), 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "overflow int64"});
  RunOpCase({.label = "pads too large to allocate", .op_type = "Pad",
             .inputs = {Iota({3}), I64({int64_t{1} << 60, 0}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "too many elements"});
  RunOpCase({.label = "pads length", .op_type = "Pad", .inputs = {Iota({3}), I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "expected 2"});
  RunOpCase({.label = "edge of empty", .op_type = "Pad", .attrs = {{"mode", AString("edge")}},
             .inputs = {F({}, {0}), I64({1, 0}, {2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "cannot pad an empty dimension"});
}

TEST(TriluTest, UpperLowerAndK) {
  RunOpCase({.label = "upper", .op_type = "Trilu", .inputs = {Iota({3, 4}, 1)},
             .expected = {F({1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}, {3, 4})}});
  RunOpCase({.label = "lower k=-1", .op_type = "Trilu", .attrs = {{"upper", AInt(0)}},
             .inputs = {Iota({3, 4}, 1), I64({-1}, {})},
             .expected = {F({0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, {3, 4})}});
  RunOpCase({.label = "upper k=2 batched", .op_type = "Trilu", .inputs = {Iota({2, 3, 3}, 1), I64({2}, {})},
             .expected = {F({0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0}, {2, 3, 3})}});
  RunOpCase({.label = "k beyond the matrix", .op_type = "Trilu", .attrs = {{"upper", AInt(0)}},
             .inputs = {I64({1, 2, 3, 4}, {2, 2}), I64({-5}, {})}, .expected = {I64({0, 0, 0, 0}, {2, 2})}});
  RunOpCase({.label = "rank 1", .op_type = "Trilu", .inputs = {Iota({3})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 2"});
}

TEST(DepthToSpaceTest, ModesAndInverse) {
  RunOpCase({.label = "DCR", .op_type = "DepthToSpace", .attrs = {{"blocksize", AInt(2)}},
             .inputs = {Iota({1, 8, 2, 3})},
             .expected = {F({0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4, 16, 5, 17, 27, 39, 28, 40, 29, 41,
             6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9, 21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47},
                 {1, 2, 4, 6})}});
  RunOpCase({.label = "CRD", .op_type = "DepthToSpace", .attrs = {{"blocksize", AInt(2)}, {"mode", AString("CRD")}},
             .inputs = {Iota({2, 4, 1, 2})},
             .expected = {F({0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15}, {2, 1, 2, 4})}});
  RunOpCase({.label = "SpaceToDepth", .op_type = "SpaceToDepth", .attrs = {{"blocksize", AInt(2)}},
             .inputs = {Iota({1, 2, 4, 2})},
             .expected = {F({0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}, {1, 8, 2, 1})}});
  RunOpCase({.label = "channels not divisible", .op_type = "DepthToSpace", .attrs = {{"blocksize", AInt(2)}},
             .inputs = {Iota({1, 6, 1, 1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "not divisible"});
  RunOpCase({.label = "huge blocksize", .op_type = "DepthToSpace", .attrs = {{"blocksize", AInt(int64_t{1} << 40)}},
             .inputs = {Iota({1, 1, 1, 1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "[1, 2^20]"});
  RunOpCase({.label = "space not divisible", .op_type = "SpaceToDepth", .attrs = {{"blocksize", AInt(2)}},
             .inputs = {Iota({1, 1, 3, 2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "not divisible"});
}


TEST(ShapeOpDtypeTest, WidthsAndHalfFloats) {
  RunOpCase({.label = "Pad reflect int8", .op_type = "Pad", .attrs = {{"mode", AString("reflect")}},
             .inputs = {T_<int8_t>({1, -2, 3}, {3}), I64({2, 1}, {2})},
             .expected = {T_<int8_t>({3, -2, 1, -2, 3, -2}, {6})}});
  RunOpCase({.label = "Pad constant float16", .op_type = "Pad",
             .inputs = {Cast(F({1, 2}, {2}), DType::kFloat16), I64({1, 0}, {2}), Cast(F({0.5f}, {}), DType::kFloat16)},
             .expected = {Cast(F({0.5f, 1, 2}, {3}), DType::kFloat16)}});
  RunOpCase({.label = "Slice uint16", .op_type = "Slice",
             .inputs = {T_<uint16_t>({1, 2, 3, 4}, {4}), I64({-1}, {1}), I64({0}, {1}),
             I64({0}, {1}), I64({-2}, {1})}, .expected = {T_<uint16_t>({4, 2}, {2})}});
  RunOpCase({.label = "Concat bool", .op_type = "Concat", .attrs = {{"axis", AInt(0)}},
             .inputs = {B({true}, {1}), B({false, true}, {2})}, .expected = {B({true, false, true}, {3})}});
  RunOpCase({.label = "Tile double", .op_type = "Tile", .inputs = {D({1.5, -2}, {2}), I64({2}, {1})},
             .expected = {D({1.5, -2, 1.5, -2}, {4})}});
  RunOpCase({.label = "Expand bfloat16", .op_type = "Expand",
             .inputs = {Cast(F({1, 2}, {2, 1}), DType::kBFloat16), I64({2, 2}, {2})},
             .expected = {Cast(F({1, 1, 2, 2}, {2, 2}), DType::kBFloat16)}});
  RunOpCase({.label = "Split uint32", .op_type = "Split", .inputs = {T_<uint32_t>({1, 2, 3, 4}, {4})}, .num_outputs = 2,
             .expected = {T_<uint32_t>({1, 2}, {2}), T_<uint32_t>({3, 4}, {2})}});
  RunOpCase({.label = "Trilu int64 upper", .op_type = "Trilu", .inputs = {I64({1, 2, 3, 4}, {2, 2})},
             .expected = {I64({1, 2, 0, 4}, {2, 2})}});
}

// Shape inference keeps symbolic dimensions where an op keeps them (the harness only feeds concrete shapes).
TEST(TensorInferenceTest, SymbolsPropagate) {
  graph::Graph g;
  g.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(3), Dim(4)})});
  g.initializers["axes0"] = I64({0}, {1});
  g.initializers["idx"] = I64({2, 0}, {2});
  g.initializers["starts"] = I64({1}, {1});
  g.initializers["ends"] = I64({3}, {1});
  g.initializers["axes2"] = I64({2}, {1});
  g.initializers["scales"] = F({1, 1, 2}, {3});
  g.initializers["pads"] = I64({0, 0, 1, 0, 0, 1}, {6});
  g.initializers["reps"] = I64({1, 2, 1}, {3});
  g.initializers["shape"] = I64({2, 1, 1, 1}, {4});
  g.inputs.push_back({"runtime_shape", DType::kInt64, PartialShape::Of({Dim(2)})});
  auto node = [&](std::string op, std::vector<std::string> in, std::string out, graph::AttributeMap attrs = {}) {
    graph::Node n;
    n.name = out;
    n.op_type = std::move(op);
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    n.attrs = std::move(attrs);
    n.opset = 17;
    g.nodes.push_back(std::move(n));
  };
  node("Flatten", {"x"}, "flat");
  node("Transpose", {"x"}, "tr", {{"perm", AInts({2, 0, 1})}});
  node("Unsqueeze", {"x", "axes0"}, "unsq");
  node("Squeeze", {"unsq", "axes0"}, "sq");
  node("Concat", {"x", "x"}, "cat", {{"axis", AInt(1)}});
  node("Gather", {"x", "idx"}, "gat", {{"axis", AInt(1)}});
  node("Slice", {"x", "starts", "ends", "axes2"}, "sl");
  node("Resize", {"x", "", "scales"}, "rs");
  node("Pad", {"x", "pads"}, "pad");
  node("Tile", {"x", "reps"}, "tile");
  node("Expand", {"x", "shape"}, "exp");
  node("Expand", {"x", "runtime_shape"}, "exp_dyn");
  node("Split", {"x"}, "split", {{"axis", AInt(2)}});
  g.nodes.back().outputs = {"s0", "s1"};
  node("Shape", {"x"}, "shp");
  node("ConstantOfShape", {"runtime_shape"}, "cos");
  node("NonZero", {"x"}, "nz");
  graph::InferredGraph inferred;
  ASSERT_TRUE(graph::InferGraph(g, g.inputs, graph::InferOptions{}, &inferred).ok());
  const std::map<std::string, std::string> want = {
      {"flat", "[batch,12]"},  {"tr", "[4,batch,3]"},     {"unsq", "[1,batch,3,4]"},   {"sq", "[batch,3,4]"},
      {"cat", "[batch,6,4]"},  {"gat", "[batch,2,4]"},    {"sl", "[batch,3,2]"},       {"rs", "[batch,3,8]"},
      {"pad", "[batch,3,6]"},  {"tile", "[batch,6,4]"},   {"exp", "[2,batch,3,4]"},    {"exp_dyn", "[?,?,?]"},
      {"s0", "[batch,3,2]"},   {"s1", "[batch,3,2]"},     {"shp", "[3]"},              {"cos", "[?,?]"},
      {"nz", "[3,?]"}};
  for (const auto& [name, shape] : want) EXPECT_EQ(inferred.types.at(name).shape.ToString(), shape) << name;
}

}  // namespace
}  // namespace strata::testing
