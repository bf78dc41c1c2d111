// Table rows for Resize (opset 10, 11, 13) and Upsample (opset 7, 9). Expected values come from ONNX's reference
// implementation (onnx/backend/test/case/node/resize.py: interpolate_nd with nearest/linear/cubic coefficients),
// run with numpy; the Resize-10 / Upsample rows are numpy.repeat or hand-computed asymmetric interpolation.
#include "tests/ops/op_harness.h"


namespace strata::testing {
namespace {

const Tensor kNone;  // an omitted optional input

Tensor X4() { return F({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4}); }
Tensor X2() { return F({1, 2, 3, 4}, {1, 1, 2, 2}); }

TEST(ResizeTest, NearestModes) {
  RunOpCase({.label = "upsample scales", .op_type = "Resize", .attrs = {{"mode", AString("nearest")}},
             .inputs = {X2(), kNone, F({1, 1, 2, 3}, {4})},
             .expected = {F({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, {1, 1, 4, 6})},
             .constant_inputs = {2}});
  RunOpCase({.label = "downsample sizes", .op_type = "Resize", .attrs = {{"mode", AString("nearest")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 1, 3}, {4})},
             .expected = {F({5, 6, 8}, {1, 1, 1, 3})}});
  RunOpCase({.label = "round_prefer_ceil asymmetric", .op_type = "Resize",
             .attrs = {{"mode", AString("nearest")}, {"coordinate_transformation_mode", AString("asymmetric")},
                       {"nearest_mode", AString("round_prefer_ceil")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 6, 7}, {4})},
             .expected = {F({1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 7, 7, 8, 8, 5, 6, 6, 7, 7, 8, 8, 9, 10, 10, 11, 11, 12, 12,
             13, 14, 14, 15, 15, 16, 16, 13, 14, 14, 15, 15, 16, 16}, {1, 1, 6, 7})},
             .constant_inputs = {3}});
  RunOpCase({.label = "floor align_corners", .op_type = "Resize",
             .attrs = {{"mode", AString("nearest")}, {"coordinate_transformation_mode", AString("align_corners")},
                       {"nearest_mode", AString("floor")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 3, 5}, {4})},
             .expected = {F({1, 1, 2, 3, 4, 5, 5, 6, 7, 8, 13, 13, 14, 15, 16}, {1, 1, 3, 5})}});
  RunOpCase({.label = "ceil half_pixel", .op_type = "Resize",
             .attrs = {{"mode", AString("nearest")}, {"nearest_mode", AString("ceil")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 5, 3}, {4})},
             .expected = {F({2, 3, 4, 6, 7, 8, 10, 11, 12, 14, 15, 16, 14, 15, 16}, {1, 1, 5, 3})}});
  RunOpCase({.label = "int64 data, opset 11 empty roi and scales", .op_type = "Resize", .opset = 11,
             .attrs = {{"mode", AString("nearest")}},
             .inputs = {I64({1, 2, 3, 4}, {2, 2}), F({}, {0}), F({}, {0}), I64({3, 3}, {2})},
             .expected = {I64({1, 1, 2, 1, 1, 2, 3, 3, 4}, {3, 3})},
             .constant_inputs = {1, 2, 3}});
  RunOpCase({.label = "strings", .op_type = "Resize", .attrs = {{"mode", AString("nearest")}},
             .inputs = {T_<std::string>({"a", "b"}, {2}), kNone, F({2}, {1})},
             .expected = {T_<std::string>({"a", "a", "b", "b"}, {4})}});
}

