// Table rows for the elementwise math family: unary math and trig, IsNaN/IsInf, Pow, Mod, BitShift, Min/Max/Sum/Mean,
// Clip, Add/Sub/Mul/Div extensions (legacy broadcasting, wraparound). Expected values are by hand or from numpy
// (np.exp, np.power, np.mod, ... on the same inputs, printed with str()). Cast/CastLike rows are in cast_test.cc.
#include <cstdint>
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

template <typename T>
Tensor V(std::vector<T> v, std::vector<int64_t> shape) {
  return T_<T>(std::move(v), std::move(shape));
}
Tensor H(std::vector<float> v, std::vector<int64_t> shape) { return Cast(F(std::move(v), std::move(shape)), DType::kFloat16); }

const std::vector<float> kX = {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f};
const std::vector<float> kU = {-0.9f, -0.5f, 0.0f, 0.5f, 0.9f};
const std::vector<float> kP = {0.5f, 1.0f, 2.0f, 4.0f};

void Unary(const char* op, const std::vector<float>& in, std::vector<float> want) {
  const int64_t n = static_cast<int64_t>(in.size());
  RunOpCase({.label = "float32", .op_type = op, .inputs = {F(in, {n})}, .expected = {F(std::move(want), {n})}});
}

TEST(UnaryMathTest, FloatFunctionsMatchNumpy) {
  Unary("Exp", kX, {0.13533528f, 0.60653067f, 1.0f, 1.6487212f, 7.3890557f});
  Unary("Log", kP, {-0.6931472f, 0.0f, 0.6931472f, 1.3862944f});
  Unary("Sqrt", kP, {0.70710677f, 1.0f, 1.4142135f, 2.0f});
  Unary("Reciprocal", kP, {2.0f, 1.0f, 0.5f, 0.25f});
  Unary("Erf", kX, {-0.9953223f, -0.5204999f, 0.0f, 0.5204999f, 0.9953223f});
  Unary("Abs", kX, {2.0f, 0.5f, 0.0f, 0.5f, 2.0f});
  Unary("Neg", kX, {2.0f, 0.5f, -0.0f, -0.5f, -2.0f});
  Unary("Floor", {-1.5f, -0.5f, 0.5f, 1.5f, 2.0f}, {-2.0f, -1.0f, 0.0f, 1.0f, 2.0f});
  Unary("Ceil", {-1.5f, -0.5f, 0.5f, 1.5f, 2.0f}, {-1.0f, -0.0f, 1.0f, 2.0f, 2.0f});
  Unary("Sign", {-3.0f, -0.0f, 0.0f, 0.25f, kNaN}, {-1.0f, 0.0f, 0.0f, 1.0f, kNaN});
  // Round: halves go to the even neighbour (numpy.round).
  Unary("Round", {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f}, {0, 2, 2, -0.0f, -2, 2, 3, -3});
  Unary("Log", {-1.0f, 0.0f, kInf}, {kNaN, -kInf, kInf});
  Unary("Sqrt", {-1.0f}, {kNaN});
}

TEST(UnaryMathTest, TrigMatchesNumpy) {
  Unary("Sin", kX, {-0.9092974f, -0.47942555f, 0.0f, 0.47942555f, 0.9092974f});
  Unary("Cos", kX, {-0.4161468f, 0.87758255f, 1.0f, 0.87758255f, -0.4161468f});
  Unary("Tan", kX, {2.18504f, -0.5463025f, 0.0f, 0.5463025f, -2.18504f});
  Unary("Atan", kX, {-1.1071488f, -0.4636476f, 0.0f, 0.4636476f, 1.1071488f});
  Unary("Sinh", kX, {-3.6268604f, -0.5210953f, 0.0f, 0.5210953f, 3.6268604f});
  Unary("Cosh", kX, {3.7621956f, 1.1276261f, 1.0f, 1.1276261f, 3.7621956f});
  Unary("Asinh", kX, {-1.4436355f, -0.4812118f, 0.0f, 0.4812118f, 1.4436355f});
  Unary("Asin", kU, {-1.1197696f, -0.5235988f, 0.0f, 0.5235988f, 1.1197696f});
  Unary("Acos", kU, {2.6905658f, 2.0943952f, 1.5707964f, 1.0471976f, 0.45102686f});
  Unary("Atanh", kU, {-1.4722193f, -0.54930615f, 0.0f, 0.54930615f, 1.4722193f});
  Unary("Acosh", {1.5f, 2.0f, 3.0f, 5.0f}, {0.9624236f, 1.316958f, 1.7627472f, 2.2924316f});
  Unary("Asin", {2.0f}, {kNaN});  // out of domain, as numpy
}

