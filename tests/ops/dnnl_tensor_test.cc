// oneDNN reduction, concat, transpose and Pow kernels against the reference kernels, and NaN rows for every kernel
// whose oneDNN primitive treats NaN differently from the reference.
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

TEST(DnnlReduceTest, AxesKeepdimsAndOpsets) {
  const Tensor x = RandomF({3, 4, 5}, 50, 0.5f, 1.5f);
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    RunOpCase({.label = "axis 1 keepdims",
               .op_type = op,
               .opset = 11,
               .attrs = {{"axes", AInts({1})}},
               .inputs = {x},
               .kernel = "dnnl"});
    RunOpCase({.label = "axes -1,0 no keepdims",
               .op_type = op,
               .opset = 11,
               .attrs = {{"axes", AInts({-1, 0})}, {"keepdims", AInt(0)}},
               .inputs = {x},
               .kernel = "dnnl"});
    RunOpCase({.label = "all axes", .op_type = op, .opset = 11, .inputs = {x}, .kernel = "dnnl"});
    RunOpCase({.label = "opset 18 axes input",
               .op_type = op,
               .opset = 18,
               .inputs = {x, I64({2}, {1})},
               .constant_inputs = {1},
               .kernel = "dnnl"});
  }
  RunOpCase({.label = "ReduceSum 13 axes input",
             .op_type = "ReduceSum",
             .opset = 13,
             .attrs = {{"keepdims", AInt(0)}},
             .inputs = {x, I64({0, 2}, {2})},
             .constant_inputs = {1},
             .kernel = "dnnl"});
  RunOpCase({.label = "ReduceSum 13 runtime axes decline",
             .op_type = "ReduceSum",
             .opset = 13,
             .inputs = {x, I64({0}, {1})},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "noop with empty axes declines",
             .op_type = "ReduceSum",
             .opset = 13,
             .attrs = {{"noop_with_empty_axes", AInt(1)}},
             .inputs = {x},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "ReduceMean over a big plane",
             .op_type = "ReduceMean",
             .opset = 13,
             .attrs = {{"axes", AInts({2, 3})}},
             .inputs = {RandomF({2, 8, 13, 13}, 51)},
             .kernel = "dnnl"});
}

TEST(DnnlTransposeTest, Perms) {
  RunOpCase({.label = "2-D default perm", .op_type = "Transpose", .inputs = {RandomF({5, 7}, 70)}, .kernel = "dnnl"});
  RunOpCase({.label = "attention heads",
             .op_type = "Transpose",
             .attrs = {{"perm", AInts({0, 2, 1, 3})}},
             .inputs = {RandomF({2, 9, 4, 8}, 71)},
             .kernel = "dnnl"});
  RunOpCase({.label = "last two",
             .op_type = "Transpose",
             .attrs = {{"perm", AInts({0, 1, 3, 2})}},
             .inputs = {RandomF({2, 4, 9, 8}, 72)},
             .kernel = "dnnl"});
  RunOpCase({.label = "rank 5 rotation",
             .op_type = "Transpose",
             .attrs = {{"perm", AInts({4, 0, 3, 1, 2})}},
             .inputs = {RandomF({2, 3, 4, 5, 6}, 73)},
             .kernel = "dnnl"});
  RunOpCase({.label = "int64 declines",
             .op_type = "Transpose",
             .inputs = {I64({1, 2, 3, 4}, {2, 2})},
             .kernel = "dnnl",
             .expect_decline = true});
}

TEST(DnnlPowTest, SquareOnly) {
  RunOpCase({.label = "x^2 float exponent",
             .op_type = "Pow",
             .inputs = {RandomF({3, 17}, 80, -3, 3), F({2}, {})},
             .constant_inputs = {1},
             .kernel = "dnnl"});
  RunOpCase({.label = "x^2 int64 exponent",
             .op_type = "Pow",
             .inputs = {RandomF({3, 17}, 81, -3, 3), I64({2}, {})},
             .constant_inputs = {1},
             .kernel = "dnnl"});
  RunOpCase({.label = "x^3 declines",
             .op_type = "Pow",
             .inputs = {RandomF({4}, 82), F({3}, {})},
             .constant_inputs = {1},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "runtime exponent declines",
             .op_type = "Pow",
             .inputs = {RandomF({4}, 82), F({2}, {})},
             .kernel = "dnnl",
             .expect_decline = true});
}

TEST(DnnlConcatTest, Axes) {
  RunOpCase({.label = "axis 1",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(1)}},
             .inputs = {RandomF({2, 3, 4}, 60), RandomF({2, 5, 4}, 61), RandomF({2, 1, 4}, 62)},
             .kernel = "dnnl"});
  RunOpCase({.label = "axis -1",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(-1)}},
             .inputs = {RandomF({2, 3, 4}, 60), RandomF({2, 3, 7}, 61)},
             .kernel = "dnnl"});
  RunOpCase({.label = "axis 0 with a constant",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(0)}},
             .inputs = {RandomF({2, 3}, 60), RandomF({1, 3}, 61)},
             .constant_inputs = {1},
             .kernel = "dnnl"});
  RunOpCase({.label = "single input",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(0)}},
             .inputs = {RandomF({2, 3}, 60)},
             .kernel = "dnnl"});
  RunOpCase({.label = "empty input declines",
             .op_type = "Concat",
             .attrs = {{"axis", AInt(0)}},
             .inputs = {RandomF({2, 3}, 60), F({}, {0, 3})},
             .kernel = "dnnl",
             .expect_decline = true});
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// NaN handling must match the reference kernels exactly.
TEST(DnnlNanTest, NaNRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = F({1, nan, 3, 4, nan, nan, nan, nan, -1, 2, 5, nan}, {1, 3, 2, 2});
  RunOpCase({.label = "max pool NaN",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2, 2})}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "global max pool NaN", .op_type = "GlobalMaxPool", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "avg pool NaN",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2, 2})}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "reduce max NaN",
             .op_type = "ReduceMax",
             .opset = 13,
             .attrs = {{"axes", AInts({2, 3})}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "reduce min NaN",
             .op_type = "ReduceMin",
             .opset = 13,
             .attrs = {{"axes", AInts({2, 3})}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "reduce sum NaN",
             .op_type = "ReduceSum",
             .opset = 11,
             .attrs = {{"axes", AInts({2, 3})}},
             .inputs = {x},
             .kernel = "dnnl"});
  RunOpCase({.label = "softmax NaN", .op_type = "Softmax", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "relu NaN", .op_type = "Relu", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "leaky NaN", .op_type = "LeakyRelu", .inputs = {x}, .kernel = "dnnl"});
  RunOpCase({.label = "add NaN", .op_type = "Add", .inputs = {x, x}, .kernel = "dnnl"});
  for (const char* op :
       {"Sigmoid", "Tanh", "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Log", "Sqrt", "Abs", "Neg", "Exp"}) {
    RunOpCase({.label = StrCat(op, " NaN"), .op_type = op, .inputs = {x}, .kernel = "dnnl"});
    RunOpCase({.label = StrCat(op, " inf"),
               .op_type = op,
               .inputs = {F({std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 0, -0.0f},
                            {4})},
               .kernel = "dnnl"});
  }
}

}  // namespace
}  // namespace strata::testing
