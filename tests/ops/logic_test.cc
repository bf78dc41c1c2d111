// Table rows for the logic family: comparisons, And/Or/Xor/Not, Where, bitwise ops. Expected values by hand.
#include <cstdint>
#include <limits>
#include <string>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <typename T>
Tensor V(std::vector<T> v, std::vector<int64_t> shape) {
  return T_<T>(std::move(v), std::move(shape));
}
Tensor S(std::vector<std::string> v, std::vector<int64_t> shape) { return T_<std::string>(std::move(v), std::move(shape)); }

TEST(CompareTest, AllPredicates) {
  const Tensor a = F({1, 2, 3, kNaN}, {4}), b = F({2, 2, 2, kNaN}, {4});
  RunOpCase({.label = "equal", .op_type = "Equal", .inputs = {a, b}, .expected = {B({false, true, false, false}, {4})}});
  RunOpCase({.label = "greater", .op_type = "Greater", .inputs = {a, b}, .expected = {B({false, false, true, false}, {4})}});
  RunOpCase({.label = "less", .op_type = "Less", .inputs = {a, b}, .expected = {B({true, false, false, false}, {4})}});
  RunOpCase({.label = "greater or equal", .op_type = "GreaterOrEqual", .inputs = {a, b},
             .expected = {B({false, true, true, false}, {4})}});
  RunOpCase({.label = "less or equal", .op_type = "LessOrEqual", .inputs = {a, b},
             .expected = {B({true, true, false, false}, {4})}});
}

