// Table rows for the indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements, Scatter, OneHot,
// NonZero, Compress, Unique, ReverseSequence, EyeLike. Expected values are by hand or from numpy (take,
// take_along_axis, fancy indexing, nonzero, compress, unique, eye).
#include <cmath>

#include "tests/ops/op_harness.h"


namespace strata::testing {
namespace {

Tensor Iota(std::vector<int64_t> shape, float start = 0) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape(shape));
  float v = start;
  for (float& x : t.mutable_values<float>()) x = v++;
  return t;
}

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> shape) { return T_<std::string>(std::move(v), shape); }

TEST(GatherTest, AxesNegativeIndicesAndErrors) {
  RunOpCase({.label = "axis 0, 2-D indices", .op_type = "Gather", .inputs = {Iota({3, 2}), I64({0, 2, 2, 1}, {2, 2})},
             .expected = {F({0, 1, 4, 5, 4, 5, 2, 3}, {2, 2, 2})}});
  RunOpCase({.label = "axis 1, negative", .op_type = "Gather", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({2, 3, 2}), I32({-1, 0}, {2})}, .expected = {F({4, 5, 0, 1, 10, 11, 6, 7}, {2, 2, 2})}});
  RunOpCase({.label = "scalar index drops the axis", .op_type = "Gather", .attrs = {{"axis", AInt(-1)}},
             .inputs = {Iota({2, 3}), I64({1}, {})}, .expected = {F({1, 4}, {2})}});
  RunOpCase({.label = "empty indices", .op_type = "Gather", .inputs = {Iota({3, 2}), I64({}, {0})},
             .expected = {F({}, {0, 2})}});
  RunOpCase({.label = "strings", .op_type = "Gather", .inputs = {Strings({"a", "b", "c"}, {3}), I64({2, 2, 0}, {3})},
             .expected = {Strings({"c", "c", "a"}, {3})}});
  RunOpCase({.label = "index too large", .op_type = "Gather", .inputs = {Iota({3, 2}), I64({0, 3}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "Gather index 3 is out of range for a dimension of size 3"});
  RunOpCase({.label = "index too small", .op_type = "Gather", .inputs = {Iota({3}), I64({-4}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "index -4 is out of range"});
  RunOpCase({.label = "float indices", .op_type = "Gather", .inputs = {Iota({3}), F({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "int32 or int64"});
}

TEST(GatherElementsTest, AxesAndErrors) {
  RunOpCase({.label = "axis 1", .op_type = "GatherElements", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({2, 3}), I64({2, 0, -1, 1}, {2, 2})},
             .expected = {F({2, 0, 5, 4}, {2, 2})}});
  RunOpCase({.label = "axis 0, indices larger along axis", .op_type = "GatherElements",
             .inputs = {Iota({2, 3}), I32({1, 0, 1, 0, 0, 1, 1, 1, 0}, {3, 3})},
             .expected = {F({3, 1, 5, 0, 1, 5, 3, 4, 2}, {3, 3})}});
  RunOpCase({.label = "out of range", .op_type = "GatherElements", .inputs = {Iota({2, 2}), I64({0, 2}, {1, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "GatherElements index 2 is out of range"});
  RunOpCase({.label = "rank mismatch", .op_type = "GatherElements", .inputs = {Iota({2, 2}), I64({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must have the rank of data"});
}

TEST(GatherNDTest, TuplesSlicesAndBatchDims) {
  RunOpCase({.label = "full tuples", .op_type = "GatherND", .inputs = {Iota({2, 2}), I64({0, 0, 1, 1}, {2, 2})},
             .expected = {F({0, 3}, {2})}});
  RunOpCase({.label = "slices", .op_type = "GatherND", .inputs = {Iota({2, 2, 3}), I64({1, 0, -2, 1}, {2, 1, 2})},
             .expected = {F({6, 7, 8, 3, 4, 5}, {2, 1, 3})}});
  RunOpCase({.label = "batch_dims 1", .op_type = "GatherND", .attrs = {{"batch_dims", AInt(1)}},
             .inputs = {Iota({2, 3, 2}), I64({2, 0, 1, 1}, {2, 2, 1})},
             .expected = {F({4, 5, 0, 1, 8, 9, 8, 9}, {2, 2, 2})}});
  RunOpCase({.label = "batch_dims 2", .op_type = "GatherND", .attrs = {{"batch_dims", AInt(2)}},
             .inputs = {Iota({2, 2, 3}), I64({2, 0, 1, 2}, {2, 2, 1})}, .expected = {F({2, 3, 7, 11}, {2, 2})}});
  RunOpCase({.label = "out of range", .op_type = "GatherND", .inputs = {Iota({2, 2}), I64({0, 2}, {1, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "GatherND index 2 is out of range"});
  RunOpCase({.label = "tuple too long", .op_type = "GatherND", .inputs = {Iota({2}), I64({0, 0}, {1, 2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "index tuples have 2 entries"});
}

TEST(ScatterNDTest, ReductionsAndErrors) {
  RunOpCase({.label = "elements", .op_type = "ScatterND",
             .inputs = {Iota({8}), I64({4, 3, 1, 7}, {4, 1}), F({9, 10, 11, 12}, {4})},
             .expected = {F({0, 11, 2, 10, 9, 5, 6, 12}, {8})}});
  RunOpCase({.label = "slices, negative index", .op_type = "ScatterND",
             .inputs = {Iota({3, 2}), I64({-1, 0}, {2, 1}), F({5, 6, 7, 8}, {2, 2})},
             .expected = {F({7, 8, 2, 3, 5, 6}, {3, 2})}});
  RunOpCase({.label = "add with duplicates", .op_type = "ScatterND", .opset = 16,
             .attrs = {{"reduction", AString("add")}},
             .inputs = {Iota({4}), I64({1, 1, 3}, {3, 1}), F({10, 20, 30}, {3})},
             .expected = {F({0, 31, 2, 33}, {4})}});
  RunOpCase({.label = "mul int64", .op_type = "ScatterND", .opset = 16, .attrs = {{"reduction", AString("mul")}},
             .inputs = {I64({1, 2, 3}, {3}), I64({2, 2}, {2, 1}), I64({4, 5}, {2})},
             .expected = {I64({1, 2, 60}, {3})}});
  RunOpCase({.label = "max and min (opset 18)", .op_type = "ScatterND", .opset = 18,
             .attrs = {{"reduction", AString("max")}},
             .inputs = {Iota({3}), I64({0, 2}, {2, 1}), F({-1, 5}, {2})}, .expected = {F({0, 1, 5}, {3})}});
  RunOpCase({.label = "min", .op_type = "ScatterND", .opset = 18, .attrs = {{"reduction", AString("min")}},
             .inputs = {Iota({3}), I64({0, 2}, {2, 1}), F({-1, 5}, {2})}, .expected = {F({-1, 1, 2}, {3})}});
  RunOpCase({.label = "strings", .op_type = "ScatterND",
             .inputs = {Strings({"a", "b"}, {2}), I64({1}, {1, 1}), Strings({"z"}, {1})},
             .expected = {Strings({"a", "z"}, {2})}});
  RunOpCase({.label = "index out of range", .op_type = "ScatterND",
             .inputs = {Iota({4}), I64({4}, {1, 1}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "ScatterND index 4 is out of range for a dimension of size 4"});
  RunOpCase({.label = "updates shape", .op_type = "ScatterND", .inputs = {Iota({4}), I64({1}, {1, 1}), F({1, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "updates have shape [2], expected [1]"});
  RunOpCase({.label = "bad reduction", .op_type = "ScatterND", .attrs = {{"reduction", AString("avg")}},
             .inputs = {Iota({4}), I64({1}, {1, 1}), F({1}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "reduction 'avg'"});
}

TEST(ScatterElementsTest, AxesReductionsAndAlias) {
  RunOpCase({.label = "axis 0", .op_type = "ScatterElements", .inputs = {F({0, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 3}),
             I64({1, 0, 2, 0, 2, 1}, {2, 3}), F({1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}, {2, 3})},
             .expected = {F({2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}, {3, 3})}});
  RunOpCase({.label = "axis -1, negative index", .op_type = "ScatterElements", .attrs = {{"axis", AInt(-1)}},
             .inputs = {Iota({1, 5}), I64({1, -2}, {1, 2}), F({10, 20}, {1, 2})},
             .expected = {F({0, 10, 2, 20, 4}, {1, 5})}});
  RunOpCase({.label = "add duplicates", .op_type = "ScatterElements", .opset = 16,
             .attrs = {{"axis", AInt(1)}, {"reduction", AString("add")}},
             .inputs = {Iota({2, 3}), I64({1, 1, 0, 2}, {2, 2}), F({1, 2, 3, 4}, {2, 2})},
             .expected = {F({0, 4, 2, 6, 4, 9}, {2, 3})}});
  RunOpCase({.label = "mul int32", .op_type = "ScatterElements", .opset = 16, .attrs = {{"reduction", AString("mul")}},
             .inputs = {I32({2, 3}, {2}), I32({0, 0}, {2}), I32({5, 7}, {2})}, .expected = {I32({70, 3}, {2})}});
  RunOpCase({.label = "Scatter alias (opset 9)", .op_type = "Scatter", .opset = 9, .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({1, 4}), I64({3}, {1, 1}), F({-5}, {1, 1})}, .expected = {F({0, 1, 2, -5}, {1, 4})}});
  RunOpCase({.label = "out of range", .op_type = "ScatterElements", .inputs = {Iota({2}), I64({-3}, {1}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "ScatterElements index -3 is out of range"});
  RunOpCase({.label = "indices exceed data", .op_type = "ScatterElements", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({1, 2}), I64({0, 0}, {2, 1}), F({1, 1}, {2, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "exceed data"});
}

TEST(OneHotTest, AxesNegativeIndicesAndOutOfRange) {
  RunOpCase({.label = "default axis", .op_type = "OneHot",
             .inputs = {I64({0, 2, -1, 5}, {4}), I64({3}, {}), F({0, 1}, {2})},
             .expected = {F({1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}, {4, 3})}, .constant_inputs = {1}});
  RunOpCase({.label = "axis 0, float indices and depth", .op_type = "OneHot", .attrs = {{"axis", AInt(0)}},
             .inputs = {F({1.7f, 0.0f}, {2}), F({2.0f}, {1}), I32({-1, 7}, {2})},
             .expected = {I32({-1, 7, 7, -1}, {2, 2})}});
  RunOpCase({.label = "axis 1 of 3", .op_type = "OneHot", .attrs = {{"axis", AInt(-2)}},
             .inputs = {I32({0, 1, 1, 0}, {2, 2}), I64({2}, {}), I64({0, 1}, {2})},
             .expected = {I64({1, 0, 0, 1, 0, 1, 1, 0}, {2, 2, 2})}});
  RunOpCase({.label = "bad values", .op_type = "OneHot", .inputs = {I64({0}, {1}), I64({2}, {}), F({0, 1, 2}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "[off_value, on_value]"});
  RunOpCase({.label = "bad depth", .op_type = "OneHot", .inputs = {I64({0}, {1}), I64({0}, {}), F({0, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "depth must be a positive number"});
}

TEST(NonZeroTest, RanksAndTypes) {
  RunOpCase({.label = "2-D", .op_type = "NonZero", .inputs = {F({1, 0, 0, 2, 0, 3}, {2, 3})},
             .expected = {I64({0, 1, 1, 0, 0, 2}, {2, 3})}});
  RunOpCase({.label = "bool 3-D", .op_type = "NonZero",
             .inputs = {B({false, true, true, false, false, true, true, false}, {2, 2, 2})},
             .expected = {I64({0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0}, {3, 4})}});
  RunOpCase({.label = "none", .op_type = "NonZero", .inputs = {I32({0, 0}, {2})}, .expected = {I64({}, {1, 0})}});
  RunOpCase({.label = "scalar", .op_type = "NonZero", .inputs = {F({3}, {})}, .expected = {I64({0}, {1, 1})}});
  RunOpCase({.label = "strings", .op_type = "NonZero", .inputs = {Strings({"", "x", "", "yz"}, {4})},
             .expected = {I64({1, 3}, {1, 2})}});
}

TEST(CompressTest, AxesAndShortConditions) {
  RunOpCase({.label = "axis 0", .op_type = "Compress", .attrs = {{"axis", AInt(0)}},
             .inputs = {Iota({3, 2}), B({false, true, true}, {3})},
             .expected = {F({2, 3, 4, 5}, {2, 2})}});
  RunOpCase({.label = "axis -1, short condition", .op_type = "Compress", .attrs = {{"axis", AInt(-1)}},
             .inputs = {Iota({2, 3}), B({true, false}, {2})}, .expected = {F({0, 3}, {2, 1})}});
  RunOpCase({.label = "flattened", .op_type = "Compress", .inputs = {Iota({2, 2}), B({false, true, false, true}, {4})},
             .expected = {F({1, 3}, {2})}});
  RunOpCase({.label = "nothing kept", .op_type = "Compress", .attrs = {{"axis", AInt(1)}},
             .inputs = {Iota({2, 2}), B({false, false}, {2})},
             .expected = {F({}, {2, 0})}});
  RunOpCase({.label = "condition too long", .op_type = "Compress", .attrs = {{"axis", AInt(0)}},
             .inputs = {Iota({2}), B({false, false, true}, {3})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "true entry at 2"});
}

TEST(UniqueTest, SortedUnsortedAndAxis) {
  RunOpCase({.label = "sorted", .op_type = "Unique", .inputs = {F({2, 1, 1, 3, 4, 3}, {6})}, .num_outputs = 4,
             .expected = {F({1, 2, 3, 4}, {4}), I64({1, 0, 3, 4}, {4}), I64({1, 0, 0, 2, 3, 2},
             {6}), I64({2, 1, 2, 1}, {4})}});
  RunOpCase({.label = "unsorted", .op_type = "Unique", .attrs = {{"sorted", AInt(0)}},
             .inputs = {I64({2, 1, 1, 3, 4, 3}, {2, 3})},
             .num_outputs = 4,
             .expected = {I64({2, 1, 3, 4}, {4}), I64({0, 1, 3, 4}, {4}), I64({0, 1, 1, 2, 3, 2},
             {6}), I64({1, 2, 2, 1}, {4})}});
  RunOpCase({.label = "axis 1", .op_type = "Unique", .attrs = {{"axis", AInt(1)}},
             .inputs = {F({1, 0, 1, 0, 2, 3, 2, 3}, {2, 4})}, .num_outputs = 4,
             .expected = {F({0, 1, 3, 2}, {2, 2}), I64({1, 0}, {2}), I64({1, 0, 1, 0}, {4}), I64({2, 2}, {2})}});
  RunOpCase({.label = "strings, only Y", .op_type = "Unique", .inputs = {Strings({"b", "a", "b"}, {3})},
             .expected = {Strings({"a", "b"}, {2})}});
  RunOpCase({.label = "NaNs collapse", .op_type = "Unique", .inputs = {F({NAN, 1, NAN}, {3})}, .num_outputs = 4,
             .expected = {F({1, NAN}, {2}), I64({1, 0}, {2}), I64({1, 0, 1}, {3}), I64({1, 2}, {2})}});
  RunOpCase({.label = "empty", .op_type = "Unique", .inputs = {F({}, {0})}, .num_outputs = 2,
             .expected = {F({}, {0}), I64({}, {0})}});
}

TEST(ReverseSequenceTest, BatchAndTimeAxes) {
  RunOpCase({.label = "time axis 0", .op_type = "ReverseSequence", .inputs = {Iota({4, 2}), I64({3, 1}, {2})},
             .expected = {F({4, 1, 2, 3, 0, 5, 6, 7}, {4, 2})}});
  RunOpCase({.label = "batch axis 0, inner dims", .op_type = "ReverseSequence",
             .attrs = {{"batch_axis", AInt(0)}, {"time_axis", AInt(1)}}, .inputs = {Iota({2, 3, 2}), I64({2, 0}, {2})},
             .expected = {F({2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2})}});
  RunOpCase({.label = "length too long", .op_type = "ReverseSequence", .inputs = {Iota({2, 2}), I64({3, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "sequence length 3 is out of range [0, 2]"});
  RunOpCase({.label = "same axes", .op_type = "ReverseSequence", .attrs = {{"batch_axis", AInt(0)}},
             .inputs = {Iota({2, 2}), I64({1, 1}, {2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "must be 0 and 1"});
}

TEST(EyeLikeTest, DiagonalsAndTypes) {
  RunOpCase({.label = "k=1 float", .op_type = "EyeLike", .attrs = {{"k", AInt(1)}}, .inputs = {Iota({3, 4})},
             .expected = {F({0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {3, 4})}});
  RunOpCase({.label = "k=-2 as int64", .op_type = "EyeLike", .attrs = {{"k", AInt(-2)}, {"dtype", AInt(7)}},
             .inputs = {I32({0, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 3})},
             .expected = {I64({0, 0, 0, 0, 0, 0, 1, 0, 0}, {3, 3})}});
  RunOpCase({.label = "k off the matrix", .op_type = "EyeLike", .attrs = {{"k", AInt(5)}},
             .inputs = {B({true, true}, {1, 2})},
             .expected = {B({false, false}, {1, 2})}});
  RunOpCase({.label = "rank 3", .op_type = "EyeLike", .inputs = {Iota({1, 1, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "needs a 2-D input"});
}


// Index ops move elements by width: one row per width and for the 16-bit float types.
TEST(IndexDtypeTest, WidthsAndHalfFloats) {
  RunOpCase({.label = "Gather bfloat16", .op_type = "Gather",
             .inputs = {Cast(Iota({3, 2}), DType::kBFloat16), I64({2, 0}, {2})},
             .expected = {Cast(F({4, 5, 0, 1}, {2, 2}), DType::kBFloat16)}});
  RunOpCase({.label = "Transpose float16", .op_type = "Transpose", .inputs = {Cast(Iota({2, 3}), DType::kFloat16)},
             .expected = {Cast(F({0, 3, 1, 4, 2, 5}, {3, 2}), DType::kFloat16)}});
  RunOpCase({.label = "ScatterND add float16", .op_type = "ScatterND", .attrs = {{"reduction", AString("add")}},
             .inputs = {Cast(Iota({3}), DType::kFloat16), I64({1, 1}, {2, 1}), Cast(F({0.5f, 0.25f},
             {2}), DType::kFloat16)},
             .expected = {Cast(F({0, 1.75f, 2}, {3}), DType::kFloat16)}});
  RunOpCase({.label = "GatherElements uint8", .op_type = "GatherElements",
             .inputs = {T_<uint8_t>({1, 2, 3, 4}, {2, 2}), I64({1, 0}, {1, 2})},
             .expected = {T_<uint8_t>({3, 2}, {1, 2})}});
  RunOpCase({.label = "Compress int16", .op_type = "Compress",
             .inputs = {T_<int16_t>({-1, 2, -3}, {3}), B({true, false, true}, {3})},
             .expected = {T_<int16_t>({-1, -3}, {2})}});
  RunOpCase({.label = "OneHot to bool", .op_type = "OneHot",
             .inputs = {T_<int8_t>({1}, {1}), I32({2}, {1}), B({false, true}, {2})},
             .expected = {B({false, true}, {1, 2})}});
  RunOpCase({.label = "Unique uint64", .op_type = "Unique", .inputs = {T_<uint64_t>({5, ~uint64_t{0}, 5}, {3})},
             .expected = {T_<uint64_t>({5, ~uint64_t{0}}, {2})}});
  RunOpCase({.label = "NonZero float16", .op_type = "NonZero", .inputs = {Cast(F({0, -2, 0}, {3}), DType::kFloat16)},
             .expected = {I64({1}, {1, 1})}});
}

}  // namespace
}  // namespace strata::testing
