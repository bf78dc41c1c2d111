// Table rows for Cast and CastLike. Expected values: numpy's astype() and str() on the same inputs (printed by
// /usr/bin/python3), except where strata documents its own choice (saturating float -> int, bfloat16 truncation as in
// ONNX 1.12's conformance data), which are by hand.
#include <cstdint>
#include <limits>
#include <string>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

template <typename T>
Tensor V(std::vector<T> v, std::vector<int64_t> shape) {
  return T_<T>(std::move(v), std::move(shape));
}
Tensor S(std::vector<std::string> v, std::vector<int64_t> shape) { return T_<std::string>(std::move(v), std::move(shape)); }
graph::AttributeMap To(DType t) { return {{"to", AInt(static_cast<int64_t>(t))}}; }

TEST(CastTest, NumericPairs) {
  RunOpCase({.label = "float -> int8 truncates", .op_type = "Cast", .attrs = To(DType::kInt8),
             .inputs = {F({1.9f, -1.9f, 0.5f, -0.5f}, {4})}, .expected = {V<int8_t>({1, -1, 0, 0}, {4})}});
  RunOpCase({.label = "float -> int32 saturates, NaN -> 0", .op_type = "Cast", .attrs = To(DType::kInt32),
             .inputs = {F({3e9f, -3e9f, kNaN}, {3})}, .expected = {I32({2147483647, -2147483647 - 1, 0}, {3})}});
  RunOpCase({.label = "int32 -> uint8 wraps", .op_type = "Cast", .attrs = To(DType::kUInt8),
             .inputs = {I32({1, 0, -3, 255}, {4})}, .expected = {V<uint8_t>({1, 0, 253, 255}, {4})}});
  RunOpCase({.label = "float -> bool", .op_type = "Cast", .attrs = To(DType::kBool),
             .inputs = {F({0.0f, -0.0f, 2.0f, kNaN}, {4})}, .expected = {B({false, false, true, true}, {4})}});
  RunOpCase({.label = "bool -> float", .op_type = "Cast", .attrs = To(DType::kFloat32), .inputs = {B({true, false}, {2})},
             .expected = {F({1, 0}, {2})}});
  RunOpCase({.label = "int64 -> double", .op_type = "Cast", .attrs = To(DType::kFloat64),
             .inputs = {I64({-7, INT64_C(1) << 40}, {2})}, .expected = {D({-7, 1099511627776.0}, {2})}});
  RunOpCase({.label = "float -> float16", .op_type = "Cast", .attrs = To(DType::kFloat16),
             .inputs = {F({0.1f, 65504, 70000, -kInf}, {4})},
             .expected = {T_<Float16>({Float16::FromBits(0x2e66), Float16::FromBits(0x7bff), Float16::FromBits(0x7c00),
                                       Float16::FromBits(0xfc00)},
                                      {4})}});
  // 0.1 as a double -> half 0x2e66 (numpy: np.float16(np.float64(0.1)).view(np.uint16) = 11878).
  RunOpCase({.label = "double -> float16", .op_type = "Cast", .attrs = To(DType::kFloat16),
             .inputs = {D({0.1, 1.0 / 3, 65520.0, 1e-8}, {4})},
             .expected = {T_<Float16>({Float16::FromBits(11878), Float16::FromBits(13653), Float16::FromBits(0x7c00),
                                       Float16::FromBits(0)},
                                      {4})}});
  // float -> bfloat16 keeps the top 16 bits (0.48033667 -> 0x3ef5 = 0.47851562; rounding would give 0x3ef6).
  RunOpCase({.label = "float -> bfloat16 truncates", .op_type = "Cast", .attrs = To(DType::kBFloat16),
             .inputs = {F({0.48033667f, -1.0f, kNaN, kInf}, {4})},
             .expected = {T_<BFloat16>({BFloat16::FromBits(0x3ef5), BFloat16::FromBits(0xbf80), BFloat16::FromBits(0x7fc0),
                                        BFloat16::FromBits(0x7f80)},
                                       {4})}});
  RunOpCase({.label = "bfloat16 -> float", .op_type = "Cast", .attrs = To(DType::kFloat32),
             .inputs = {T_<BFloat16>({BFloat16::FromBits(0x3ef5), BFloat16::FromBits(0xff80)}, {2})},
             .expected = {F({0.478515625f, -kInf}, {2})}});
  RunOpCase({.label = "float16 -> int64", .op_type = "Cast", .attrs = To(DType::kInt64),
             .inputs = {Cast(F({-2.5f, 7.75f}, {2}), DType::kFloat16)}, .expected = {I64({-2, 7}, {2})}});
  RunOpCase({.label = "same type copies", .op_type = "Cast", .attrs = To(DType::kInt64), .inputs = {I64({1, 2}, {2})},
             .expected = {I64({1, 2}, {2})}});
  RunOpCase({.label = "zero-size", .op_type = "Cast", .attrs = To(DType::kFloat16), .inputs = {F({}, {0, 4})},
             .expected = {Cast(F({}, {0, 4}), DType::kFloat16)}});
  RunOpCase({.label = "scalar", .op_type = "Cast", .attrs = To(DType::kUInt16), .inputs = {F({7.9f}, {})},
             .expected = {V<uint16_t>({7}, {})}});
}