TEST(ResizeTest, LinearAndCoordinateModes) {
  RunOpCase({.label = "downsample half_pixel", .op_type = "Resize", .attrs = {{"mode", AString("linear")}},
             .inputs = {X4(), kNone, F({1, 1, 0.6f, 0.6f}, {4})},
             .expected = {F({2.66666651, 4.33333302, 9.33333302, 10.999999}, {1, 1, 2, 2})}});
  RunOpCase({.label = "upsample align_corners", .op_type = "Resize",
             .attrs = {{"mode", AString("linear")}, {"coordinate_transformation_mode", AString("align_corners")}},
             .inputs = {X2(), kNone, F({1, 1, 2, 2}, {4})},
             .expected = {F({1, 1.33333337, 1.66666663, 2, 1.66666663, 2, 2.33333325, 2.66666675, 2.33333325,
             2.66666675, 3, 3.33333325, 3, 3.33333325, 3.66666675, 4}, {1, 1, 4, 4})},
             .constant_inputs = {2}});
  RunOpCase({.label = "downsample align_corners uses in*scale", .op_type = "Resize",
             .attrs = {{"mode", AString("linear")}, {"coordinate_transformation_mode", AString("align_corners")}},
             .inputs = {F({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4}), kNone, F({1, 1, 0.6f, 0.6f}, {4})},
             .expected = {F({1, 3.14285707}, {1, 1, 1, 2})}});
  RunOpCase({.label = "pytorch_half_pixel to one column", .op_type = "Resize",
             .attrs = {{"mode", AString("linear")}, {"coordinate_transformation_mode", AString("pytorch_half_pixel")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 3, 1}, {4})},
             .expected = {F({1.66666663, 7, 12.333333}, {1, 1, 3, 1})}});
  RunOpCase({.label = "tf_crop_and_resize with extrapolation", .op_type = "Resize",
             .attrs = {{"mode", AString("linear")}, {"coordinate_transformation_mode", AString("tf_crop_and_resize")},
                       {"extrapolation_value", AFloat(10)}},
             .inputs = {X4(), F({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}, {8}), kNone, I64({1, 1, 3, 3}, {4})},
             .expected = {F({7.60000038, 10, 10, 12.4000006, 10, 10, 10, 10, 10}, {1, 1, 3, 3})}});
  RunOpCase({.label = "tf_crop_and_resize nearest", .op_type = "Resize",
             .attrs = {{"mode", AString("nearest")}, {"coordinate_transformation_mode", AString("tf_crop_and_resize")}},
             .inputs = {X4(), F({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}, {8}), kNone, I64({1, 1, 3, 3}, {4})},
             .expected = {F({7, 0, 0, 11, 0, 0, 0, 0, 0}, {1, 1, 3, 3})}});
  RunOpCase({.label = "rank 3, double", .op_type = "Resize", .attrs = {{"mode", AString("linear")}},
             .inputs = {D({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2}), kNone, F({1, 1.5f, 2}, {3})},
             .expected = {D({0, 0.25, 0.75, 1, 1, 1.25, 1.75, 2, 2.3333333333333335, 2.5833333333333335,
             3.0833333333333335, 3.3333333333333339, 3.666666666666667, 3.916666666666667, 4.416666666666667,
                 4.6666666666666679, 6, 6.25, 6.75, 7, 7, 7.25, 7.75, 8, 8.3333333333333339, 8.5833333333333339,
                     9.0833333333333339, 9.3333333333333339, 9.6666666666666679, 9.9166666666666661,
                         10.416666666666668, 10.666666666666666}, {2, 4, 4})},
             .rtol = 1e-12});
}

