// Table rows for the nn family's pooling, normalisation and softmax ops. Expected values come from the ONNX spec
// examples or from numpy (direct loops / numpy reductions over the Pat() inputs); Conv, ConvTranspose and Gemm are in
// nn_conv_test.cc.
#include <cmath>
#include <limits>

#include "tests/ops/nn_test_util.h"

namespace strata::testing {
namespace {

Tensor Ramp(int64_t n, std::vector<int64_t> shape, float start = 1) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return F(v, shape);
}

TEST(MaxPoolTest, SpecExamplesWithIndices) {
  // ONNX spec: test_maxpool_with_argmax_2d_precomputed_pads and _precomputed_strides (storage_order 1).
  RunOpCase(
      {.label = "pads 2, kernel 5",
       .op_type = "MaxPool",
       .attrs = {{"kernel_shape", AInts({5, 5})}, {"pads", AInts({2, 2, 2, 2})}},
       .inputs = {Ramp(25, {1, 1, 5, 5})},
       .num_outputs = 2,
       .expected = {
           F({13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25},
             {1, 1, 5, 5}),
           I64({12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24},
               {1, 1, 5, 5})}});
  RunOpCase({.label = "storage_order 1",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}, {"storage_order", AInt(1)}},
             .inputs = {Ramp(25, {1, 1, 5, 5})},
             .num_outputs = 2,
             .expected = {F({7, 9, 17, 19}, {1, 1, 2, 2}), I64({6, 16, 8, 18}, {1, 1, 2, 2})}});
  // ONNX spec: test_maxpool_2d_ceil.
  RunOpCase({.label = "ceil_mode",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}},
             .inputs = {Ramp(16, {1, 1, 4, 4})},
             .expected = {F({11, 12, 15, 16}, {1, 1, 2, 2})}});
}

TEST(MaxPoolTest, DilationsCeilBatchOffsetsDtypes) {
  // numpy: direct loops; indices include the (n * C + c) * H * W offset.
  const Tensor x = Pat({2, 2, 4, 5}, 5, 2, 13, 6);
  const graph::AttributeMap attrs = {{"kernel_shape", AInts({2, 2})},
                                     {"strides", AInts({2, 1})},
                                     {"dilations", AInts({1, 2})},
                                     {"pads", AInts({1, 0, 0, 1})},
                                     {"ceil_mode", AInt(1)}};
  const Tensor y = F({6, 1, 6,  -2, 5, 0, 5, -3, 6,  -2, 3, -5, 5,  -3, 2, -6, 4, 6, 1, 6,  2, 4,  -1, 4,
                      1, 6, -2, 3,  0, 5, 6, 2,  -2, 3,  5, 0,  -3, 2,  4, -1, 6, 1, 6, -2, 4, -1, 4,  -4},
                     {2, 2, 3, 4});
  RunOpCase({.label = "2-D dilations, ceil, N=2 C=2",
             .op_type = "MaxPool",
             .attrs = attrs,
             .inputs = {x},
             .num_outputs = 2,
             .expected = {y, I64({2,  1,  2,  3,  7,  6,  7,  8,  15, 16, 17, 18, 20, 21, 22, 23,
                                  25, 28, 27, 28, 35, 38, 37, 38, 40, 41, 42, 43, 45, 46, 54, 48,
                                  55, 56, 59, 58, 60, 61, 64, 63, 67, 66, 67, 68, 77, 76, 77, 78},
                                 {2, 2, 3, 4})}});
  RunOpCase({.label = "int8",
             .op_type = "MaxPool",
             .attrs = attrs,
             .inputs = {Cast(x, DType::kInt8)},
             .expected = {Cast(y, DType::kInt8)}});
  RunOpCase({.label = "uint8 (shifted)",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2})}},
             .inputs = {T_<uint8_t>({3, 200, 7, 255, 0}, {1, 1, 5})},
             .expected = {T_<uint8_t>({200, 200, 255, 255}, {1, 1, 4})}});
  RunOpCase({.label = "float16",
             .op_type = "MaxPool",
             .attrs = attrs,
             .inputs = {Cast(x, DType::kFloat16)},
             .expected = {Cast(y, DType::kFloat16)}});
  RunOpCase({.label = "3-D storage_order 1, C=2",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2, 2, 2})}, {"strides", AInts({2, 2, 2})}, {"storage_order", AInt(1)}},
             .inputs = {Pat({1, 2, 3, 4, 3}, 7, 1, 17, 8)},
             .num_outputs = 2,
             .expected = {F({4, 8, 7, 8}, {1, 2, 1, 2, 1}), I64({15, 18, 36, 58}, {1, 2, 1, 2, 1})}});
  RunOpCase({.label = "1-D SAME_LOWER",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({3})}, {"strides", AInts({2})}, {"auto_pad", AString("SAME_LOWER")}},
             .inputs = {Pat({1, 1, 6}, 5, 1, 9, 4)},
             .num_outputs = 2,
             .expected = {F({2, 3, 4}, {1, 1, 3}), I64({1, 3, 5}, {1, 1, 3})}});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  RunOpCase({.label = "NaN loses to numbers; all-NaN window gives NaN",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2})}, {"strides", AInts({2})}},
             .inputs = {F({nan, 1, -3, nan, nan, nan}, {1, 1, 6})},
             .num_outputs = 2,
             .expected = {F({1, -3, nan}, {1, 1, 3}), I64({1, 2, 4}, {1, 1, 3})}});
  RunOpCase({.label = "ties keep the first",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({3})}},
             .inputs = {F({2, 2, 2, 1}, {1, 1, 4})},
             .num_outputs = 2,
             .expected = {F({2, 2}, {1, 1, 2}), I64({0, 1}, {1, 1, 2})}});
  RunOpCase({.label = "zero batch",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2, 2})}},
             .inputs = {F({}, {0, 3, 4, 4})},
             .expected = {F({}, {0, 3, 3, 3})}});
}

