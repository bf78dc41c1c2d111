// Table rows for the quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv. Expected values are from the ONNX spec's examples and from numpy
// (numpy.rint rounds half to even; integer convolution by explicit loops over padded int64 arrays; the requantization
// multiplier in float32), inputs drawn with numpy.random.RandomState(3).
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

Tensor U8(std::vector<uint8_t> v, std::vector<int64_t> s) { return T_<uint8_t>(std::move(v), std::move(s)); }
Tensor I8(std::vector<int8_t> v, std::vector<int64_t> s) { return T_<int8_t>(std::move(v), std::move(s)); }

TEST(QuantizeLinearTest, RoundingSaturationAndAxes) {
  const Tensor x = F({0, 1, 3, 5, -3, -5, 510, -2, 600, -700}, {10});
  RunOpCase({.label = "uint8, ties to even",
             .op_type = "QuantizeLinear",
             .inputs = {x, F({2}, {}), U8({128}, {})},
             .expected = {U8({128, 128, 130, 130, 126, 126, 255, 127, 255, 0}, {10})}});
  RunOpCase({.label = "int8 zero point -1",
             .op_type = "QuantizeLinear",
             .inputs = {x, F({2}, {}), I8({-1}, {})},
             .expected = {I8({-1, -1, 1, 1, -3, -3, 127, -2, 127, -128}, {10})}});
  RunOpCase({.label = "no zero point: uint8 around 0 (opset 10)",
             .op_type = "QuantizeLinear",
             .opset = 10,
             .inputs = {F({-1, 0.5f, 1.5f, 2.5f, 300}, {5}), F({1}, {1})},
             .expected = {U8({0, 0, 2, 2, 255}, {5})}});
  RunOpCase({.label = "spec example",
             .op_type = "QuantizeLinear",
             .inputs = {F({0, 2, 3, 1000, -254, -1000}, {6}), F({2}, {}), U8({128}, {})},
             .expected = {U8({128, 129, 130, 255, 1, 0}, {6})}});
  RunOpCase({.label = "per axis 1 (default)",
             .op_type = "QuantizeLinear",
             .inputs = {F({-21, -17.5f, -14, -10.5f, -7, -3.5f, 0, 3.5f, 7, 10.5f, 14, 17.5f}, {1, 3, 4}),
                        F({1, 2, 4}, {3}), U8({0, 10, 20}, {3})},
             .expected = {U8({0, 0, 0, 0, 6, 8, 10, 12, 22, 23, 24, 24}, {1, 3, 4})}});
  RunOpCase({.label = "per axis -1, int8",
             .op_type = "QuantizeLinear",
             .attrs = {{"axis", AInt(-1)}},
             .inputs = {F({1.5f, -2.5f, 100, -300}, {2, 2}), F({0.5f, 2}, {2}), I8({0, -10}, {2})},
             .expected = {I8({3, -11, 127, -128}, {2, 2})}});
  RunOpCase({.label = "int32 input",
             .op_type = "QuantizeLinear",
             .inputs = {I32({7, -7, 1000, -1000}, {4}), F({4}, {}), U8({3}, {})},
             .expected = {U8({5, 1, 253, 0}, {4})}});
  RunOpCase({.label = "float16 input",
             .op_type = "QuantizeLinear",
             .inputs = {Cast(F({0.5f, 1.5f, -2.5f}, {3}), DType::kFloat16), F({1}, {}), I8({0}, {})},
             .expected = {I8({0, 2, -2}, {3})}});
  RunOpCase(
      {.label = "NaN and infinities",
       .op_type = "QuantizeLinear",
       .inputs = {F({std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()},
                    {3}),
                  F({1}, {}), U8({7}, {})},
       .expected = {U8({0, 255, 0}, {3})}});
  RunOpCase({.label = "zero-size",
             .op_type = "QuantizeLinear",
             .inputs = {F({}, {0, 3}), F({1}, {}), U8({1}, {})},
             .expected = {U8({}, {0, 3})}});
  RunOpCase({.label = "per axis before opset 13",
             .op_type = "QuantizeLinear",
             .opset = 10,
             .inputs = {F({1, 2}, {1, 2}), F({1, 2}, {2}), U8({0, 0}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "must be a scalar before opset 13"});
  RunOpCase({.label = "scale length",
             .op_type = "QuantizeLinear",
             .inputs = {F({1, 2, 3}, {1, 3}), F({1, 2}, {2}), U8({0, 0}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "per-axis y_scale must have 3 values"});
  RunOpCase({.label = "int16 zero point",
             .op_type = "QuantizeLinear",
             .inputs = {F({1}, {1}), F({1}, {}), T_<int16_t>({0}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "y_zero_point must be uint8 or int8"});
}

// The vectorised cpu kernel (constant per-tensor scale and zero point) against the reference, and against numpy:
// 37 values (two 16-lane blocks and a scalar tail) with half-way ties (0.25 / 0.1 rounds to 2, 0.35 / 0.1 to 4),
// saturation both ways and NaN (the type's lowest value).
TEST(QuantizeLinearTest, FastPerTensorKernel) {
  std::vector<float> xv = {0.25f, 0.35f, 0.45f, -0.25f, -0.35f, 0.05f, -0.05f, 0.15f, 12.8f, 12.7f, -12.9f, 1e9f,
                           -1e9f, NAN, 0.0f, -0.0f};
  for (int i = 0; i < 21; ++i) xv.push_back(0.1f * static_cast<float>(i) - 1.0f);
  std::vector<uint8_t> u8;
  std::vector<int8_t> s8;
  for (float v : xv) {
    const float q = std::nearbyint(v / 0.1f);
    u8.push_back(std::isnan(v) ? 0 : static_cast<uint8_t>(std::clamp(q + 100.0f, 0.0f, 255.0f)));
    s8.push_back(std::isnan(v) ? -128 : static_cast<int8_t>(std::clamp(q - 3.0f, -128.0f, 127.0f)));
  }
  const Tensor x = F(xv, {37});
  RunOpCase({.label = "cpu kernel, uint8 zero point 100",
             .op_type = "QuantizeLinear",
             .inputs = {x, F({0.1f}, {}), U8({100}, {})},
             .expected = {U8(u8, {37})},
             .constant_inputs = {1, 2},
             .kernel = "cpu"});
  RunOpCase({.label = "cpu kernel, int8 zero point -3",
             .op_type = "QuantizeLinear",
             .inputs = {x, F({0.1f}, {}), I8({-3}, {})},
             .expected = {I8(s8, {37})},
             .constant_inputs = {1, 2},
             .kernel = "cpu"});
}

TEST(DequantizeLinearTest, TypesAndAxes) {
  RunOpCase({.label = "uint8",
             .op_type = "DequantizeLinear",
             .inputs = {U8({0, 3, 128, 255}, {4}), F({0.5f}, {}), U8({128}, {})},
             .expected = {F({-64, -62.5f, 0, 63.5f}, {4})}});
  RunOpCase({.label = "int8 (opset 10)",
             .op_type = "DequantizeLinear",
             .opset = 10,
             .inputs = {I8({-128, 0, 127}, {3}), F({0.25f}, {}), I8({-1}, {})},
             .expected = {F({-31.75f, 0.25f, 32}, {3})}});
  RunOpCase({.label = "int32, no zero point",
             .op_type = "DequantizeLinear",
             .inputs = {I32({-100000, 7}, {2}), F({0.5f}, {})},
             .expected = {F({-50000, 3.5f}, {2})}});
  RunOpCase({.label = "per axis 0",
             .op_type = "DequantizeLinear",
             .attrs = {{"axis", AInt(0)}},
             .inputs = {U8({10, 20, 30, 40}, {2, 2}), F({1, 0.5f}, {2}), U8({10, 0}, {2})},
             .expected = {F({0, 10, 15, 20}, {2, 2})}});
  RunOpCase({.label = "spec example (axis)",
             .op_type = "DequantizeLinear",
             .inputs = {U8({3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102}, {1, 3, 3, 2}),
                        F({2, 4, 5}, {3}), U8({84, 24, 196}, {3})},
             .expected = {F({-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44, 245, -485, -960, -270, -375, -470},
                            {1, 3, 3, 2})}});
  RunOpCase({.label = "int32 with a zero point",
             .op_type = "DequantizeLinear",
             .inputs = {I32({1}, {1}), F({1}, {}), I32({2}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "no zero point other than 0"});
  RunOpCase({.label = "zero point type",
             .op_type = "DequantizeLinear",
             .inputs = {U8({1}, {1}), F({1}, {}), I8({2}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "x_zero_point must have x's element type uint8"});
}

TEST(DynamicQuantizeLinearTest, RangeIncludesZero) {
  RunOpCase({.label = "mixed signs",
             .op_type = "DynamicQuantizeLinear",
             .inputs = {F({0.25f, -1.5f, 3, 0, 2}, {5})},
             .num_outputs = 3,
             .expected = {U8({99, 0, 255, 85, 198}, {5}), F({0.0176470596f}, {}), U8({85}, {})}});
  RunOpCase({.label = "spec example",
             .op_type = "DynamicQuantizeLinear",
             .inputs = {F({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6})},
             .num_outputs = 3,
             .expected = {U8({153, 255, 0, 26, 221, 179}, {6}), F({0.0196078438f}, {}), U8({153}, {})}});
  RunOpCase({.label = "all zero: scale 1",
             .op_type = "DynamicQuantizeLinear",
             .inputs = {F({0, 0}, {1, 2})},
             .num_outputs = 3,
             .expected = {U8({0, 0}, {1, 2}), F({1}, {}), U8({0}, {})}});
  RunOpCase({.label = "empty",
             .op_type = "DynamicQuantizeLinear",
             .inputs = {F({}, {0})},
             .num_outputs = 3,
             .expected = {U8({}, {0}), F({1}, {}), U8({0}, {})}});
  RunOpCase({.label = "double input",
             .op_type = "DynamicQuantizeLinear",
             .inputs = {D({1}, {1})},
             .num_outputs = 3,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "x must be float32"});
}

TEST(MatMulIntegerTest, ZeroPointsAndBroadcasting) {
  RunOpCase({.label = "spec example",
             .op_type = "MatMulInteger",
             .inputs = {U8({11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, {4, 3}), U8({1, 4, 2, 5, 3, 6}, {3, 2}),
                        U8({12}, {1}), U8({0}, {1})},
             .expected = {I32({-38, -83, -44, -98, -50, -113, -56, -128}, {4, 2})}});
  RunOpCase({.label = "int8 A per row, uint8 B per column, batch",
             .op_type = "MatMulInteger",
             .inputs = {T_<int8_t>({95, 13, 37, 30, -80, 61, -95, -76, 113, 124, 114, -126}, {2, 2, 3}),
                        T_<uint8_t>({156, 36, 90, 232, 172, 176, 59, 202, 182, 240, 228, 91}, {3, 4}),
                        T_<int8_t>({-3, 7}, {2}), T_<uint8_t>({1, 2, 3, 4}, {4})},
             .expected = {I32({25166, 15636, 18422, 28992, -1538, -1504, 9279, -7284, -5747, 11778, 14008, -25338,
                               12359, -9058, -13754, 36291},
                              {2, 2, 4})}});
  RunOpCase(
      {.label = "1-D A, no a_zero_point",
       .op_type = "MatMulInteger",
       .inputs = {T_<uint8_t>({1, 2, 3}, {3}),
                  T_<uint8_t>({156, 36, 90, 232, 172, 176, 59, 202, 182, 240, 228, 91}, {3, 4}), Tensor(), U8({5}, {})},
       .expected = {I32({1016, 1078, 862, 879}, {4})}});
  RunOpCase({.label = "no zero points, K = 0",
             .op_type = "MatMulInteger",
             .inputs = {U8({}, {2, 0}), U8({}, {0, 3})},
             .expected = {I32({0, 0, 0, 0, 0, 0}, {2, 3})}});
  RunOpCase({.label = "inner dimensions",
             .op_type = "MatMulInteger",
             .inputs = {U8({1, 2}, {1, 2}), U8({1, 2, 3}, {3, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "inner dimensions differ"});
  RunOpCase({.label = "float input",
             .op_type = "MatMulInteger",
             .inputs = {F({1}, {1, 1}), U8({1}, {1, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "must be int8 or uint8"});
}

TEST(QLinearMatMulTest, Requantizes) {
  RunOpCase({.label = "spec example 2-D",
             .op_type = "QLinearMatMul",
             .inputs = {U8({208, 236, 0, 238, 3, 214, 255, 29}, {2, 4}), F({0.0066f}, {1}), U8({113}, {1}),
                        U8({152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}, {4, 3}), F({0.00705f}, {1}),
                        U8({114}, {1}), F({0.0107f}, {1}), U8({118}, {1})},
             .expected = {U8({168, 115, 255, 1, 66, 151}, {2, 3})}});
  RunOpCase({.label = "int8, per-column b",
             .op_type = "QLinearMatMul",
             .inputs = {T_<int8_t>({113, -107, -15, -72, -24, -89}, {2, 3}), F({0.0500000007}, {}), T_<int8_t>({2}, {}),
                        T_<int8_t>({-99, 32, 48, -119, -95, 111}, {3, 2}), F({0.0199999996, 0.0399999991}, {2}),
                        T_<int8_t>({-1, 3}, {2}), F({0.25}, {}), T_<int8_t>({10}, {})},
             .expected = {T_<int8_t>({-48, 127, 68, -60}, {2, 2})}});
  RunOpCase({.label = "b scale length",
             .op_type = "QLinearMatMul",
             .inputs = {U8({1, 2}, {1, 2}), F({1}, {}), U8({0}, {}), U8({1, 2}, {2, 1}), F({1, 1, 1}, {3}), U8({0}, {}),
                        F({1}, {}), U8({0}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "b_scale must be a scalar or 1-D"});
}

TEST(ConvIntegerTest, ZeroPointsPaddingGroups) {
  const Tensor x = U8({2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 1, 3, 3});
  const Tensor w = U8({1, 1, 1, 1}, {1, 1, 2, 2});
  RunOpCase({.label = "spec, no padding",
             .op_type = "ConvInteger",
             .inputs = {x, w, U8({1}, {})},
             .expected = {I32({12, 16, 24, 28}, {1, 1, 2, 2})}});
  RunOpCase({.label = "spec, padding holds the zero point",
             .op_type = "ConvInteger",
             .attrs = {{"pads", AInts({1, 1, 1, 1})}},
             .inputs = {x, w, U8({1}, {})},
             .expected = {I32({1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}, {1, 1, 4, 4})}});
  RunOpCase(
      {.label = "groups, strides, per-channel w_zero_point",
       .op_type = "ConvInteger",
       .attrs = {{"group", AInt(2)}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}},
       .inputs = {T_<uint8_t>({106, 152, 249, 131, 184, 200, 0,   21,  253, 147, 202, 107, 249, 169, 138, 149,
                               119, 166, 224, 148, 172, 93,  167, 142, 248, 26,  81,  218, 150, 66,  2,   191},
                              {1, 2, 4, 4}),
                  T_<uint8_t>({60, 129, 179, 90, 69, 104, 110, 97, 157, 106, 152, 251, 62, 7, 248, 171}, {4, 1, 2, 2}),
                  T_<uint8_t>({3}, {}), T_<uint8_t>({1, 2, 3, 250}, {4})},
       .expected = {I32({9167,  48416, 22784, 45418, 54582,  19574, 31488,  27074,  8614,   9785,   39462,  13824,
                         42212, 47350, 12438, 25092, 24892,  9782,  28768,  79095,  21605,  78167,  53523,  53441,
                         15141, 9599,  28952, -9164, -17785, -290,  -60422, -62980, -26562, -35721, -11601, -35344},
                        {1, 4, 3, 3})}});
  RunOpCase({.label = "int8, dilation",
             .op_type = "ConvInteger",
             .attrs = {{"dilations", AInts({2, 2})}},
             .inputs = {T_<int8_t>({-95, -5,  -49,  48, -91, -108, -34, -79, 21, -1, 78, 116, -100,
                                    -9,  -74, -128, 64, 105, -110, -12, 63,  37, 56, 56, 71},
                                   {1, 1, 5, 5}),
                        T_<int8_t>({37, 125, 46, -95, -15, -127, -43, -11}, {2, 1, 2, 2})},
             .expected = {I32({3448, 12006, -10758, -29734, 14761, 2922, -12036, -451, -17119, 5394, -10910, 17406,
                               16002, -3699, -3071, 8205, -2804, 7709},
                              {1, 2, 3, 3})}});
  RunOpCase({.label = "auto_pad SAME_UPPER, 1-D",
             .op_type = "ConvInteger",
             .attrs = {{"auto_pad", AString("SAME_UPPER")}},
             .inputs = {U8({1, 2, 3}, {1, 1, 3}), U8({1, 1}, {1, 1, 2})},
             .expected = {I32({3, 5, 3}, {1, 1, 3})}});
  RunOpCase({.label = "w_zero_point length",
             .op_type = "ConvInteger",
             .inputs = {x, w, U8({1}, {}), U8({1, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "w_zero_point must be a scalar or have one value"});
  RunOpCase({.label = "channels",
             .op_type = "ConvInteger",
             .inputs = {x, U8({1, 1}, {1, 2, 1, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "do not match with group 1"});
}

TEST(QLinearConvTest, Requantizes) {
  RunOpCase({.label = "spec example",
             .op_type = "QLinearConv",
             .inputs = {U8({255, 174, 162, 25,  203, 168, 58,  15,  59,  237, 95,  129, 0,  64,  56, 242, 153,
                            221, 168, 12,  166, 232, 178, 186, 195, 237, 162, 237, 188, 39, 124, 77, 80,  102,
                            43,  127, 230, 21,  83,  41,  40,  134, 255, 154, 92,  141, 42, 148, 247},
                           {1, 1, 7, 7}),
                        F({0.00369204697f}, {}), U8({132}, {}), U8({0}, {1, 1, 1, 1}), F({0.00172794575f}, {1}),
                        U8({255}, {1}), F({0.00162681262f}, {}), U8({123}, {})},
             .expected = {U8({0,   81,  93,  230, 52,  87,  197, 240, 196, 18,  160, 126, 255, 191, 199, 13,  102,
                              34,  87,  243, 89,  23,  77,  69,  60,  18,  93,  18,  67,  216, 131, 178, 175, 153,
                              212, 128, 25,  234, 172, 214, 215, 121, 0,   101, 163, 114, 213, 107, 8},
                             {1, 1, 7, 7})}});
  RunOpCase({.label = "bias, per-channel w_scale, int8 output",
             .op_type = "QLinearConv",
             .inputs = {T_<uint8_t>({119, 202, 235, 124, 228, 99, 219, 144, 255}, {1, 1, 3, 3}), F({0.0199999996}, {}),
                        T_<uint8_t>({120}, {}), T_<uint8_t>({80, 160, 144, 242, 18, 75, 183, 96}, {2, 1, 2, 2}),
                        F({0.00999999978, 0.0299999993}, {2}), T_<uint8_t>({128, 100}, {2}), F({0.0500000007}, {}),
                        T_<int8_t>({-5}, {}), I32({100, -2000}, {2})},
             .expected = {T_<int8_t>({56, -8, 26, 35, -54, -36, 32, -112}, {1, 2, 2, 2})}});
  RunOpCase({.label = "per-tensor x_scale only",
             .op_type = "QLinearConv",
             .inputs = {U8({1}, {1, 1, 1, 1}), F({1, 1}, {2}), U8({0}, {}), U8({1}, {1, 1, 1, 1}), F({1}, {}),
                        U8({0}, {}), F({1}, {}), U8({0}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "x_scale must be a scalar"});
}

}  // namespace
}  // namespace strata::testing