TEST(UnaryMathTest, DtypesShapesAndErrors) {
  RunOpCase({.label = "double", .op_type = "Exp", .inputs = {D({-1.5, 0.25, 3.0}, {3})},
             .expected = {D({0.22313016014842982, 1.2840254166877414, 20.085536923187668}, {3})}, .rtol = 1e-12});
  RunOpCase({.label = "float16", .op_type = "Sqrt", .inputs = {H({4, 9, 2}, {3})}, .expected = {H({2, 3, 1.4142135f}, {3})},
             .rtol = 1e-3});
  RunOpCase({.label = "bfloat16", .op_type = "Neg", .inputs = {Cast(F({1, -2}, {2}), DType::kBFloat16)},
             .expected = {Cast(F({-1, 2}, {2}), DType::kBFloat16)}});
  RunOpCase({.label = "zero-size", .op_type = "Sin", .inputs = {F({}, {2, 0, 3})}, .expected = {F({}, {2, 0, 3})}});
  RunOpCase({.label = "scalar", .op_type = "Exp", .inputs = {F({0}, {})}, .expected = {F({1}, {})}});
  RunOpCase({.label = "rank 4", .op_type = "Tanh", .inputs = {RandomF({2, 3, 4, 5}, 11)}});
  RunOpCase({.label = "int abs wraps at min", .op_type = "Abs", .inputs = {V<int8_t>({-128, -5, 7}, {3})},
             .expected = {V<int8_t>({-128, 5, 7}, {3})}});
  RunOpCase({.label = "uint8 abs", .op_type = "Abs", .inputs = {V<uint8_t>({0, 200}, {2})},
             .expected = {V<uint8_t>({0, 200}, {2})}});
  RunOpCase({.label = "int64 neg", .op_type = "Neg", .inputs = {I64({-3, 0, 9}, {3})}, .expected = {I64({3, 0, -9}, {3})}});
  RunOpCase({.label = "int32 sign", .op_type = "Sign", .inputs = {I32({-7, 0, 3}, {3})}, .expected = {I32({-1, 0, 1}, {3})}});
  RunOpCase({.label = "uint16 sign", .op_type = "Sign", .inputs = {V<uint16_t>({0, 9}, {2})},
             .expected = {V<uint16_t>({0, 1}, {2})}});
  RunOpCase({.label = "exp of int", .op_type = "Exp", .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
  RunOpCase({.label = "neg of uint8", .op_type = "Neg", .inputs = {V<uint8_t>({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "signed integer or float"});
  RunOpCase({.label = "round of bool", .op_type = "Round", .inputs = {B({true}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "got bool"});
}

TEST(IsNanInfTest, PredicatesAndAttributes) {
  const Tensor x = F({-kInf, -1.0f, 0.0f, kNaN, kInf}, {5});
  RunOpCase({.label = "isnan", .op_type = "IsNaN", .inputs = {x}, .expected = {B({false, false, false, true, false}, {5})}});
  RunOpCase({.label = "isinf", .op_type = "IsInf", .inputs = {x}, .expected = {B({true, false, false, false, true}, {5})}});
  RunOpCase({.label = "negative only", .op_type = "IsInf", .attrs = {{"detect_positive", AInt(0)}}, .inputs = {x},
             .expected = {B({true, false, false, false, false}, {5})}});
  RunOpCase({.label = "positive only", .op_type = "IsInf", .attrs = {{"detect_negative", AInt(0)}}, .inputs = {x},
             .expected = {B({false, false, false, false, true}, {5})}});
  RunOpCase({.label = "float16", .op_type = "IsNaN", .inputs = {H({kNaN, 1}, {2})}, .expected = {B({true, false}, {2})}});
  RunOpCase({.label = "double zero-size", .op_type = "IsInf", .inputs = {D({}, {0})}, .expected = {B({}, {0})}});
  RunOpCase({.label = "int input", .op_type = "IsNaN", .inputs = {I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
}

TEST(PowTest, FloatIntAndMixedTypes) {
  RunOpCase({.label = "example", .op_type = "Pow", .inputs = {F({1, 2, 3}, {3}), F({4, 5, 6}, {3})},
             .expected = {F({1, 32, 729}, {3})}});
  RunOpCase({.label = "fractional and negative exponents", .op_type = "Pow",
             .inputs = {F({2, 4, 9, -8}, {4}), F({-1.5f, 0.5f, 0.5f, 0.5f}, {4})},
             .expected = {F({0.35355338f, 2, 3, kNaN}, {4})}});
  RunOpCase({.label = "broadcast scalar exponent", .op_type = "Pow", .inputs = {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({2}, {})},
             .expected = {F({1, 4, 9, 16, 25, 36}, {2, 3})}});
  RunOpCase({.label = "float32 ^ int64", .op_type = "Pow", .inputs = {F({1, 2, 3}, {3}), I64({4, 5, 6}, {3})},
             .expected = {F({1, 32, 729}, {3})}});
  RunOpCase({.label = "int64 ^ float32 truncates", .op_type = "Pow", .inputs = {I64({2, 10, -8}, {3}), F({0.5f, -1, 2}, {3})},
             .expected = {I64({1, 0, 64}, {3})}});
  RunOpCase({.label = "int32 ^ int32", .op_type = "Pow", .inputs = {I32({3, -2, 7, 5}, {4}), I32({4, 3, 0, 1}, {4})},
             .expected = {I32({81, -8, 1, 5}, {4})}});
  RunOpCase({.label = "int negative exponent", .op_type = "Pow", .inputs = {I64({1, -1, -1, 2}, {4}), I64({-3, -3, -2, -1}, {4})},
             .expected = {I64({1, -1, 1, 0}, {4})}});
  RunOpCase({.label = "int64 ^ uint64", .op_type = "Pow", .inputs = {I64({2}, {1}), V<uint64_t>({10}, {1})},
             .expected = {I64({1024}, {1})}});
  RunOpCase({.label = "float16 base", .op_type = "Pow", .inputs = {H({2, 3}, {2}), H({3, 2}, {2})},
             .expected = {H({8, 9}, {2})}});
  RunOpCase({.label = "zero-size", .op_type = "Pow", .inputs = {F({}, {0, 2}), F({2, 2}, {2})}, .expected = {F({}, {0, 2})}});
  RunOpCase({.label = "0 ^ -1 int", .op_type = "Pow", .inputs = {I32({0}, {1}), I32({-1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "negative power"});
  RunOpCase({.label = "opset 7 mixed types", .op_type = "Pow", .opset = 7, .inputs = {F({2}, {1}), I64({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same type"});
  RunOpCase({.label = "string base", .op_type = "Pow", .inputs = {T_<std::string>({"a"}, {1}), F({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "numeric"});
}

TEST(ModTest, SignRulesAndErrors) {
  const std::vector<int32_t> a = {-4, 7, 5, 4, -7, 8}, b = {2, -3, 8, -2, 3, 5};
  RunOpCase({.label = "int sign follows divisor", .op_type = "Mod", .inputs = {I32(a, {6}), I32(b, {6})},
             .expected = {I32({0, -2, 5, 0, 2, 3}, {6})}});
  RunOpCase({.label = "int fmod sign follows dividend", .op_type = "Mod", .attrs = {{"fmod", AInt(1)}},
             .inputs = {I32(a, {6}), I32(b, {6})}, .expected = {I32({0, 1, 5, 0, -1, 3}, {6})}});
  RunOpCase({.label = "float fmod", .op_type = "Mod", .attrs = {{"fmod", AInt(1)}},
             .inputs = {F({-4.5f, 7.5f, 5.0f}, {3}), F({2, -3, 8}, {3})}, .expected = {F({-0.5f, 1.5f, 5.0f}, {3})}});
  RunOpCase({.label = "uint8", .op_type = "Mod", .inputs = {V<uint8_t>({4, 7, 5}, {3}), V<uint8_t>({2, 3, 8}, {3})},
             .expected = {V<uint8_t>({0, 1, 5}, {3})}});
  RunOpCase({.label = "int8 min % -1", .op_type = "Mod", .inputs = {V<int8_t>({-128}, {1}), V<int8_t>({-1}, {1})},
             .expected = {V<int8_t>({0}, {1})}});
  RunOpCase({.label = "broadcast", .op_type = "Mod", .inputs = {I64({-3, -2, -1, 0, 1, 2}, {2, 3}), I64({3}, {1})},
             .expected = {I64({0, 1, 2, 0, 1, 2}, {2, 3})}});
  RunOpCase({.label = "float without fmod", .op_type = "Mod", .inputs = {F({1}, {1}), F({2}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "need attribute fmod=1"});
  RunOpCase({.label = "by zero", .op_type = "Mod", .inputs = {I64({1, 2}, {2}), I64({1, 0}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "modulo by zero"});
  RunOpCase({.label = "mixed types", .op_type = "Mod", .inputs = {I64({1}, {1}), I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same element type"});
}

TEST(BitShiftTest, DirectionsAndWidth) {
  RunOpCase({.label = "left uint8", .op_type = "BitShift", .attrs = {{"direction", AString("LEFT")}},
             .inputs = {V<uint8_t>({16, 4, 1, 255}, {4}), V<uint8_t>({1, 2, 3, 8}, {4})},
             .expected = {V<uint8_t>({32, 16, 8, 0}, {4})}});
  RunOpCase({.label = "right uint64 broadcast", .op_type = "BitShift", .attrs = {{"direction", AString("RIGHT")}},
             .inputs = {V<uint64_t>({16, 4, 1ull << 63}, {3}), V<uint64_t>({2}, {})},
             .expected = {V<uint64_t>({4, 1, 1ull << 61}, {3})}});
  RunOpCase({.label = "shift >= width", .op_type = "BitShift", .attrs = {{"direction", AString("RIGHT")}},
             .inputs = {V<uint32_t>({7, 7}, {2}), V<uint32_t>({32, 100}, {2})}, .expected = {V<uint32_t>({0, 0}, {2})}});
  RunOpCase({.label = "no direction", .op_type = "BitShift", .inputs = {V<uint8_t>({1}, {1}), V<uint8_t>({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "direction"});
  RunOpCase({.label = "bad direction", .op_type = "BitShift", .attrs = {{"direction", AString("UP")}},
             .inputs = {V<uint8_t>({1}, {1}), V<uint8_t>({1}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "\"LEFT\" or \"RIGHT\""});
  RunOpCase({.label = "signed", .op_type = "BitShift", .attrs = {{"direction", AString("LEFT")}},
             .inputs = {I32({1}, {1}), I32({1}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "unsigned"});
}

TEST(VariadicTest, MinMaxSumMean) {
  const Tensor a = F({3, 2, 1}, {3}), b = F({1, 4, 4}, {3}), c = F({2, 5, 3}, {3});
  RunOpCase({.label = "max", .op_type = "Max", .inputs = {a, b, c}, .expected = {F({3, 5, 4}, {3})}});
  RunOpCase({.label = "min", .op_type = "Min", .inputs = {a, b, c}, .expected = {F({1, 2, 1}, {3})}});
  RunOpCase({.label = "sum", .op_type = "Sum", .inputs = {a, b, c}, .expected = {F({6, 11, 8}, {3})}});
  RunOpCase({.label = "mean", .op_type = "Mean", .inputs = {a, b, c}, .expected = {F({2, 11.0f / 3, 8.0f / 3}, {3})}});
  RunOpCase({.label = "one input", .op_type = "Sum", .inputs = {a}, .expected = {a}});
  RunOpCase({.label = "broadcast three ways", .op_type = "Max",
             .inputs = {F({1, 5}, {2, 1}), F({3, 0, 4}, {1, 3}), F({2}, {})},
             .expected = {F({3, 2, 4, 5, 5, 5}, {2, 3})}});
  RunOpCase({.label = "NaN propagates", .op_type = "Min", .inputs = {F({kNaN, 1}, {2}), F({0, kNaN}, {2})},
             .expected = {F({kNaN, kNaN}, {2})}});
  RunOpCase({.label = "int8 max opset 12", .op_type = "Max", .opset = 12,
             .inputs = {V<int8_t>({-5, 7}, {2}), V<int8_t>({3, -9}, {2})}, .expected = {V<int8_t>({3, 7}, {2})}});
  RunOpCase({.label = "uint64 min", .op_type = "Min",
             .inputs = {V<uint64_t>({1ull << 63, 2}, {2}), V<uint64_t>({5, 1ull << 62}, {2})},
             .expected = {V<uint64_t>({5, 2}, {2})}});
  RunOpCase({.label = "float16 sum", .op_type = "Sum", .inputs = {H({1, 2}, {2}), H({0.5f, 0.25f}, {2}), H({1, 1}, {2})},
             .expected = {H({2.5f, 3.25f}, {2})}});
  RunOpCase({.label = "float16 max", .op_type = "Max", .inputs = {H({1, -2}, {2}), H({0.5f, kNaN}, {2})},
             .expected = {H({1, kNaN}, {2})}});
  RunOpCase({.label = "double mean broadcast", .op_type = "Mean", .inputs = {D({1, 2, 3, 4}, {2, 2}), D({1, 2}, {2})},
             .expected = {D({1, 2, 2, 3}, {2, 2})}});
  RunOpCase({.label = "zero-size", .op_type = "Sum", .inputs = {F({}, {0, 3}), F({1, 2, 3}, {3})}, .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "opset 6 same shapes", .op_type = "Max", .opset = 6, .inputs = {a, b}, .expected = {F({3, 4, 4}, {3})}});
  RunOpCase({.label = "int sum", .op_type = "Sum", .inputs = {I32({1}, {1}), I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
  RunOpCase({.label = "int max before opset 12", .op_type = "Max", .opset = 11, .inputs = {I32({1}, {1}), I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
  RunOpCase({.label = "dtype mismatch", .op_type = "Min", .inputs = {F({1}, {1}), D({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same element type"});
  RunOpCase({.label = "bad broadcast", .op_type = "Mean", .inputs = {F({1, 2}, {2}), F({1, 2, 3}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "cannot be broadcast"});
}

TEST(ClipTest, AttributesInputsAndTypes) {
  const Tensor x = F({-2, -0.5f, 0, 0.7f, 3, kNaN}, {2, 3});
  RunOpCase({.label = "opset 6 attributes", .op_type = "Clip", .opset = 6,
             .attrs = {{"min", AFloat(-1)}, {"max", AFloat(0.5f)}}, .inputs = {x},
             .expected = {F({-1, -0.5f, 0, 0.5f, 0.5f, kNaN}, {2, 3})}});
  RunOpCase({.label = "opset 6 max only", .op_type = "Clip", .opset = 6, .attrs = {{"max", AFloat(0)}}, .inputs = {x},
             .expected = {F({-2, -0.5f, 0, 0, 0, kNaN}, {2, 3})}});
  RunOpCase({.label = "opset 11 inputs", .op_type = "Clip", .opset = 11, .inputs = {x, F({-1}, {}), F({1}, {})},
             .expected = {F({-1, -0.5f, 0, 0.7f, 1, kNaN}, {2, 3})}});
  RunOpCase({.label = "min only", .op_type = "Clip", .inputs = {x, F({0}, {})},
             .expected = {F({0, 0, 0, 0.7f, 3, kNaN}, {2, 3})}});
  RunOpCase({.label = "max only (min omitted)", .op_type = "Clip", .inputs = {x, Tensor(), F({0}, {})},
             .expected = {F({-2, -0.5f, 0, 0, 0, kNaN}, {2, 3})}});
  RunOpCase({.label = "no bounds", .op_type = "Clip", .inputs = {x}, .expected = {x}});
  RunOpCase({.label = "min > max gives max", .op_type = "Clip", .inputs = {F({-5, 0, 5}, {3}), F({2}, {}), F({1}, {})},
             .expected = {F({1, 1, 1}, {3})}});
  RunOpCase({.label = "int8 opset 13", .op_type = "Clip", .opset = 13,
             .inputs = {V<int8_t>({-128, -3, 0, 5, 127}, {5}), V<int8_t>({-4}, {}), Tensor()},
             .expected = {V<int8_t>({-4, -3, 0, 5, 127}, {5})}});
  RunOpCase({.label = "int64 constant bounds", .op_type = "Clip", .inputs = {I64({-9, 9}, {2}), I64({-1}, {1}), I64({1}, {1})},
             .expected = {I64({-1, 1}, {2})}, .constant_inputs = {1, 2}});
  RunOpCase({.label = "zero-size", .op_type = "Clip", .inputs = {F({}, {0}), F({0}, {}), F({1}, {})}, .expected = {F({}, {0})}});
  RunOpCase({.label = "non-scalar min", .op_type = "Clip", .inputs = {x, F({0, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a scalar"});
  RunOpCase({.label = "bound dtype", .op_type = "Clip", .inputs = {x, D({0}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "element type"});
  RunOpCase({.label = "int before opset 12", .op_type = "Clip", .opset = 11, .inputs = {I32({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
}

TEST(ArithExtensionsTest, LegacyBroadcastAndWraparound) {
  RunOpCase({.label = "opset 6 broadcast axis 1", .op_type = "Add", .opset = 6,
             .attrs = {{"broadcast", AInt(1)}, {"axis", AInt(1)}},
             .inputs = {F({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2}), F({10, 20, 30}, {3})},
             .expected = {F({11, 12, 23, 24, 35, 36, 17, 18, 29, 30, 41, 42}, {2, 3, 2})}});
  RunOpCase({.label = "opset 6 broadcast suffix", .op_type = "Mul", .opset = 6, .attrs = {{"broadcast", AInt(1)}},
             .inputs = {F({1, 2, 3, 4}, {2, 2}), F({10, 100}, {2})}, .expected = {F({10, 200, 30, 400}, {2, 2})}});
  RunOpCase({.label = "opset 6 broadcast axis 0 with a 1", .op_type = "Sub", .opset = 6,
             .attrs = {{"broadcast", AInt(1)}, {"axis", AInt(0)}},
             .inputs = {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({1, 2}, {2, 1})}, .expected = {F({0, 1, 2, 2, 3, 4}, {2, 3})}});
  RunOpCase({.label = "opset 6 without broadcast", .op_type = "Add", .opset = 6,
             .inputs = {F({1, 2, 3, 4}, {2, 2}), F({1, 2}, {2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "without broadcast=1"});
  RunOpCase({.label = "opset 6 axis out of range", .op_type = "Add", .opset = 6,
             .attrs = {{"broadcast", AInt(1)}, {"axis", AInt(1)}}, .inputs = {F({1, 2}, {2}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "does not fit"});
  RunOpCase({.label = "int32 add wraps", .op_type = "Add", .inputs = {I32({2147483647, -2147483647 - 1}, {2}), I32({1, -1}, {2})},
             .expected = {I32({-2147483647 - 1, 2147483647}, {2})}});
  RunOpCase({.label = "int64 mul wraps", .op_type = "Mul", .inputs = {I64({INT64_C(1) << 62}, {1}), I64({4}, {1})},
             .expected = {I64({0}, {1})}});
  RunOpCase({.label = "uint8 sub wraps", .op_type = "Sub", .inputs = {V<uint8_t>({1}, {1}), V<uint8_t>({2}, {1})},
             .expected = {V<uint8_t>({255}, {1})}});
  RunOpCase({.label = "int8 min / -1", .op_type = "Div", .inputs = {V<int8_t>({-128, 7}, {2}), V<int8_t>({-1, -2}, {2})},
             .expected = {V<int8_t>({-128, -3}, {2})}});
  RunOpCase({.label = "float16 add", .op_type = "Add", .inputs = {H({1, 2}, {2}), H({0.5f}, {1})},
             .expected = {H({1.5f, 2.5f}, {2})}});
  RunOpCase({.label = "middle broadcast", .op_type = "Add", .inputs = {RandomF({3, 1, 4}, 21), RandomF({3, 5, 1}, 22)}});
}

}  // namespace
}  // namespace strata::testing