TEST(MaxPoolTest, Errors) {
  RunOpCase({.label = "no kernel_shape",
             .op_type = "MaxPool",
             .inputs = {RandomF({1, 1, 4, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "kernel_shape is required"});
  RunOpCase({.label = "pad not below kernel",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2, 2})}, {"pads", AInts({2, 0, 0, 0})}},
             .inputs = {RandomF({1, 1, 4, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "smaller than kernel_shape"});
  RunOpCase({.label = "storage_order 2",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2})}, {"storage_order", AInt(2)}},
             .inputs = {RandomF({1, 1, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "storage_order"});
  RunOpCase({.label = "strides 0",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2})}, {"strides", AInts({0})}},
             .inputs = {RandomF({1, 1, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "strides must be >= 1"});
  RunOpCase({.label = "rank 2",
             .op_type = "MaxPool",
             .attrs = {{"kernel_shape", AInts({2})}},
             .inputs = {RandomF({1, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 3"});
}

TEST(AveragePoolTest, PadsCeilAutoPad) {
  const Tensor x = Pat({1, 1, 4, 5});
  const graph::AttributeMap attrs = {
      {"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}};
  RunOpCase({.label = "count_include_pad 0",
             .op_type = "AveragePool",
             .attrs = attrs,
             .inputs = {x},
             .expected = {F({-0.25f, 1 / 6.0f, -1.25f, 0, 1 / 9.0f, -1}, {1, 1, 2, 3})}});
  graph::AttributeMap incl = attrs;
  incl["count_include_pad"] = AInt(1);
  RunOpCase({.label = "count_include_pad 1",
             .op_type = "AveragePool",
             .attrs = incl,
             .inputs = {x},
             .expected = {F({-1 / 9.0f, 1 / 9.0f, -5 / 9.0f, 0, 1 / 9.0f, -6 / 9.0f}, {1, 1, 2, 3})}});
  RunOpCase({.label = "count_include_pad 1, float64",
             .op_type = "AveragePool",
             .attrs = incl,
             .inputs = {Cast(x, DType::kFloat64)},
             .expected = {D({-1 / 9.0, 1 / 9.0, -5 / 9.0, 0, 1 / 9.0, -6 / 9.0}, {1, 1, 2, 3})}});
  // ONNX spec: test_averagepool_2d_ceil.
  RunOpCase({.label = "ceil_mode spec",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}},
             .inputs = {Ramp(16, {1, 1, 4, 4})},
             .expected = {F({6, 7.5, 12, 13.5}, {1, 1, 2, 2})}});
  // With ceil_mode the overhanging window counts the padding but not the overhang past it.
  const graph::AttributeMap ceil = {{"kernel_shape", AInts({3, 3})},
                                    {"strides", AInts({2, 2})},
                                    {"pads", AInts({0, 0, 1, 0})},
                                    {"ceil_mode", AInt(1)},
                                    {"count_include_pad", AInt(1)}};
  RunOpCase({.label = "ceil_mode + count_include_pad",
             .op_type = "AveragePool",
             .attrs = ceil,
             .inputs = {Pat({1, 1, 6, 6})},
             .expected = {F({5 / 9.0f, -1 / 9.0f, 0, 2 / 9.0f, -4 / 9.0f, -1 / 3.0f, -2 / 9.0f, 5 / 9.0f, 5 / 6.0f},
                            {1, 1, 3, 3})}});
  RunOpCase({.label = "3-D SAME_UPPER",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2, 2, 2})}, {"auto_pad", AString("SAME_UPPER")}},
             .inputs = {Pat({1, 1, 2, 3, 2})},
             .expected = {F({-0.75, 0, -0.5, -2.5, 1, -1, -1.75, -1, -1.5, -3.5, 0, -2}, {1, 1, 2, 3, 2})}});
  RunOpCase({.label = "float16 1-D",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2})}},
             .inputs = {Cast(F({1, 2, 4, 8}, {1, 1, 4}), DType::kFloat16)},
             .expected = {Cast(F({1.5, 3, 6}, {1, 1, 3}), DType::kFloat16)}});
  RunOpCase({.label = "dilations are opset 19",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2})}, {"dilations", AInts({2})}},
             .inputs = {RandomF({1, 1, 5}, 1)},
             .expect_error = StatusCode::kUnimplemented,
             .error_substr = "dilations"});
  RunOpCase({.label = "integer input",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2})}},
             .inputs = {I64({1, 2}, {1, 1, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "float tensor"});
}