TEST(ResizeTest, Cubic) {
  RunOpCase({.label = "upsample half_pixel", .op_type = "Resize", .attrs = {{"mode", AString("cubic")}},
             .inputs = {X4(), kNone, F({1, 1, 2, 2}, {4})},
             .expected = {F({0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375,
             1.66015625, 1.95703125, 2.43359375, 3.0625, 3.46875, 4.09765625, 4.57421875, 4.87109375, 3.56640625,
                 3.86328125, 4.33984375, 4.96875, 5.375, 6.00390625, 6.48046875, 6.77734375, 6.08203125, 6.37890625,
                     6.85546875, 7.484375, 7.890625, 8.51953125, 8.99609375, 9.29296875, 7.70703125, 8.00390625,
                         8.48046875, 9.109375, 9.515625, 10.1445312, 10.6210938, 10.9179688, 10.2226562, 10.5195312,
                             10.9960938, 11.625, 12.03125, 12.6601562, 13.1367188, 13.4335938, 12.1289062, 12.4257812,
                                 12.9023438, 13.53125, 13.9375, 14.5664062, 15.0429688, 15.3398438, 13.3164062,
                                     13.6132812, 14.0898438, 14.71875, 15.125, 15.7539062, 16.2304688, 16.5273438},
                                         {1, 1, 8, 8})}});
  RunOpCase({.label = "downsample A=-0.5 exclude_outside", .op_type = "Resize",
             .attrs = {{"mode", AString("cubic")}, {"cubic_coeff_a", AFloat(-0.5f)}, {"exclude_outside", AInt(1)}},
             .inputs = {X4(), kNone, F({1, 1, 0.8f, 0.8f}, {4})},
             .expected = {F({1.36812675, 2.6695013, 4.01333666, 6.57362509, 7.875, 9.21883488, 11.948966, 13.2503414,
             14.5941763}, {1, 1, 3, 3})}});
  RunOpCase({.label = "sizes asymmetric", .op_type = "Resize",
             .attrs = {{"mode", AString("cubic")}, {"coordinate_transformation_mode", AString("asymmetric")}},
             .inputs = {X4(), kNone, kNone, I64({1, 1, 9, 10}, {4})},
             .expected = {F({1, 1.31599998, 1.72800004, 2.24799991, 2.57599998, 3, 3.49600005, 3.84800005, 4.09600019,
             4.07200003, 2.42112494, 2.73712492, 3.14912486, 3.66912484, 3.99712491, 4.42112494, 4.91712475,
                 5.26912498, 5.51712465, 5.49312496, 4.36899853, 4.68499851, 5.09699869, 5.61699867, 5.94499874,
                     6.36899853, 6.86499882, 7.21699858, 7.46499872, 7.44099855, 6.48148155, 6.79748154, 7.20948172,
                         7.7294817, 8.05748177, 8.48148155, 8.97748184, 9.32948112, 9.57748127, 9.5534811, 7.91906738,
                             8.23506737, 8.64706707, 9.16706753, 9.4950676, 9.91906738, 10.4150677, 10.767067,
                                 11.0150671, 10.9910669, 10.1961594, 10.5121593, 10.924159, 11.4441595, 11.7721596,
                                     12.1961594, 12.6921587, 13.0441589, 13.2921591, 13.2681589, 11.9629631,
                                         12.2789631, 12.6909628, 13.2109632, 13.5389633, 13.9629631, 14.4589634,
                                             14.8109627, 15.0589628, 15.0349627, 13.2633743, 13.5793743, 13.991374,
                                                 14.5113745, 14.8393745, 15.2633743, 15.7593746, 16.1113739,
                                                     16.359375, 16.3353748, 13.3292179, 13.6452179, 14.0572186,
                                                         14.5772181, 14.9052181, 15.3292179, 15.8252182, 16.1772175,
                                                             16.4252186, 16.4012184}, {1, 1, 9, 10})}});
}

