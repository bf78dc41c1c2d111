// Table rows for the framework's first ops (arithmetic, MatMul, Relu, Reshape, Shape, Identity, Constant).
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

TEST(ArithTest, BroadcastBothWaysAndScalars) {
  RunOpCase({.label = "same shape",
             .op_type = "Add",
             .inputs = {F({1, 2, 3}, {3}), F({10, 20, 30}, {3})},
             .expected = {F({11, 22, 33}, {3})}});
  RunOpCase({.label = "row + column",
             .op_type = "Sub",
             .inputs = {F({1, 2}, {2, 1}), F({10, 20, 30}, {1, 3})},
             .expected = {F({-9, -19, -29, -8, -18, -28}, {2, 3})}});
  RunOpCase({.label = "scalar right",
             .op_type = "Mul",
             .inputs = {F({1, 2, 3, 4}, {2, 2}), F({3}, {})},
             .expected = {F({3, 6, 9, 12}, {2, 2})}});
  RunOpCase({.label = "scalar left",
             .op_type = "Div",
             .inputs = {F({12}, {}), F({1, 2, 3, 4}, {4})},
             .expected = {F({12, 6, 4, 3}, {4})}});
  RunOpCase({.label = "zero-size",
             .op_type = "Add",
             .inputs = {F({}, {0, 3}), F({1, 2, 3}, {3})},
             .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "int64 truncating div",
             .op_type = "Div",
             .inputs = {I64({7, -7, 9}, {3}), I64({2, 2, -4}, {3})},
             .expected = {I64({3, -3, -2}, {3})}});
  RunOpCase(
      {.label = "rank 5 broadcast", .op_type = "Add", .inputs = {RandomF({2, 1, 3, 1, 5}, 1), RandomF({1, 4, 1}, 2)}});
}

TEST(ArithTest, ErrorsNameTheProblem) {
  RunOpCase({.label = "bad broadcast",
             .op_type = "Add",
             .inputs = {F({1, 2, 3}, {3}), F({1, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "cannot be broadcast"});
  RunOpCase({.label = "int division by zero",
             .op_type = "Div",
             .inputs = {I64({1}, {1}), I64({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "division by zero"});
  RunOpCase({.label = "mixed dtypes",
             .op_type = "Mul",
             .inputs = {F({1}, {1}), I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "same element type"});
}

TEST(MatMulTest, ShapesAndBroadcast) {
  RunOpCase({.label = "2x3 * 3x2",
             .op_type = "MatMul",
             .inputs = {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({7, 8, 9, 10, 11, 12}, {3, 2})},
             .expected = {F({58, 64, 139, 154}, {2, 2})}});
  RunOpCase({.label = "vector * matrix",
             .op_type = "MatMul",
             .inputs = {F({1, 2}, {2}), F({1, 2, 3, 4}, {2, 2})},
             .expected = {F({7, 10}, {2})}});
  RunOpCase({.label = "matrix * vector",
             .op_type = "MatMul",
             .inputs = {F({1, 2, 3, 4}, {2, 2}), F({1, 1}, {2})},
             .expected = {F({3, 7}, {2})}});
  RunOpCase(
      {.label = "batched broadcast", .op_type = "MatMul", .inputs = {RandomF({2, 1, 3, 4}, 3), RandomF({5, 4, 2}, 4)}});
  RunOpCase({.label = "k mismatch",
             .op_type = "MatMul",
             .inputs = {F({1, 2}, {1, 2}), F({1, 2, 3}, {3, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "inner dimensions differ"});
}

TEST(ReshapeTest, ZeroMinusOneAndAllowZero) {
  RunOpCase({.label = "-1 inferred",
             .op_type = "Reshape",
             .inputs = {RandomF({2, 3, 4}, 5), I64({4, -1}, {2})},
             .constant_inputs = {1}});
  RunOpCase({.label = "0 copies", .op_type = "Reshape", .inputs = {RandomF({2, 3, 4}, 6), I64({0, 12}, {2})}});
  RunOpCase({.label = "allowzero",
             .op_type = "Reshape",
             .attrs = {{"allowzero", AInt(1)}},
             .inputs = {F({}, {0, 3}), I64({3, 0}, {2})},
             .expected = {F({}, {3, 0})}});
  RunOpCase({.label = "two -1",
             .op_type = "Reshape",
             .inputs = {RandomF({2, 3}, 7), I64({-1, -1}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "more than one -1"});
  RunOpCase({.label = "count mismatch",
             .op_type = "Reshape",
             .inputs = {RandomF({2, 3}, 7), I64({4, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "cannot reshape"});
}

TEST(ShapeTest, StartEndAndSize) {
  RunOpCase({.label = "all", .op_type = "Shape", .inputs = {RandomF({2, 3, 4}, 8)}, .expected = {I64({2, 3, 4}, {3})}});
  RunOpCase({.label = "start -2",
             .op_type = "Shape",
             .attrs = {{"start", AInt(-2)}},
             .inputs = {RandomF({2, 3, 4}, 8)},
             .expected = {I64({3, 4}, {2})}});
  RunOpCase({.label = "size", .op_type = "Size", .inputs = {RandomF({2, 3, 4}, 8)}, .expected = {I64({24}, {})}});
}

TEST(MiscTest, IdentityReluConstant) {
  RunOpCase(
      {.label = "identity int", .op_type = "Identity", .inputs = {I64({1, 2}, {2})}, .expected = {I64({1, 2}, {2})}});
  RunOpCase({.label = "relu", .op_type = "Relu", .inputs = {F({-1, 0, 2}, {3})}, .expected = {F({0, 0, 2}, {3})}});
  RunOpCase({.label = "constant ints",
             .op_type = "Constant",
             .attrs = {{"value_ints", AInts({1, 2, 3})}},
             .expected = {I64({1, 2, 3}, {3})}});
  RunOpCase({.label = "constant none",
             .op_type = "Constant",
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "exactly one value attribute"});
}

}  // namespace
}  // namespace strata::testing
