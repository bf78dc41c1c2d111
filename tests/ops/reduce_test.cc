// Table rows for the reduce family (ReduceX, ArgMax/ArgMin, TopK) and for CumSum, Einsum and Det. Expected values
// come from the ONNX spec examples, by hand, or from numpy on the same Seq() data (see Seq below).
#include <cmath>
#include <limits>

#include "ops/defs/reduce/reduce_util.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

// Deterministic data numpy can reproduce: ((i*7) % 13 - 6) * scale in row-major order.
Tensor Seq(std::vector<int64_t> shape, float scale = 1.0f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7) % 13 - 6) * scale;
  return F(v, shape);
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// The ONNX spec's ReduceX example input, shape [3, 2, 2].
Tensor SpecData() { return F({5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2}, {3, 2, 2}); }

TEST(ReduceSumTest, AxesInputKeepdimsAndNoop) {
  RunOpCase({.label = "axes [1] keepdims", .op_type = "ReduceSum", .inputs = {SpecData(), I64({1}, {1})},
             .expected = {F({25, 3, 70, 3, 115, 3}, {3, 1, 2})}, .constant_inputs = {1}});
  RunOpCase({.label = "axes [-2] no keepdims", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {SpecData(), I64({-2}, {1})}, .expected = {F({25, 3, 70, 3, 115, 3}, {3, 2})},
             .constant_inputs = {1}});
  RunOpCase({.label = "axes not constant", .op_type = "ReduceSum", .inputs = {SpecData(), I64({0, 2}, {2})},
             .expected = {F({93, 126}, {1, 2, 1})}});
  RunOpCase({.label = "axes omitted = all", .op_type = "ReduceSum", .inputs = {SpecData()},
             .expected = {F({219}, {1, 1, 1})}});
  RunOpCase({.label = "empty axes = all", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {SpecData(), I64({}, {0})}, .expected = {F({219}, {})}, .constant_inputs = {1}});
  RunOpCase({.label = "noop_with_empty_axes", .op_type = "ReduceSum", .attrs = {{"noop_with_empty_axes", AInt(1)}},
             .inputs = {SpecData(), I64({}, {0})}, .expected = {SpecData()}, .constant_inputs = {1}});
  RunOpCase({.label = "opset 11 axes attribute", .op_type = "ReduceSum", .opset = 11,
             .attrs = {{"axes", AInts({2})}, {"keepdims", AInt(0)}}, .inputs = {SpecData()},
             .expected = {F({6, 22, 31, 42, 56, 62}, {3, 2})}});
  RunOpCase({.label = "opset 1 default all", .op_type = "ReduceSum", .opset = 1, .inputs = {SpecData()},
             .expected = {F({219}, {1, 1, 1})}});
}

TEST(ReduceSumTest, GeneralAxesDtypesAndEdges) {
  RunOpCase({.label = "axes 0,2 (outer + middle)", .op_type = "ReduceSum",
             .inputs = {Seq({2, 3, 4, 5}), I64({0, 2}, {2})},
             .expected = {F({-15, 15, -7, -3, 1, 0, -9, 8, -1, 3, 15, -7, -3, 1, -8}, {1, 3, 1, 5})},
             .constant_inputs = {1}});
  RunOpCase({.label = "axes 1,3 (strided)", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {Seq({2, 3, 4, 5}), I64({1, 3}, {2})}, .expected = {F({-3, 2, -6, -1, 5, -3, 2, -6}, {2, 4})},
             .constant_inputs = {1}});
  RunOpCase({.label = "int64", .op_type = "ReduceSum", .inputs = {I64({1, 2, 3, 4, 5, 6}, {2, 3}), I64({1}, {1})},
             .expected = {I64({6, 15}, {2, 1})}});
  RunOpCase({.label = "int32 wraps like numpy", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {I32({2147483647, 1}, {2}), I64({0}, {1})}, .expected = {I32({-2147483647 - 1}, {})}});
  RunOpCase({.label = "float16", .op_type = "ReduceSum", .inputs = {Cast(SpecData(), DType::kFloat16), I64({1}, {1})},
             .expected = {Cast(F({25, 3, 70, 3, 115, 3}, {3, 1, 2}), DType::kFloat16)}});
  RunOpCase({.label = "bfloat16", .op_type = "ReduceSum", .inputs = {Cast(SpecData(), DType::kBFloat16), I64({2}, {1})},
             .expected = {Cast(F({6, 22, 31, 42, 56, 62}, {3, 2, 1}), DType::kBFloat16)}});
  RunOpCase({.label = "float64", .op_type = "ReduceSum", .inputs = {D({1, 2, 3, 4}, {2, 2}), I64({0}, {1})},
             .expected = {D({4, 6}, {1, 2})}});
  RunOpCase({.label = "zero-size reduced axis", .op_type = "ReduceSum", .inputs = {F({}, {2, 0, 3}), I64({1}, {1})},
             .expected = {F({0, 0, 0, 0, 0, 0}, {2, 1, 3})}});
  RunOpCase({.label = "zero-size kept axis", .op_type = "ReduceSum", .inputs = {F({}, {2, 0, 3}), I64({0}, {1})},
             .expected = {F({}, {1, 0, 3})}});
  RunOpCase({.label = "scalar", .op_type = "ReduceSum", .inputs = {F({7}, {})}, .expected = {F({7}, {})}});
  RunOpCase({.label = "size-1 axes only", .op_type = "ReduceSum", .inputs = {F({1, 2, 3}, {1, 3, 1}), I64({0, 2}, {2})},
             .expected = {F({1, 2, 3}, {1, 3, 1})}});
}