TEST(ResizeTest, OlderOpsetsAndUpsample) {
  RunOpCase({.label = "Resize-10 nearest", .op_type = "Resize", .opset = 10, .attrs = {{"mode", AString("nearest")}},
             .inputs = {X2(), F({1, 1, 2, 3}, {4})},
             .expected = {F({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, {1, 1, 4, 6})},
             .constant_inputs = {1}});
  RunOpCase({.label = "Resize-10 linear (asymmetric)", .op_type = "Resize", .opset = 10,
             .attrs = {{"mode", AString("linear")}},
             .inputs = {F({1, 3}, {1, 2}), F({1, 2}, {2})}, .expected = {F({1, 2, 3, 3}, {1, 4})}});
  RunOpCase({.label = "Upsample-9 nearest", .op_type = "Upsample", .opset = 9, .inputs = {X2(), F({1, 1, 2, 3}, {4})},
             .expected = {F({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, {1, 1, 4, 6})}});
  RunOpCase({.label = "Upsample-7 linear attribute", .op_type = "Upsample", .opset = 7,
             .attrs = {{"mode", AString("linear")}, {"scales", AFloats({1, 2})}}, .inputs = {F({0, 4, 8, 12}, {2, 2})},
             .expected = {F({0, 2, 4, 4, 8, 10, 12, 12}, {2, 4})}});
}

TEST(ResizeTest, Errors) {
  RunOpCase({.label = "scales and sizes", .op_type = "Resize",
             .inputs = {X2(), kNone, F({1, 1, 2, 2}, {4}), I64({1, 1, 4, 4}, {4})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "exactly one of scales and sizes"});
  RunOpCase({.label = "neither", .op_type = "Resize", .inputs = {X2()}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "exactly one of scales and sizes"});
  RunOpCase({.label = "negative scale", .op_type = "Resize", .inputs = {X2(), kNone, F({1, 1, -2, 2}, {4})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be positive"});
  RunOpCase({.label = "wrong count", .op_type = "Resize", .inputs = {X2(), kNone, F({2, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "scales has 2 values, expected 4"});
  RunOpCase({.label = "antialias", .op_type = "Resize", .opset = 18, .attrs = {{"antialias", AInt(1)}},
             .inputs = {X2(), kNone, F({1, 1, 2, 2}, {4})}, .expect_error = StatusCode::kUnimplemented,
             .error_substr = "antialias"});
  RunOpCase({.label = "cubic in opset 10", .op_type = "Resize", .opset = 10, .attrs = {{"mode", AString("cubic")}},
             .inputs = {X2(), F({1, 1, 2, 2}, {4})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "mode 'cubic'"});
  RunOpCase({.label = "linear strings", .op_type = "Resize", .attrs = {{"mode", AString("linear")}},
             .inputs = {T_<std::string>({"a"}, {1}), kNone, F({2}, {1})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "numeric input"});
}


TEST(ResizeTest, DtypeVariety) {
  RunOpCase({.label = "linear uint8 rounds", .op_type = "Resize", .attrs = {{"mode", AString("linear")}},
             .inputs = {T_<uint8_t>({0, 255}, {2}), kNone, F({2}, {1})},
             .expected = {T_<uint8_t>({0, 64, 191, 255}, {4})}});
  RunOpCase({.label = "cubic float16", .op_type = "Resize", .attrs = {{"mode", AString("cubic")}},
             .inputs = {Cast(X4(), DType::kFloat16), kNone, F({1, 1, 2, 2}, {4})},
             .expected = {Cast(F({0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875,
             3.68359375, 1.66015625, 1.95703125, 2.43359375, 3.0625, 3.46875, 4.09765625, 4.57421875, 4.87109375,
                 3.56640625, 3.86328125, 4.33984375, 4.96875, 5.375, 6.00390625, 6.48046875, 6.77734375, 6.08203125,
                     6.37890625, 6.85546875, 7.484375, 7.890625, 8.51953125, 8.99609375, 9.29296875, 7.70703125,
                         8.00390625, 8.48046875, 9.109375, 9.515625, 10.1445312, 10.6210938, 10.9179688, 10.2226562,
                             10.5195312, 10.9960938, 11.625, 12.03125, 12.6601562, 13.1367188, 13.4335938, 12.1289062,
                                 12.4257812, 12.9023438, 13.53125, 13.9375, 14.5664062, 15.0429688, 15.3398438,
                                     13.3164062, 13.6132812, 14.0898438, 14.71875, 15.125, 15.7539062, 16.2304688,
                                         16.5273438}, {1, 1, 8, 8}), DType::kFloat16)},
             .rtol = 1e-3});
  RunOpCase({.label = "nearest bfloat16", .op_type = "Resize", .attrs = {{"mode", AString("nearest")}},
             .inputs = {Cast(X2(), DType::kBFloat16), kNone, F({1, 1, 2, 3}, {4})},
             .expected = {Cast(F({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4},
             {1, 1, 4, 6}), DType::kBFloat16)}});
}

}  // namespace
}  // namespace strata::testing