TEST(LpPoolTest, PowersAndPads) {
  const graph::AttributeMap attrs = {{"kernel_shape", AInts({2})}, {"pads", AInts({1, 0})}};
  graph::AttributeMap p3 = attrs, p1 = attrs;
  p3["p"] = AInt(3);
  p1["p"] = AInt(1);
  RunOpCase({.label = "p 3",
             .op_type = "LpPool",
             .attrs = p3,
             .inputs = {Pat({1, 2, 4})},
             .expected = {F({2, 5.10446872f, 5.01329793f, 3.03658897f, 4, 4, 4, 4.49794145f}, {1, 2, 4})}});
  RunOpCase({.label = "p 1",
             .op_type = "LpPool",
             .attrs = p1,
             .inputs = {Pat({1, 2, 4})},
             .expected = {F({2, 7, 6, 4, 4, 4, 4, 7}, {1, 2, 4})}});
  RunOpCase({.label = "p 2 default, 2-D",
             .op_type = "LpPool",
             .attrs = {{"kernel_shape", AInts({2, 2})}},
             .inputs = {Pat({1, 1, 3, 3})},
             .expected = {F({7.34846923f, 6.4807407f, 7.07106781f, 5.09901951f}, {1, 1, 2, 2})}});
  RunOpCase({.label = "p 0",
             .op_type = "LpPool",
             .attrs = {{"kernel_shape", AInts({2})}, {"p", AInt(0)}},
             .inputs = {RandomF({1, 1, 4}, 1)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "positive"});
}

TEST(GlobalPoolTest, AverageMaxLp) {
  const Tensor x = Pat({2, 3, 2, 2}, 5, 1, 9, 4);
  RunOpCase({.label = "average",
             .op_type = "GlobalAveragePool",
             .inputs = {x},
             .expected = {F({0, -0.25, -0.5, 1.5, -1, 1}, {2, 3, 1, 1})}});
  RunOpCase(
      {.label = "max", .op_type = "GlobalMaxPool", .inputs = {x}, .expected = {F({3, 4, 2, 4, 2, 4}, {2, 3, 1, 1})}});
  RunOpCase(
      {.label = "lp default p 2",
       .op_type = "GlobalLpPool",
       .inputs = {x},
       .expected = {F({5.09901951f, 5.74456265f, 4.24264069f, 5.09901951f, 5.47722558f, 5.47722558f}, {2, 3, 1, 1})}});
  RunOpCase(
      {.label = "lp p 3",
       .op_type = "GlobalLpPool",
       .attrs = {{"p", AInt(3)}},
       .inputs = {x},
       .expected = {F({4.1212853f, 5.05277435f, 3.53034834f, 4.51435744f, 4.64158883f, 4.64158883f}, {2, 3, 1, 1})}});
  RunOpCase({.label = "average 1-D float64",
             .op_type = "GlobalAveragePool",
             .inputs = {D({1, 2, 3, 6}, {1, 2, 2})},
             .expected = {D({1.5, 4.5}, {1, 2, 1})}});
  RunOpCase({.label = "max 3-D float16",
             .op_type = "GlobalMaxPool",
             .inputs = {Cast(F({-1, -5, -2, -3, 0, 7, 1, 2}, {1, 1, 2, 2, 2}), DType::kFloat16)},
             .expected = {Cast(F({7}, {1, 1, 1, 1, 1}), DType::kFloat16)}});
  RunOpCase({.label = "zero batch",
             .op_type = "GlobalAveragePool",
             .inputs = {F({}, {0, 2, 3})},
             .expected = {F({}, {0, 2, 1})}});
  RunOpCase({.label = "rank 1",
             .op_type = "GlobalMaxPool",
             .inputs = {F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 2"});
}

TEST(MaxUnpoolTest, SpecAndOffsets) {
  // ONNX spec: test_maxunpool_export_without_output_shape / _with_output_shape.
  const Tensor idx = I64({5, 7, 13, 15}, {1, 1, 2, 2});
  const graph::AttributeMap attrs = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}};
  RunOpCase({.label = "spec, default shape",
             .op_type = "MaxUnpool",
             .attrs = attrs,
             .inputs = {F({1, 2, 3, 4}, {1, 1, 2, 2}), idx},
             .expected = {F({0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}, {1, 1, 4, 4})}});
  RunOpCase({.label = "spec, output_shape",
             .op_type = "MaxUnpool",
             .attrs = attrs,
             .inputs = {F({5, 6, 7, 8}, {1, 1, 2, 2}), idx, I64({1, 1, 5, 5}, {4})},
             .expected = {F({0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0}, {1, 1, 5, 5})},
             .constant_inputs = {2}});
  const Tensor x2 = F({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  const Tensor i2 = I64({0, 3, 9, 14, 16, 19, 27, 31}, {1, 2, 2, 2});
  RunOpCase(
      {.label = "two channels: flat indices over the whole tensor",
       .op_type = "MaxUnpool",
       .attrs = attrs,
       .inputs = {x2, i2},
       .expected = {F({1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 5, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 8},
                      {1, 2, 4, 4})}});
  RunOpCase({.label = "two channels, output_shape taller (not constant)",
             .op_type = "MaxUnpool",
             .attrs = attrs,
             .inputs = {x2, i2, I64({1, 2, 5, 4}, {4})},
             .expected = {F({1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0,
                             5, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 0},
                            {1, 2, 5, 4})}});
  RunOpCase({.label = "index out of range",
             .op_type = "MaxUnpool",
             .attrs = attrs,
             .inputs = {F({1, 2, 3, 4}, {1, 1, 2, 2}), I64({5, 7, 13, 16}, {1, 1, 2, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "outside the unpooled shape"});
  RunOpCase({.label = "output_shape too small",
             .op_type = "MaxUnpool",
             .attrs = attrs,
             .inputs = {F({1, 2, 3, 4}, {1, 1, 2, 2}), idx, I64({1, 1, 3, 4}, {4})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "smaller than the unpooled shape"});
}

TEST(BatchNormalizationTest, InferenceAndTraining) {
  const Tensor x = Pat({2, 3, 2});
  const Tensor scale = F({1, 2, -1}, {3}), bias = F({0, 1, 2}, {3}), mean = F({0.5, -1, 0}, {3}),
               var = F({1, 4, 0.25}, {3});
  const Tensor y_inf = F({-2.48759298f, 4.47766736f, 2.99750468f, -0.997504678f, -5.84464541f, 2, -4.47766736f,
                          2.48759298f, 1, -2.99500936f, -1.9223227f, 5.9223227f},
                         {2, 3, 2});
  RunOpCase({.label = "inference",
             .op_type = "BatchNormalization",
             .opset = 15,
             .attrs = {{"epsilon", AFloat(1e-2f)}},
             .inputs = {x, scale, bias, mean, var},
             .expected = {y_inf}});
  RunOpCase({.label = "inference opset 9",
             .op_type = "BatchNormalization",
             .opset = 9,
             .attrs = {{"epsilon", AFloat(1e-2f)}},
             .inputs = {x, scale, bias, mean, var},
             .expected = {y_inf}});
  RunOpCase({.label = "inference opset 6 is_test",
             .op_type = "BatchNormalization",
             .opset = 6,
             .attrs = {{"epsilon", AFloat(1e-2f)}, {"is_test", AInt(1)}},
             .inputs = {x, scale, bias, mean, var},
             .expected = {y_inf}});
  RunOpCase({.label = "float16 X with float32 statistics (opset 15)",
             .op_type = "BatchNormalization",
             .opset = 15,
             .attrs = {{"epsilon", AFloat(1e-2f)}},
             .inputs = {Cast(x, DType::kFloat16), scale, bias, mean, var},
             .expected = {Cast(y_inf, DType::kFloat16)},
             .rtol = 2e-3,
             .atol = 2e-3});
  const Tensor y_train = F({-0.686543795f, 1.23577883f, 3.68060231f, 0.106465897f, 0.659698845f, 2.44676705f,
                            -1.23577883f, 0.686543795f, 1.8935341f, -1.68060231f, 1.55323295f, 3.34030115f},
                           {2, 3, 2});
  RunOpCase({.label = "training_mode",
             .op_type = "BatchNormalization",
             .opset = 15,
             .attrs = {{"epsilon", AFloat(1e-2f)}, {"momentum", AFloat(0.8f)}, {"training_mode", AInt(1)}},
             .inputs = {x, scale, bias, mean, var},
             .num_outputs = 3,
             .expected = {y_train, F({0.5, -1.2f, 0.2f}, {3}), F({3.45f, 4.2f, 1.2f}, {3})}});
  RunOpCase({.label = "training_mode, Y only, float64",
             .op_type = "BatchNormalization",
             .opset = 14,
             .attrs = {{"epsilon", AFloat(1e-2f)}, {"training_mode", AInt(1)}},
             .inputs = {Cast(x, DType::kFloat64), Cast(scale, DType::kFloat64), Cast(bias, DType::kFloat64),
                        Cast(mean, DType::kFloat64), Cast(var, DType::kFloat64)},
             .expected = {Cast(y_train, DType::kFloat64)}});
  RunOpCase({.label = "opset 7 spatial=0",
             .op_type = "BatchNormalization",
             .opset = 7,
             .attrs = {{"spatial", AInt(0)}},
             .inputs = {Pat({2, 2, 2}), F({1, 2, 3, 4}, {2, 2}), F({0, 1, 0, 1}, {2, 2}), F({1, 0, -1, 0}, {2, 2}),
                        F({1, 2, 3, 4}, {2, 2})},
             .expected = {F({-2.999985f, 8.07105013f, 3.46409584f, -4.9999925f, 2.999985f, 1, -5.19614376f, 6.9999925f},
                            {2, 2, 2})}});
  RunOpCase({.label = "2-D input",
             .op_type = "BatchNormalization",
             .inputs = {F({1, 2, 3, 4}, {2, 2}), F({1, 1}, {2}), F({0, 0}, {2}), F({1, 2}, {2}), F({1, 1}, {2})},
             .expected = {F({0, 0, 2 / std::sqrt(1 + 1e-5f), 2 / std::sqrt(1 + 1e-5f)}, {2, 2})}});
  RunOpCase({.label = "zero batch",
             .op_type = "BatchNormalization",
             .inputs = {F({}, {0, 3, 2}), scale, bias, mean, var},
             .expected = {F({}, {0, 3, 2})}});
}

TEST(BatchNormalizationTest, Errors) {
  const Tensor s3 = F({1, 1, 1}, {3});
  RunOpCase({.label = "statistics of the wrong size",
             .op_type = "BatchNormalization",
             .inputs = {RandomF({2, 3, 2}, 1), s3, s3, s3, F({1, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "one value per channel"});
  RunOpCase({.label = "running outputs without training_mode",
             .op_type = "BatchNormalization",
             .opset = 15,
             .inputs = {RandomF({2, 3, 2}, 1), s3, s3, s3, s3},
             .num_outputs = 3,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "training_mode=1"});
  RunOpCase({.label = "saved_mean of opset 9",
             .op_type = "BatchNormalization",
             .opset = 9,
             .inputs = {RandomF({2, 3, 2}, 1), s3, s3, s3, s3},
             .num_outputs = 5,
             .expect_error = StatusCode::kUnimplemented,
             .error_substr = "saved_mean"});
  RunOpCase({.label = "rank 1",
             .op_type = "BatchNormalization",
             .inputs = {F({1, 2, 3}, {3}), s3, s3, s3, s3},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 2"});
}

TEST(InstanceNormalizationTest, PerPlane) {
  const Tensor y = F({-0.662475681f, 1.77872325f, 0.383752432f, 3.32495136f, -1.5574465f, 1.23249514f, -0.662475681f,
                      1.77872325f, 0.383752432f, 3.32495136f, -1.5574465f, 1.23249514f},
                     {2, 2, 3});
  RunOpCase({.label = "3-D",
             .op_type = "InstanceNormalization",
             .inputs = {Pat({2, 2, 3}), F({1, -2}, {2}), F({0.5, 1}, {2})},
             .expected = {y}});
  RunOpCase({.label = "float64, epsilon",
             .op_type = "InstanceNormalization",
             .attrs = {{"epsilon", AFloat(0.5f)}},
             .inputs = {D({1, 3}, {1, 1, 2}), D({2}, {1}), D({1}, {1})},
             .expected = {D({1 - 2 / std::sqrt(1.5), 1 + 2 / std::sqrt(1.5)}, {1, 1, 2})},
             .rtol = 1e-6});
  RunOpCase({.label = "scale of the wrong size",
             .op_type = "InstanceNormalization",
             .inputs = {RandomF({1, 2, 3}, 1), F({1, 1, 1}, {3}), F({1, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "one value per channel"});
}

TEST(LayerNormalizationTest, AxesOutputsBroadcast) {
  const Tensor x = Pat({2, 3, 4});
  RunOpCase({.label = "axis 1, scale (3,4), bias (4), Mean and InvStdDev",
             .op_type = "LayerNormalization",
             .attrs = {{"axis", AInt(1)}},
             .inputs = {x, Pat({3, 4}, 3, 1, 5, 2, 0.5f), F({0, 1, -1, 2}, {4})},
             .num_outputs = 3,
             .expected = {F({0.297841541f,  2.67874323f, -1,           2.92060113f,  0.676912594f,   0.972923496f,
                             -2.24551917f,  2,           0.270765038f, 0.214781391f, -1.35199455f,   1.40431692f,
                             -0.688576432f, 1.175274f,   -1,           0.923316851f, -0.0625978575f, 1.66353729f,
                             -0.223786567f, 2,           1.62754429f,  1.23787186f,  -0.636932427f,  3.37715286f},
                            {2, 3, 4}),
                          F({-1 / 6.0f, 5 / 12.0f}, {2, 1, 1}), F({0.324918045f, 0.300469716f}, {2, 1, 1})}});
  const Tensor y_last = F(
      {-0.719194952f, 3.03660091f,  0.719194952f, -4.15534861f, 1.03883715f,  -0.479463301f, -4.55490136f, 2.87677981f,
       0.198418948f,  -2.77786527f, 4.1667979f,   -0.79367579f, 1.03883715f,  -0.479463301f, -4.55490136f, 2.87677981f,
       0.198418948f,  -2.77786527f, 4.1667979f,   -0.79367579f, -1.30855981f, 1.04684785f,   -1.57027177f, 5.23423923f},
      {2, 3, 4});
  RunOpCase({.label = "default axis, no B, epsilon, InvStdDev only",
             .op_type = "LayerNormalization",
             .attrs = {{"epsilon", AFloat(0.1f)}},
             .inputs = {x, F({1, 2, 3, 4}, {4}), Tensor()},
             .num_outputs = 1,
             .expected = {y_last}});
  RunOpCase(
      {.label = "negative axis -1 on float64 (stash float32)",
       .op_type = "LayerNormalization",
       .attrs = {{"epsilon", AFloat(0.1f)}, {"axis", AInt(-1)}},
       .inputs = {Cast(x, DType::kFloat64), D({1, 2, 3, 4}, {4})},
       .num_outputs = 3,
       .expected = {Cast(y_last, DType::kFloat64), F({0.25, 0.75, -1.5, 1.75, -0.5, 0}, {2, 3, 1}),
                    F({0.319642201f, 0.319642201f, 0.396837895f, 0.319642201f, 0.396837895f, 0.261711961f}, {2, 3, 1})},
       .rtol = 1e-5,
       .atol = 1e-5});
  RunOpCase({.label = "float16",
             .op_type = "LayerNormalization",
             .attrs = {{"epsilon", AFloat(0.1f)}},
             .inputs = {Cast(x, DType::kFloat16), Cast(F({1, 2, 3, 4}, {4}), DType::kFloat16)},
             .expected = {Cast(y_last, DType::kFloat16)},
             .rtol = 2e-3,
             .atol = 2e-3});
  RunOpCase({.label = "scale that does not broadcast",
             .op_type = "LayerNormalization",
             .inputs = {x, F({1, 2, 3}, {3})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "does not broadcast"});
  RunOpCase({.label = "stash_type 10",
             .op_type = "LayerNormalization",
             .attrs = {{"stash_type", AInt(10)}},
             .inputs = {x, F({1, 2, 3, 4}, {4})},
             .expect_error = StatusCode::kUnimplemented,
             .error_substr = "stash_type"});
  RunOpCase({.label = "axis out of range",
             .op_type = "LayerNormalization",
             .attrs = {{"axis", AInt(3)}},
             .inputs = {x, F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "out of range"});
}

TEST(LpNormalizationTest, P1P2AndZeroNorm) {
  RunOpCase({.label = "p 1 axis 0",
             .op_type = "LpNormalization",
             .attrs = {{"axis", AInt(0)}, {"p", AInt(1)}},
             .inputs = {F({1, -2, 0, 3, 4, 0}, {2, 3})},
             .expected = {F({0.25, -1 / 3.0f, 0, 0.75, 2 / 3.0f, 0}, {2, 3})}});
  RunOpCase({.label = "p 2 default axis, zero row",
             .op_type = "LpNormalization",
             .inputs = {F({3, 4, 0, 0, 0, 0}, {2, 3})},
             .expected = {F({0.6f, 0.8f, 0, 0, 0, 0}, {2, 3})}});
  RunOpCase({.label = "p 3",
             .op_type = "LpNormalization",
             .attrs = {{"p", AInt(3)}},
             .inputs = {F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "p must be 1 or 2"});
}

TEST(MeanVarianceNormalizationTest, Axes) {
  RunOpCase({.label = "default axes 0, 2, 3",
             .op_type = "MeanVarianceNormalization",
             .inputs = {Pat({2, 3, 2, 1})},
             .expected = {F({-0.68680282f, 1.23624508f, 1.34164079f, -0.447213595f, 1.34164079f, -0.447213595f,
                             -1.23624508f, 0.68680282f, 0.447213595f, -1.34164079f, 0.447213595f, -1.34164079f},
                            {2, 3, 2, 1})},
             .rtol = 1e-5,
             .atol = 1e-5});
  RunOpCase(
      {.label = "axes [-1]",
       .op_type = "MeanVarianceNormalization",
       .attrs = {{"axes", AInts({-1})}},
       .inputs = {Pat({2, 3})},
       .expected = {F({-1.16247639f, 1.27872403f, -0.116247639f, -1.16247639f, 1.27872403f, -0.116247639f}, {2, 3})},
       .rtol = 1e-5,
       .atol = 1e-5});
  RunOpCase({.label = "default axes need rank 4",
             .op_type = "MeanVarianceNormalization",
             .inputs = {Pat({2, 3})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "out of range"});
}

TEST(LrnTest, WindowSizes) {
  const graph::AttributeMap a3 = {
      {"size", AInt(3)}, {"alpha", AFloat(0.3f)}, {"beta", AFloat(0.6f)}, {"bias", AFloat(2)}};
  graph::AttributeMap a2 = a3;
  a2["size"] = AInt(2);
  RunOpCase({.label = "size 3",
             .op_type = "LRN",
             .attrs = a3,
             .inputs = {Pat({1, 5, 2})},
             .expected = {F({-1.15415992f, 1.81774831f, 0.428873968f, -1.09064898f, 1.47059969f, 0, -1.47059969f,
                             1.09064898f, -0.456119842f, -1.81774831f},
                            {1, 5, 2})}});
  RunOpCase({.label = "size 2 (even: one more channel after)",
             .op_type = "LRN",
             .attrs = a2,
             .inputs = {Pat({1, 5, 2})},
             .expected = {F({-1.09000974f, 1.54246385f, 0.402896191f, -1.45242719f, 1.26635259f, 0, -1.61158477f,
                             0.925478311f, -0.631737888f, -1.75052895f},
                            {1, 5, 2})}});
  RunOpCase({.label = "size missing",
             .op_type = "LRN",
             .inputs = {Pat({1, 5, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "size"});
}

TEST(SoftmaxTest, OpsetAxisSemantics) {
  const Tensor x = Pat({2, 3, 2}, 7, 3, 11, 5, 0.5f);
  RunOpCase({.label = "softmax opset 13 axis 1",
             .op_type = "Softmax",
             .attrs = {{"axis", AInt(1)}},
             .inputs = {x},
             .expected = {F({0.0391125733f, 0.908759924f, 0.175290392f, 0.0166445186f, 0.785597035f, 0.0745955571f,
                             0.0391125733f, 0.908759924f, 0.175290392f, 0.0166445186f, 0.785597035f, 0.0745955571f},
                            {2, 3, 2})}});
  RunOpCase({.label = "softmax opset 11 axis 1 coerces to 2-D",
             .op_type = "Softmax",
             .opset = 11,
             .attrs = {{"axis", AInt(1)}},
             .inputs = {x},
             .expected = {F({0.0161270839f, 0.534055672f, 0.0722765756f, 0.00978157083f, 0.323921139f, 0.0438379591f,
                             0.0161270839f, 0.534055672f, 0.0722765756f, 0.00978157083f, 0.323921139f, 0.0438379591f},
                            {2, 3, 2})}});
  RunOpCase({.label = "logsoftmax default axis (-1)",
             .op_type = "LogSoftmax",
             .inputs = {x},
             .expected = {F({-3.52975042f, -0.0297504183f, -0.126928011f, -2.12692801f, -0.126928011f, -2.12692801f,
                             -3.52975042f, -0.0297504183f, -0.126928011f, -2.12692801f, -0.126928011f, -2.12692801f},
                            {2, 3, 2})}});
  RunOpCase({.label = "logsoftmax opset 11 axis 0: one row",
             .op_type = "LogSoftmax",
             .opset = 11,
             .attrs = {{"axis", AInt(0)}},
             .inputs = {x},
             .expected = {F({-4.44051688f, -0.940516879f, -2.94051688f, -4.94051688f, -1.44051688f, -3.44051688f,
                             -5.44051688f, -1.94051688f, -3.94051688f, -5.94051688f, -2.44051688f, -4.44051688f},
                            {2, 3, 2})}});
  RunOpCase({.label = "large numbers are stable",
             .op_type = "Softmax",
             .inputs = {F({10000, 10001, 10002}, {1, 3})},
             .expected = {F({0.0900305732f, 0.244728471f, 0.665240956f}, {1, 3})}});
  RunOpCase({.label = "logsoftmax large numbers",
             .op_type = "LogSoftmax",
             .inputs = {F({10000, 10001, 10002}, {3})},
             .expected = {F({-2.40760596f, -1.40760596f, -0.40760596f}, {3})}});
  RunOpCase({.label = "float16 negative axis",
             .op_type = "Softmax",
             .attrs = {{"axis", AInt(-2)}},
             .inputs = {Cast(F({0, 0, 1, 3}, {2, 2}), DType::kFloat16)},
             .expected = {Cast(F({0.268941421f, 0.0474258732f, 0.731058579f, 0.952574127f}, {2, 2}), DType::kFloat16)},
             .rtol = 1e-3,
             .atol = 1e-3});
  RunOpCase({.label = "float64", .op_type = "Softmax", .inputs = {D({1, 1}, {2})}, .expected = {D({0.5, 0.5}, {2})}});
  RunOpCase({.label = "zero rows", .op_type = "LogSoftmax", .inputs = {F({}, {0, 3})}, .expected = {F({}, {0, 3})}});
  RunOpCase({.label = "scalar",
             .op_type = "Softmax",
             .inputs = {F({1}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 1"});
  RunOpCase({.label = "axis out of range",
             .op_type = "Softmax",
             .attrs = {{"axis", AInt(2)}},
             .inputs = {F({1, 2}, {1, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "out of range"});
}

TEST(HardmaxTest, FirstMaximum) {
  const Tensor x = F({1, 3, 3, 2, 1, 0, 0, 0, 0, 5, 2, 1}, {2, 2, 3});
  RunOpCase({.label = "opset 13 axis 1",
             .op_type = "Hardmax",
             .attrs = {{"axis", AInt(1)}},
             .inputs = {x},
             .expected = {F({0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1}, {2, 2, 3})}});
  RunOpCase({.label = "opset 11 axis 1 coerces to 2-D",
             .op_type = "Hardmax",
             .opset = 11,
             .attrs = {{"axis", AInt(1)}},
             .inputs = {x},
             .expected = {F({0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, {2, 2, 3})}});
  RunOpCase({.label = "default axis, ties keep the first",
             .op_type = "Hardmax",
             .inputs = {x},
             .expected = {F({0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}, {2, 2, 3})}});
  RunOpCase({.label = "bfloat16",
             .op_type = "Hardmax",
             .inputs = {Cast(F({1, 2, -1}, {3}), DType::kBFloat16)},
             .expected = {Cast(F({0, 1, 0}, {3}), DType::kBFloat16)}});
}

}  // namespace
}  // namespace strata::testing