// Long axes: float32 summed sequentially would be off by ~1e-3 relative; pairwise/blocked stays near 1e-7.
TEST(ReduceSumTest, LongAxesKeepFloat32Precision) {
  const int64_t n = int64_t{1} << 20;
  RunOpCase({.label = "inner contiguous axis", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {F(std::vector<float>(n, 0.1f), {n})}, .expected = {F({104857.6015625f}, {})}, .rtol = 2e-6});
  RunOpCase({.label = "outer axis (kept inner)", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {F(std::vector<float>(n, 0.1f), {n / 2, 2}), I64({0}, {1})},
             .expected = {F({52428.80078125f, 52428.80078125f}, {2})}, .rtol = 2e-6});
  RunOpCase({.label = "many short strided runs", .op_type = "ReduceSum", .attrs = {{"keepdims", AInt(0)}},
             .inputs = {F(std::vector<float>(n, 0.1f), {n / 4, 2, 2}), I64({0, 2}, {2})},
             .expected = {F({52428.80078125f, 52428.80078125f}, {2})}, .rtol = 2e-6});
}

// The entry point gradient ops use to undo broadcasting.
TEST(ReduceSumTest, SumToShapeUndoesBroadcasting) {
  const Tensor x = Seq({2, 3, 4, 5});
  Tensor y = Tensor::Empty(DType::kFloat32, Shape{3, 1, 5});
  ASSERT_TRUE(ops::SumToShape(x, &y).ok());
  EXPECT_EQ(CompareTensors(y, F({-15, 15, -7, -3, 1, 0, -9, 8, -1, 3, 15, -7, -3, 1, -8}, {3, 1, 5}), 1e-6, 1e-6), "");
  Tensor bias = Tensor::Empty(DType::kFloat32, Shape{5});
  ASSERT_TRUE(ops::SumToShape(x, &bias).ok());
  EXPECT_EQ(CompareTensors(bias, F({0, -1, -2, -3, -4}, {5}), 1e-6, 1e-6), "");
  Tensor bad = Tensor::Empty(DType::kFloat32, Shape{3, 5});
  Status s = ops::SumToShape(x, &bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not broadcast"), std::string::npos) << s.ToString();
}

TEST(ReduceSumTest, Errors) {
  RunOpCase({.label = "axis out of range", .op_type = "ReduceSum", .inputs = {SpecData(), I64({3}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "out of range"});
  RunOpCase({.label = "duplicate axes", .op_type = "ReduceSum", .inputs = {SpecData(), I64({1, -2}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "more than once"});
  RunOpCase({.label = "axes input before opset 13", .op_type = "ReduceSum", .opset = 11,
             .inputs = {SpecData(), I64({1}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "not an input"});
  RunOpCase({.label = "bool input", .op_type = "ReduceSum", .inputs = {B({true, false}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "number tensor"});
  RunOpCase({.label = "2-D axes", .op_type = "ReduceSum", .inputs = {SpecData(), I64({1}, {1, 1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "1-D"});
}

TEST(ReduceOpsTest, SpecExamples) {
  const graph::AttributeMap axes1 = {{"axes", AInts({1})}};
  RunOpCase({.label = "mean", .op_type = "ReduceMean", .attrs = axes1, .inputs = {SpecData()},
             .expected = {F({12.5, 1.5, 35, 1.5, 57.5, 1.5}, {3, 1, 2})}});
  RunOpCase({.label = "max", .op_type = "ReduceMax", .attrs = axes1, .inputs = {SpecData()},
             .expected = {F({20, 2, 40, 2, 60, 2}, {3, 1, 2})}});
  RunOpCase({.label = "min", .op_type = "ReduceMin", .attrs = axes1, .inputs = {SpecData()},
             .expected = {F({5, 1, 30, 1, 55, 1}, {3, 1, 2})}});
  RunOpCase({.label = "prod", .op_type = "ReduceProd", .attrs = axes1,
             .inputs = {F({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 2, 2})},
             .expected = {F({3, 8, 35, 48, 99, 120}, {3, 1, 2})}});
  RunOpCase({.label = "sum square", .op_type = "ReduceSumSquare", .attrs = axes1,
             .inputs = {F({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 2, 2})},
             .expected = {F({10, 20, 74, 100, 202, 244}, {3, 1, 2})}});
  RunOpCase({.label = "l1", .op_type = "ReduceL1", .attrs = {{"axes", AInts({2})}},
             .inputs = {F({1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12}, {3, 2, 2})},
             .expected = {F({3, 7, 11, 15, 19, 23}, {3, 2, 1})}});
  RunOpCase({.label = "l2", .op_type = "ReduceL2", .attrs = {{"axes", AInts({2})}, {"keepdims", AInt(0)}},
             .inputs = {F({3, 4, 5, 12, 8, 15}, {3, 1, 2})}, .expected = {F({5, 13, 17}, {3, 1})}});
  RunOpCase({.label = "log sum", .op_type = "ReduceLogSum", .attrs = {{"axes", AInts({0})}, {"keepdims", AInt(0)}},
             .inputs = {F({1, 2, 3, 4}, {2, 2})}, .expected = {F({std::log(4.0f), std::log(6.0f)}, {2})}});
}

TEST(ReduceOpsTest, GeneralAxesAgainstNumpy) {
  RunOpCase({.label = "mean axis -1", .op_type = "ReduceMean", .attrs = {{"axes", AInts({-1})}, {"keepdims", AInt(0)}},
             .inputs = {Seq({2, 3, 4, 5})},
             .expected = {F({-2.4f, 1.4f, 0.0f, -1.4f, 2.4f, -1.6f, -0.4f, 0.8f, -0.6f, 0.6f, -0.8f, 0.4f,
                             1.6f, -2.4f, 1.4f, 0.0f, -1.4f, 2.4f, -1.6f, -0.4f, 0.8f, -0.6f, 0.6f, -0.8f},
                            {2, 3, 4})}});
  RunOpCase({.label = "max axes 0,3", .op_type = "ReduceMax", .attrs = {{"axes", AInts({0, 3})}, {"keepdims", AInt(0)}},
             .inputs = {Seq({2, 3, 4, 5})}, .expected = {F({6, 5, 6, 6, 6, 6, 4, 6, 6, 5, 6, 6}, {3, 4})}});
  RunOpCase({.label = "min axes 1,2", .op_type = "ReduceMin", .attrs = {{"axes", AInts({1, 2})}},
             .inputs = {Seq({2, 3, 4, 5})}, .expected = {F(std::vector<float>(10, -6), {2, 1, 1, 5})}});
  RunOpCase({.label = "l2 axes 0,1", .op_type = "ReduceL2", .attrs = {{"axes", AInts({0, 1})}, {"keepdims", AInt(0)}},
             .inputs = {Seq({2, 3, 4, 5})},
             .expected = {F({10.344079971313477f, 7.745966911315918f, 10.344079971313477f, 8.124038696289062f,
                             10.29563045501709f, 8.426149368286133f, 9.539392471313477f, 8.66025447845459f,
                             8.66025447845459f, 9.539392471313477f, 8.426149368286133f, 10.29563045501709f,
                             8.124038696289062f, 10.344079971313477f, 7.745966911315918f, 10.344079971313477f,
                             8.124038696289062f, 10.29563045501709f, 8.426149368286133f, 9.539392471313477f},
                            {4, 5})}});
  RunOpCase({.label = "sum square all", .op_type = "ReduceSumSquare", .inputs = {Seq({2, 3, 4, 5})},
             .expected = {F({1700}, {1, 1, 1, 1})}});
  RunOpCase({.label = "prod axis 1", .op_type = "ReduceProd", .attrs = {{"axes", AInts({1})}, {"keepdims", AInt(0)}},
             .inputs = {Seq({3, 4}, 0.5f)}, .expected = {F({3.75f, 9.0f, 3.75f}, {3})}});
  RunOpCase({.label = "log sum exp axis 1", .op_type = "ReduceLogSumExp",
             .attrs = {{"axes", AInts({1})}, {"keepdims", AInt(0)}}, .inputs = {Seq({3, 4}, 0.5f)},
             .expected = {F({1.503827452659607f, 2.5038273334503174f, 3.5038273334503174f}, {3})}});
}

TEST(ReduceOpsTest, EmptySetsStabilityNanAndIntegers) {
  const Tensor empty = F({}, {2, 0});
  const graph::AttributeMap ax1 = {{"axes", AInts({1})}, {"keepdims", AInt(0)}};
  RunOpCase({.label = "max of nothing", .op_type = "ReduceMax", .attrs = ax1, .inputs = {empty},
             .expected = {F({-kInf, -kInf}, {2})}});
  RunOpCase({.label = "min of nothing", .op_type = "ReduceMin", .attrs = ax1, .inputs = {empty},
             .expected = {F({kInf, kInf}, {2})}});
  RunOpCase({.label = "prod of nothing", .op_type = "ReduceProd", .attrs = ax1, .inputs = {empty},
             .expected = {F({1, 1}, {2})}});
  RunOpCase({.label = "mean of nothing", .op_type = "ReduceMean", .attrs = ax1, .inputs = {empty},
             .expected = {F({kNan, kNan}, {2})}});
  RunOpCase({.label = "log sum exp of nothing", .op_type = "ReduceLogSumExp", .attrs = ax1, .inputs = {empty},
             .expected = {F({-kInf, -kInf}, {2})}});
  RunOpCase({.label = "int max of nothing", .op_type = "ReduceMax", .attrs = ax1, .inputs = {I32({}, {2, 0})},
             .expected = {I32({-2147483647 - 1, -2147483647 - 1}, {2})}});
  RunOpCase({.label = "log sum exp large values", .op_type = "ReduceLogSumExp", .attrs = ax1,
             .inputs = {F({1000, 1000, -1000, -1000}, {2, 2})},
             .expected = {F({1000.6931471805599f, -999.3068528194401f}, {2})}});
  RunOpCase({.label = "log sum exp with -inf", .op_type = "ReduceLogSumExp", .attrs = ax1,
             .inputs = {F({-kInf, -kInf, -kInf, 0}, {2, 2})}, .expected = {F({-kInf, 0}, {2})}});
  RunOpCase({.label = "max propagates NaN", .op_type = "ReduceMax", .attrs = ax1,
             .inputs = {F({1, kNan, 3, 2}, {2, 2})}, .expected = {F({kNan, 3}, {2})}});
  RunOpCase({.label = "int8 max (opset 12+)", .op_type = "ReduceMax", .attrs = ax1,
             .inputs = {T_<int8_t>({-5, -7, 3, 127}, {2, 2})}, .expected = {T_<int8_t>({-5, 127}, {2})}});
  RunOpCase({.label = "int32 mean truncates toward zero", .op_type = "ReduceMean", .attrs = ax1,
             .inputs = {I32({1, 2, -1, -2}, {2, 2})}, .expected = {I32({1, -1}, {2})}});
  RunOpCase({.label = "int64 l1", .op_type = "ReduceL1", .attrs = ax1, .inputs = {I64({-3, 4, 5, -6}, {2, 2})},
             .expected = {I64({7, 11}, {2})}});
  RunOpCase({.label = "int32 l2 truncates", .op_type = "ReduceL2", .attrs = ax1, .inputs = {I32({1, 1, 3, 4}, {2, 2})},
             .expected = {I32({1, 5}, {2})}});
  RunOpCase({.label = "uint32 prod wraps", .op_type = "ReduceProd", .attrs = ax1,
             .inputs = {T_<uint32_t>({65536, 65537, 2, 3}, {2, 2})}, .expected = {T_<uint32_t>({65536, 6}, {2})}});
  RunOpCase({.label = "float16 mean", .op_type = "ReduceMean", .attrs = ax1,
             .inputs = {Cast(F({1, 2, 3, 5}, {2, 2}), DType::kFloat16)},
             .expected = {Cast(F({1.5f, 4}, {2}), DType::kFloat16)}});
  RunOpCase({.label = "opset 18 axes input", .op_type = "ReduceMax", .opset = 18, .inputs = {SpecData(), I64({1}, {1})},
             .expected = {F({20, 2, 40, 2, 60, 2}, {3, 1, 2})}, .constant_inputs = {1}});
  RunOpCase({.label = "axes attribute out of range", .op_type = "ReduceMean", .attrs = {{"axes", AInts({-4})}},
             .inputs = {SpecData()}, .expect_error = StatusCode::kInvalidArgument, .error_substr = "out of range"});
}

TEST(ArgMaxMinTest, AxesKeepdimsAndTies) {
  const Tensor x = F({2, 1, 3, 10}, {2, 2});
  RunOpCase({.label = "argmax default axis", .op_type = "ArgMax", .inputs = {x}, .expected = {I64({1, 1}, {1, 2})}});
  RunOpCase({.label = "argmax axis 1 no keepdims", .op_type = "ArgMax",
             .attrs = {{"axis", AInt(1)}, {"keepdims", AInt(0)}}, .inputs = {x}, .expected = {I64({0, 1}, {2})}});
  RunOpCase({.label = "argmin axis -1", .op_type = "ArgMin", .attrs = {{"axis", AInt(-1)}}, .inputs = {x},
             .expected = {I64({1, 0}, {2, 1})}});
  const Tensor ties = F({2, 2, 3, 3}, {2, 2});
  RunOpCase({.label = "ties: first", .op_type = "ArgMax", .attrs = {{"axis", AInt(1)}}, .inputs = {ties},
             .expected = {I64({0, 0}, {2, 1})}});
  RunOpCase({.label = "ties: select_last_index", .op_type = "ArgMin",
             .attrs = {{"axis", AInt(1)}, {"select_last_index", AInt(1)}}, .inputs = {ties},
             .expected = {I64({1, 1}, {2, 1})}});
  RunOpCase({.label = "middle axis of 3-D", .op_type = "ArgMin", .attrs = {{"axis", AInt(1)}, {"keepdims", AInt(0)}},
             .inputs = {F({3, 1, 2, 1, 5, 0, 2, 2, 9, 7, 0, 1}, {2, 2, 3})},
             .expected = {I64({1, 0, 1, 0, 1, 1}, {2, 3})}});
  RunOpCase({.label = "NaN wins", .op_type = "ArgMax", .attrs = {{"axis", AInt(1)}},
             .inputs = {F({1, kNan, 5, kNan, 0, 9}, {2, 3})}, .expected = {I64({1, 0}, {2, 1})}});
  RunOpCase({.label = "int32", .op_type = "ArgMax", .inputs = {I32({1, 9, 4}, {3})}, .expected = {I64({1}, {1})}});
  RunOpCase({.label = "zero-size outer", .op_type = "ArgMax", .attrs = {{"axis", AInt(1)}}, .inputs = {F({}, {0, 3})},
             .expected = {I64({}, {0, 1})}});
  RunOpCase({.label = "empty axis", .op_type = "ArgMax", .inputs = {F({}, {0, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "empty axis"});
  RunOpCase({.label = "axis out of range", .op_type = "ArgMin", .attrs = {{"axis", AInt(2)}}, .inputs = {x},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "out of range"});
  RunOpCase({.label = "select_last_index before opset 12", .op_type = "ArgMax", .opset = 11,
             .attrs = {{"select_last_index", AInt(1)}}, .inputs = {x}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "needs opset 12"});
  RunOpCase({.label = "scalar", .op_type = "ArgMax", .inputs = {F({1}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "rank >= 1"});
}

TEST(TopKTest, LargestSmallestTiesAndOpsets) {
  const Tensor x = F({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  RunOpCase({.label = "spec example", .op_type = "TopK", .inputs = {x, I64({3}, {1})}, .num_outputs = 2,
             .expected = {F({3, 2, 1, 7, 6, 5, 11, 10, 9}, {3, 3}), I64({3, 2, 1, 3, 2, 1, 3, 2, 1}, {3, 3})},
             .constant_inputs = {1}});
  RunOpCase({.label = "smallest, axis 0", .op_type = "TopK", .attrs = {{"largest", AInt(0)}, {"axis", AInt(0)}},
             .inputs = {x, I64({2}, {1})}, .num_outputs = 2,
             .expected = {F({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}), I64({0, 0, 0, 0, 1, 1, 1, 1}, {2, 4})}});
  RunOpCase({.label = "ties keep index order", .op_type = "TopK", .inputs = {F({1, 3, 3, 2, 3}, {5}), I64({3}, {1})},
             .num_outputs = 2, .expected = {F({3, 3, 3}, {3}), I64({1, 2, 4}, {3})}});
  RunOpCase({.label = "ties smallest", .op_type = "TopK", .attrs = {{"largest", AInt(0)}},
             .inputs = {F({2, 1, 2, 1}, {4}), I64({3}, {1})}, .num_outputs = 2,
             .expected = {F({1, 1, 2}, {3}), I64({1, 3, 0}, {3})}});
  RunOpCase({.label = "opset 1 k attribute", .op_type = "TopK", .opset = 1, .attrs = {{"k", AInt(1)}},
             .inputs = {x}, .num_outputs = 2, .expected = {F({3, 7, 11}, {3, 1}), I64({3, 3, 3}, {3, 1})}});
  RunOpCase({.label = "k = 0", .op_type = "TopK", .inputs = {x, I64({0}, {1})}, .num_outputs = 2,
             .expected = {F({}, {3, 0}), I64({}, {3, 0})}});
  RunOpCase({.label = "NaN ranks first", .op_type = "TopK", .inputs = {F({1, kNan, 5}, {3}), I64({2}, {1})},
             .num_outputs = 2, .expected = {F({kNan, 5}, {2}), I64({1, 2}, {2})}});
  RunOpCase({.label = "int64 middle axis", .op_type = "TopK", .attrs = {{"axis", AInt(-2)}},
             .inputs = {I64({5, 1, 7, 2, 6, 9}, {1, 3, 2}), I64({1}, {1})}, .num_outputs = 2,
             .expected = {I64({7, 9}, {1, 1, 2}), I64({1, 2}, {1, 1, 2})}});
  RunOpCase({.label = "k too large", .op_type = "TopK", .inputs = {x, I64({5}, {1})}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "exceeds the axis length"});
  RunOpCase({.label = "negative k", .op_type = "TopK", .inputs = {x, I64({-1}, {1})}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "k must be >= 0"});
  RunOpCase({.label = "opset 10 without K", .op_type = "TopK", .opset = 10, .attrs = {{"k", AInt(1)}}, .inputs = {x},
             .num_outputs = 2, .expect_error = StatusCode::kInvalidArgument, .error_substr = "input K is missing"});
  RunOpCase({.label = "opset 1 without k", .op_type = "TopK", .opset = 1, .inputs = {x}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "'k'"});
  RunOpCase({.label = "K with two elements", .op_type = "TopK", .inputs = {x, I64({1, 2}, {2})}, .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "one element"});
}

TEST(CumSumTest, ExclusiveReverseAxes) {
  const Tensor v = F({1, 2, 3, 4, 5}, {5});
  RunOpCase({.label = "1-D", .op_type = "CumSum", .inputs = {v, I32({0}, {})},
             .expected = {F({1, 3, 6, 10, 15}, {5})}});
  RunOpCase({.label = "exclusive", .op_type = "CumSum", .attrs = {{"exclusive", AInt(1)}}, .inputs = {v, I64({0}, {})},
             .expected = {F({0, 1, 3, 6, 10}, {5})}});
  RunOpCase({.label = "reverse", .op_type = "CumSum", .attrs = {{"reverse", AInt(1)}}, .inputs = {v, I64({0}, {})},
             .expected = {F({15, 14, 12, 9, 5}, {5})}});
  RunOpCase({.label = "reverse exclusive", .op_type = "CumSum",
             .attrs = {{"reverse", AInt(1)}, {"exclusive", AInt(1)}}, .inputs = {v, I64({0}, {})},
             .expected = {F({14, 12, 9, 5, 0}, {5})}});
  const Tensor m = F({1, 2, 3, 4, 5, 6}, {2, 3});
  RunOpCase({.label = "2-D axis 0", .op_type = "CumSum", .inputs = {m, I64({0}, {})},
             .expected = {F({1, 2, 3, 5, 7, 9}, {2, 3})}});
  RunOpCase({.label = "2-D axis -1", .op_type = "CumSum", .inputs = {m, I64({-1}, {})},
             .expected = {F({1, 3, 6, 4, 9, 15}, {2, 3})}});
  RunOpCase({.label = "int32 middle axis", .op_type = "CumSum",
             .inputs = {I32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}), I32({1}, {})},
             .expected = {I32({1, 2, 4, 6, 5, 6, 12, 14}, {2, 2, 2})}});
  RunOpCase({.label = "float16", .op_type = "CumSum", .inputs = {Cast(v, DType::kFloat16), I64({0}, {})},
             .expected = {Cast(F({1, 3, 6, 10, 15}, {5}), DType::kFloat16)}});
  RunOpCase({.label = "zero-size", .op_type = "CumSum", .inputs = {F({}, {0, 3}), I64({1}, {})},
             .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "axis out of range", .op_type = "CumSum", .inputs = {m, I64({2}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "out of range"});
  RunOpCase({.label = "axis not 0-D", .op_type = "CumSum", .inputs = {m, I64({0, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "0-D"});
}

TEST(EinsumTest, ContractionsAgainstNumpy) {
  auto E = [](std::string eq) { return graph::AttributeMap{{"equation", AString(std::move(eq))}}; };
  RunOpCase({.label = "implicit matmul", .op_type = "Einsum", .attrs = E("ij,jk"),
             .inputs = {Seq({2, 3}), Seq({3, 4}, 0.5f)},
             .expected = {F({21, -14, 16, -19, -1, 2.5f, -0.5f, 3}, {2, 4})}});
  RunOpCase({.label = "batch matmul", .op_type = "Einsum", .attrs = E("bij, bjk -> bik"),
             .inputs = {Seq({2, 2, 3}), Seq({2, 3, 2}, 0.25f)},
             .expected = {F({12.75f, -4.75f, -1, 0.75f, 0.75f, -1, -4.75f, 12.75f}, {2, 2, 2})}});
  RunOpCase({.label = "trace", .op_type = "Einsum", .attrs = E("ii"), .inputs = {Seq({3, 3})},
             .expected = {F({-12}, {})}});
  RunOpCase({.label = "diagonal", .op_type = "Einsum", .attrs = E("ii->i"), .inputs = {Seq({3, 3})},
             .expected = {F({-6, -4, -2}, {3})}});
  RunOpCase({.label = "batch diagonal", .op_type = "Einsum", .attrs = E("...ii->...i"), .inputs = {Seq({2, 3, 3})},
             .expected = {F({-6, -4, -2, 5, -6, -4}, {2, 3})}});
  RunOpCase({.label = "transpose", .op_type = "Einsum", .attrs = E("ij->ji"), .inputs = {Seq({2, 3})},
             .expected = {F({-6, 2, 1, -4, -5, 3}, {3, 2})}});
  RunOpCase({.label = "inner product", .op_type = "Einsum", .attrs = E("i,i"), .inputs = {Seq({4}), Seq({4}, 2)},
             .expected = {F({132}, {})}});
  RunOpCase({.label = "outer product", .op_type = "Einsum", .attrs = E("i,j->ij"), .inputs = {Seq({2}), Seq({3}, 0.5f)},
             .expected = {F({18, -3, 15, -3, 0.5f, -2.5f}, {2, 3})}});
  RunOpCase({.label = "row sums", .op_type = "Einsum", .attrs = E("ij->i"), .inputs = {Seq({2, 3})},
             .expected = {F({-10, 1}, {2})}});
  RunOpCase({.label = "ellipsis broadcast", .op_type = "Einsum", .attrs = E("...ij,...jk->...ik"),
             .inputs = {Seq({2, 1, 2, 3}), Seq({3, 3, 2}, 0.5f)},
             .expected = {F({25.5f, -9.5f, -2, 1.5f, 10.5f, -24.5f, -0.5f, 3, -4.5f, 25.5f, 1, -2,
                             3, -0.5f, -24.5f, 10.5f, 1.5f, -2, -9.5f, 25.5f, 0, 3, 5.5f, -24.5f}, {2, 3, 2, 2})}});
  RunOpCase({.label = "three operands", .op_type = "Einsum", .attrs = E("ij,jk,kl->il"),
             .inputs = {Seq({2, 3}), Seq({3, 4}, 0.5f), Seq({4, 2}, 0.25f)},
             .expected = {F({-15.75f, -8.75f, -3.375f, 3.625f}, {2, 2})}});
  RunOpCase({.label = "size-1 label broadcasts", .op_type = "Einsum", .attrs = E("ij,ij->ij"),
             .inputs = {Seq({2, 1}), Seq({2, 3}, 0.5f)}, .expected = {F({18, -3, 15, 1, -2, 1.5f}, {2, 3})}});
  RunOpCase({.label = "implicit order is ASCII", .op_type = "Einsum", .attrs = E("Ba,aC"),
             .inputs = {Seq({2, 3}), Seq({3, 2}, 0.5f)}, .expected = {F({25.5f, -9.5f, -2, 1.5f}, {2, 2})}});
  RunOpCase({.label = "trace times vector", .op_type = "Einsum", .attrs = E("bii,bj->bj"),
             .inputs = {Seq({2, 3, 3}), Seq({2, 4})}, .expected = {F({72, -12, 60, -24, 20, -15, 15, -20}, {2, 4})}});
  RunOpCase({.label = "sum and transpose", .op_type = "Einsum", .attrs = E("ijk->kj"), .inputs = {Seq({2, 3, 4})},
             .expected = {F({-6, -2, 2, -5, -1, 3, -4, 0, 4, -3, 1, 5}, {4, 3})}});
  RunOpCase({.label = "int32", .op_type = "Einsum", .attrs = E("ij,jk"),
             .inputs = {I32({1, 2, 3, 4}, {2, 2}), I32({5, 6, 7, 8}, {2, 2})},
             .expected = {I32({19, 22, 43, 50}, {2, 2})}});
  RunOpCase({.label = "zero-size contraction", .op_type = "Einsum", .attrs = E("ij,jk->ik"),
             .inputs = {F({}, {2, 0}), F({}, {0, 3})}, .expected = {F({0, 0, 0, 0, 0, 0}, {2, 3})}});
  RunOpCase({.label = "float16", .op_type = "Einsum", .attrs = E("i,i->"),
             .inputs = {Cast(F({1, 2, 3}, {3}), DType::kFloat16), Cast(F({4, 5, 6}, {3}), DType::kFloat16)},
             .expected = {Cast(F({32}, {}), DType::kFloat16)}});
}

TEST(EinsumTest, Errors) {
  auto E = [](std::string eq) { return graph::AttributeMap{{"equation", AString(std::move(eq))}}; };
  RunOpCase({.label = "term count", .op_type = "Einsum", .attrs = E("ij,jk"), .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "2 input terms"});
  RunOpCase({.label = "bad character", .op_type = "Einsum", .attrs = E("i1->i"), .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "character '1'"});
  RunOpCase({.label = "rank mismatch", .op_type = "Einsum", .attrs = E("ijk->i"), .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "has rank 2"});
  RunOpCase({.label = "size mismatch", .op_type = "Einsum", .attrs = E("ij,jk"), .inputs = {Seq({2, 3}), Seq({4, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "label 'j' has size"});
  RunOpCase({.label = "unknown output label", .op_type = "Einsum", .attrs = E("ij->k"), .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "does not appear"});
  RunOpCase({.label = "diagonal of non-square", .op_type = "Einsum", .attrs = E("ii->i"), .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "label 'i'"});
  const int64_t big = int64_t{1} << 21;
  RunOpCase({.label = "outer product too large", .op_type = "Einsum", .attrs = E("a,b->ab"),
             .inputs = {F(std::vector<float>(big), {big}), F(std::vector<float>(big), {big})},
             .expect_error = StatusCode::kResourceExhausted, .error_substr = "too large"});
  RunOpCase({.label = "missing equation", .op_type = "Einsum", .inputs = {Seq({2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "equation"});
}

TEST(DetTest, LuWithPivoting) {
  RunOpCase({.label = "2x2", .op_type = "Det", .inputs = {F({1, 2, 3, 4}, {2, 2})}, .expected = {F({-2}, {})}});
  RunOpCase({.label = "3x3 needs pivoting", .op_type = "Det", .inputs = {F({0, 1, 0, 1, 0, 0, 0, 0, 1}, {3, 3})},
             .expected = {F({-1}, {})}});
  RunOpCase({.label = "3x3 numpy", .op_type = "Det", .inputs = {F({4, 1, -5, 2, 6, 3, -3, 4, 8}, {3, 3})},
             .expected = {F({-11}, {})}, .rtol = 1e-5, .atol = 1e-5});
  RunOpCase({.label = "batched [2,2,2,2]", .op_type = "Det",
             .inputs = {F({-2, 0.5f, -2.5f, 2, -1, 1.5f, -1.5f, 3, 0, 2.5f, -0.5f, 4, 1, -3, 0.5f, -1.5f},
                          {2, 2, 2, 2})},
             .expected = {F({-2.75f, -0.75f, 1.25f, 0}, {2, 2})}});
  RunOpCase({.label = "singular", .op_type = "Det", .inputs = {D({1, 2, 2, 4}, {2, 2})}, .expected = {D({0}, {})}});
  RunOpCase({.label = "empty batch", .op_type = "Det", .inputs = {F({}, {0, 3, 3})}, .expected = {F({}, {0})}});
  RunOpCase({.label = "not square", .op_type = "Det", .inputs = {F({1, 2, 3, 4, 5, 6}, {2, 3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "square"});
  RunOpCase({.label = "int input", .op_type = "Det", .inputs = {I64({1, 2, 3, 4}, {2, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "float tensor"});
}

}  // namespace
}  // namespace strata::testing