TEST(CastTest, Strings) {
  RunOpCase({.label = "float32 -> string as numpy str()", .op_type = "Cast", .attrs = To(DType::kString),
             .inputs = {F({0.1f, 1.0f, -2.5f, 1e-5f, 123456789.0f, 1e20f, kNaN, -kInf, 0.0001f, 0.3333333333f, 65504.0f,
                           -0.0f},
                          {12})},
             .expected = {S({"0.1", "1.0", "-2.5", "1e-05", "123456790.0", "1e+20", "nan", "-inf", "1e-04", "0.33333334",
                             "65504.0", "-0.0"},
                            {12})}});
  RunOpCase({.label = "float64 -> string", .op_type = "Cast", .attrs = To(DType::kString),
             .inputs = {D({0.1, 1.0 / 3, 1e16, 1e-7, 2.5e-4, 123456789.0}, {6})},
             .expected = {S({"0.1", "0.3333333333333333", "1e+16", "1e-07", "0.00025", "123456789.0"}, {6})}});
  RunOpCase({.label = "float16 -> string", .op_type = "Cast", .attrs = To(DType::kString),
             .inputs = {Cast(F({0.1f, 1.0f / 3, 65504, 1e-5f, 2.5f, -7.0f}, {6}), DType::kFloat16)},
             .expected = {S({"0.1", "0.3333", "65500.0", "1e-05", "2.5", "-7.0"}, {6})}});
  RunOpCase({.label = "int and bool -> string", .op_type = "Cast", .attrs = To(DType::kString),
             .inputs = {I64({-7, 0, 123}, {3})}, .expected = {S({"-7", "0", "123"}, {3})}});
  RunOpCase({.label = "bool -> string", .op_type = "Cast", .attrs = To(DType::kString), .inputs = {B({true, false}, {2})},
             .expected = {S({"True", "False"}, {2})}});
  RunOpCase({.label = "string -> float", .op_type = "Cast", .attrs = To(DType::kFloat32),
             .inputs = {S({"1.5", " -2e3 ", "+INF", "NaN", "1E-3", "-inf", "Infinity", "0.47892547"}, {2, 4})},
             .expected = {F({1.5f, -2000.0f, kInf, kNaN, 0.001f, -kInf, kInf, 0.47892547f}, {2, 4})}});
  RunOpCase({.label = "string -> int", .op_type = "Cast", .attrs = To(DType::kInt32),
             .inputs = {S({"42", "-7", "+3", "100.5", "-2.9"}, {5})}, .expected = {I32({42, -7, 3, 100, -2}, {5})}});
  RunOpCase({.label = "string -> uint8, bool, double", .op_type = "Cast", .attrs = To(DType::kUInt8),
             .inputs = {S({"255", "0"}, {2})}, .expected = {V<uint8_t>({255, 0}, {2})}});
  RunOpCase({.label = "string -> bool", .op_type = "Cast", .attrs = To(DType::kBool),
             .inputs = {S({"True", "false", "0", "2.5"}, {4})}, .expected = {B({true, false, false, true}, {4})}});
  RunOpCase({.label = "string -> string", .op_type = "Cast", .attrs = To(DType::kString), .inputs = {S({"a", ""}, {2})},
             .expected = {S({"a", ""}, {2})}});
  RunOpCase({.label = "unparsable", .op_type = "Cast", .attrs = To(DType::kFloat32), .inputs = {S({"1", "abc"}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "cannot parse \"abc\""});
  RunOpCase({.label = "out of int8 range", .op_type = "Cast", .attrs = To(DType::kInt8), .inputs = {S({"300"}, {1})},
             .expect_error = StatusCode::kOutOfRange, .error_substr = "out of range"});
}

TEST(CastTest, AttributeErrorsAndCastLike) {
  RunOpCase({.label = "missing to", .op_type = "Cast", .inputs = {F({1}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "to"});
  RunOpCase({.label = "complex target", .op_type = "Cast", .attrs = {{"to", AInt(14)}}, .inputs = {F({1}, {1})},
             .expect_error = StatusCode::kUnimplemented, .error_substr = "complex64"});
  RunOpCase({.label = "unknown target", .op_type = "Cast", .attrs = {{"to", AInt(99)}}, .inputs = {F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "99"});
  RunOpCase({.label = "castlike float -> int64", .op_type = "CastLike", .inputs = {F({1.5f, -2.5f}, {2}), I64({0}, {1})},
             .expected = {I64({1, -2}, {2})}});
  RunOpCase({.label = "castlike -> string", .op_type = "CastLike", .inputs = {F({0.5f}, {1}), S({""}, {1})},
             .expected = {S({"0.5"}, {1})}});
  RunOpCase({.label = "castlike string -> double", .op_type = "CastLike", .inputs = {S({"0.25"}, {}), D({}, {0})},
             .expected = {D({0.25}, {})}});
}

}  // namespace
}  // namespace strata::testing