TEST(CompareTest, DtypesAndBroadcasting) {
  RunOpCase({.label = "string equal", .op_type = "Equal", .inputs = {S({"a", "bc", ""}, {3}), S({"a", "b", ""}, {3})},
             .expected = {B({true, false, true}, {3})}});
  RunOpCase({.label = "bool equal broadcast", .op_type = "Equal", .inputs = {B({true, false}, {2, 1}), B({true, false}, {1, 2})},
             .expected = {B({true, false, false, true}, {2, 2})}});
  RunOpCase({.label = "int64 greater scalar", .op_type = "Greater", .inputs = {I64({-1, 0, 5}, {3}), I64({0}, {})},
             .expected = {B({false, false, true}, {3})}});
  RunOpCase({.label = "uint64 less", .op_type = "Less", .inputs = {V<uint64_t>({1ull << 63, 1}, {2}), V<uint64_t>({2, 2}, {2})},
             .expected = {B({false, true}, {2})}});
  RunOpCase({.label = "float16 equal", .op_type = "Equal",
             .inputs = {Cast(F({0.5f, 1}, {2}), DType::kFloat16), Cast(F({0.5f, 2}, {2}), DType::kFloat16)},
             .expected = {B({true, false}, {2})}});
  RunOpCase({.label = "double lessorequal", .op_type = "LessOrEqual", .inputs = {D({1, 2}, {2}), D({1.5}, {1})},
             .expected = {B({true, false}, {2})}});
  RunOpCase({.label = "zero-size", .op_type = "Equal", .inputs = {I32({}, {0, 2}), I32({1, 2}, {2})},
             .expected = {B({}, {0, 2})}});
  RunOpCase({.label = "opset 6 legacy broadcast axis 0", .op_type = "Greater", .opset = 6,
             .attrs = {{"broadcast", AInt(1)}, {"axis", AInt(0)}}, .inputs = {F({1, 2, 3, 4}, {2, 2}), F({2, 3}, {2})},
             .expected = {B({false, false, false, true}, {2, 2})}});
  RunOpCase({.label = "mixed dtypes", .op_type = "Equal", .inputs = {I32({1}, {1}), I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same element type"});
  RunOpCase({.label = "string greater", .op_type = "Greater", .inputs = {S({"a"}, {1}), S({"b"}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "numeric"});
  RunOpCase({.label = "bad broadcast", .op_type = "Less", .inputs = {F({1, 2}, {2}), F({1, 2, 3}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "cannot be broadcast"});
}

TEST(LogicalTest, AndOrXorNot) {
  const Tensor a = B({true, true, false, false}, {4}), b = B({true, false, true, false}, {4});
  RunOpCase({.label = "and", .op_type = "And", .inputs = {a, b}, .expected = {B({true, false, false, false}, {4})}});
  RunOpCase({.label = "or", .op_type = "Or", .inputs = {a, b}, .expected = {B({true, true, true, false}, {4})}});
  RunOpCase({.label = "xor", .op_type = "Xor", .inputs = {a, b}, .expected = {B({false, true, true, false}, {4})}});
  RunOpCase({.label = "not", .op_type = "Not", .inputs = {a}, .expected = {B({false, false, true, true}, {4})}});
  RunOpCase({.label = "and broadcast 3v1", .op_type = "And", .inputs = {B({true, false, true, true, false, true}, {2, 3}),
                                                                          B({true, true, false}, {3})},
             .expected = {B({true, false, false, true, false, false}, {2, 3})}});
  RunOpCase({.label = "or scalar", .op_type = "Or", .inputs = {B({false}, {}), B({false, true}, {2})},
             .expected = {B({false, true}, {2})}});
  RunOpCase({.label = "xor opset 6 broadcast axis", .op_type = "Xor", .opset = 6,
             .attrs = {{"broadcast", AInt(1)}, {"axis", AInt(0)}}, .inputs = {B({true, false, true, false}, {2, 2}),
                                                                              B({true, false}, {2})},
             .expected = {B({false, true, true, false}, {2, 2})}});
  RunOpCase({.label = "not zero-size", .op_type = "Not", .inputs = {B({}, {3, 0})}, .expected = {B({}, {3, 0})}});
  RunOpCase({.label = "and of floats", .op_type = "And", .inputs = {F({1}, {1}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be bool"});
  RunOpCase({.label = "not of int", .op_type = "Not", .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be bool"});
}

TEST(WhereTest, BroadcastAndDtypes) {
  RunOpCase({.label = "same shape", .op_type = "Where",
             .inputs = {B({true, false, true, false}, {2, 2}), F({1, 2, 3, 4}, {2, 2}), F({9, 8, 7, 6}, {2, 2})},
             .expected = {F({1, 8, 3, 6}, {2, 2})}});
  RunOpCase({.label = "three-way broadcast", .op_type = "Where",
             .inputs = {B({true, false}, {2, 1, 1}), I64({1, 2, 3}, {1, 3, 1}), I64({-1, -2}, {2})},
             .expected = {I64({1, 1, 2, 2, 3, 3, -1, -2, -1, -2, -1, -2}, {2, 3, 2})}});
  RunOpCase({.label = "strings", .op_type = "Where",
             .inputs = {B({false, true}, {2}), S({"x1", "x2"}, {2}), S({"y"}, {})}, .expected = {S({"y", "x2"}, {2})}});
  RunOpCase({.label = "bool values, scalar condition", .op_type = "Where",
             .inputs = {B({true}, {}), B({true, false}, {2}), B({false, false}, {2})}, .expected = {B({true, false}, {2})}});
  RunOpCase({.label = "float16", .op_type = "Where",
             .inputs = {B({true, false}, {2}), Cast(F({1, 2}, {2}), DType::kFloat16), Cast(F({3, 4}, {2}), DType::kFloat16)},
             .expected = {Cast(F({1, 4}, {2}), DType::kFloat16)}});
  RunOpCase({.label = "zero-size", .op_type = "Where", .inputs = {B({}, {0}), F({1}, {1}), F({2}, {1})},
             .expected = {F({}, {0})}});
  RunOpCase({.label = "large random broadcast", .op_type = "Where",
             .inputs = {Cast(RandomF({4, 1, 6}, 31), DType::kBool), RandomF({1, 5, 6}, 32), RandomF({4, 5, 1}, 33)}});
  RunOpCase({.label = "condition not bool", .op_type = "Where", .inputs = {I32({1}, {1}), F({1}, {1}), F({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be bool"});
  RunOpCase({.label = "X and Y differ", .op_type = "Where", .inputs = {B({true}, {1}), F({1}, {1}), D({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same element type"});
  RunOpCase({.label = "bad broadcast", .op_type = "Where", .inputs = {B({true, false}, {2}), F({1, 2, 3}, {3}), F({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "cannot be broadcast"});
}

TEST(BitwiseTest, IntegerOps) {
  RunOpCase({.label = "and", .op_type = "BitwiseAnd", .inputs = {V<uint8_t>({0xf0, 0x3c}, {2}), V<uint8_t>({0x3c}, {1})},
             .expected = {V<uint8_t>({0x30, 0x3c}, {2})}});
  RunOpCase({.label = "or", .op_type = "BitwiseOr", .inputs = {I32({1, -8}, {2}), I32({6, 3}, {2})},
             .expected = {I32({7, -5}, {2})}});
  RunOpCase({.label = "xor", .op_type = "BitwiseXor", .inputs = {I64({5, -1}, {2}), I64({3, 1}, {2})},
             .expected = {I64({6, -2}, {2})}});
  RunOpCase({.label = "not", .op_type = "BitwiseNot", .inputs = {V<int16_t>({0, -1, 5}, {3})},
             .expected = {V<int16_t>({-1, 0, -6}, {3})}});
  RunOpCase({.label = "not uint8", .op_type = "BitwiseNot", .inputs = {V<uint8_t>({0, 0x0f}, {2})},
             .expected = {V<uint8_t>({0xff, 0xf0}, {2})}});
  RunOpCase({.label = "float input", .op_type = "BitwiseAnd", .inputs = {F({1}, {1}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "integer"});
}

}  // namespace
}  // namespace strata::testing
