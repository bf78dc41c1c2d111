// Table rows for Conv, ConvTranspose and Gemm. Expected values come from the ONNX spec examples or from numpy
// (direct-loop convolutions over the Pat() inputs); the big random rows are checked against the direct-loop oracles
// below, which share no code with the im2col + blocked-GEMM kernels under test.
#include <array>
#include <cmath>

#include "tests/ops/nn_test_util.h"

namespace strata::testing {
namespace {

Tensor Ramp(int64_t n, std::vector<int64_t> shape) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return F(v, shape);
}

Tensor Ones(std::vector<int64_t> shape) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape(shape));
  for (float& v : t.mutable_values<float>()) v = 1.0f;
  return t;
}

// y[n, m, oh, ow] = b[m] + sum over c, kh, kw of x[n, g * cg + c, ih, iw] * w[m, c, kh, kw], in double.
Tensor NaiveConv2D(const Tensor& x, const Tensor& w, const Tensor& b, int64_t group, std::array<int64_t, 2> s,
                   std::array<int64_t, 2> d, std::array<int64_t, 4> pads) {
  const int64_t n_ = x.dim(0), c_ = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t m_ = w.dim(0), cg = w.dim(1), kh_ = w.dim(2), kw_ = w.dim(3), mg = m_ / group;
  const int64_t oh_ = (h + pads[0] + pads[2] - ((kh_ - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t ow_ = (wd + pads[1] + pads[3] - ((kw_ - 1) * d[1] + 1)) / s[1] + 1;
  Tensor y = Tensor::Empty(DType::kFloat32, Shape{n_, m_, oh_, ow_});
  const float *px = x.data<float>(), *pw = w.data<float>(), *pb = b.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t m = 0; m < m_; ++m)
      for (int64_t oh = 0; oh < oh_; ++oh)
        for (int64_t ow = 0; ow < ow_; ++ow) {
          double acc = pb[m];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < kh_; ++kh)
              for (int64_t kw = 0; kw < kw_; ++kw) {
                const int64_t ih = oh * s[0] - pads[0] + kh * d[0], iw = ow * s[1] - pads[1] + kw * d[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                acc += double(px[((n * c_ + m / mg * cg + c) * h + ih) * wd + iw]) *
                       pw[((m * cg + c) * kh_ + kh) * kw_ + kw];
              }
          py[((n * m_ + m) * oh_ + oh) * ow_ + ow] = static_cast<float>(acc);
        }
  return y;
}

// Scatter form of the transposed convolution: every x[n, c, ih, iw] * w[c, m, kh, kw] lands on
// y[n, g * mg + m, ih * s0 + kh * d0 - pad0, iw * s1 + kw * d1 - pad1] when inside the (oh, ow) output.
Tensor NaiveConvTranspose2D(const Tensor& x, const Tensor& w, const Tensor& b, int64_t group, std::array<int64_t, 2> s,
                            std::array<int64_t, 2> d, std::array<int64_t, 2> pad_begin, int64_t oh_, int64_t ow_) {
  const int64_t n_ = x.dim(0), c_ = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t mg = w.dim(1), kh_ = w.dim(2), kw_ = w.dim(3), m_ = mg * group, cg = c_ / group;
  std::vector<double> acc(n_ * m_ * oh_ * ow_, 0.0);
  const float *px = x.data<float>(), *pw = w.data<float>(), *pb = b.data<float>();
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < wd; ++iw)
          for (int64_t m = 0; m < mg; ++m)
            for (int64_t kh = 0; kh < kh_; ++kh)
              for (int64_t kw = 0; kw < kw_; ++kw) {
                const int64_t oh = ih * s[0] + kh * d[0] - pad_begin[0], ow = iw * s[1] + kw * d[1] - pad_begin[1];
                if (oh < 0 || oh >= oh_ || ow < 0 || ow >= ow_) continue;
                acc[((n * m_ + c / cg * mg + m) * oh_ + oh) * ow_ + ow] +=
                    double(px[((n * c_ + c) * h + ih) * wd + iw]) * pw[((c * mg + m) * kh_ + kh) * kw_ + kw];
              }
  Tensor y = Tensor::Empty(DType::kFloat32, Shape{n_, m_, oh_, ow_});
  for (int64_t i = 0; i < y.num_elements(); ++i) y.data<float>()[i] = float(acc[i] + pb[i / (oh_ * ow_) % m_]);
  return y;
}

// alpha * op(A) op(B) + beta * C (C broadcast to m x n), in double.
Tensor NaiveGemm(const Tensor& a, const Tensor& b, const Tensor& c, bool ta, bool tb, double alpha, double beta) {
  const int64_t m = a.dim(ta ? 1 : 0), k = a.dim(ta ? 0 : 1), n = b.dim(tb ? 0 : 1);
  Tensor y = Tensor::Empty(DType::kFloat32, Shape{m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(a.data<float>()[ta ? p * m + i : i * k + p]) * b.data<float>()[tb ? j * k + p : p * n + j];
      const int64_t ci = (c.dim(0) == 1 ? 0 : i) * c.dim(1) + (c.dim(1) == 1 ? 0 : j);
      y.data<float>()[i * n + j] = float(alpha * acc + beta * c.data<float>()[ci]);
    }
  return y;
}

TEST(ConvTest, SpecExamples) {
  // ONNX spec: test_basic_conv_with_padding / _without_padding / test_conv_with_strides_padding.
  RunOpCase({.label = "pads 1",
             .op_type = "Conv",
             .attrs = {{"pads", AInts({1, 1, 1, 1})}},
             .inputs = {Ramp(25, {1, 1, 5, 5}), Ones({1, 1, 3, 3})},
             .expected = {F({12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                             117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84},
                            {1, 1, 5, 5})}});
  RunOpCase({.label = "no pads",
             .op_type = "Conv",
             .attrs = {{"kernel_shape", AInts({3, 3})}},
             .inputs = {Ramp(25, {1, 1, 5, 5}), Ones({1, 1, 3, 3})},
             .expected = {F({54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3})}});
  RunOpCase({.label = "strides 2 pads 1",
             .op_type = "Conv",
             .attrs = {{"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}},
             .inputs = {Ramp(35, {1, 1, 7, 5}), Ones({1, 1, 3, 3})},
             .expected = {F({12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}, {1, 1, 4, 3})}});
  RunOpCase({.label = "asymmetric pads",
             .op_type = "Conv",
             .attrs = {{"strides", AInts({2, 2})}, {"pads", AInts({1, 0, 1, 0})}},
             .inputs = {Ramp(35, {1, 1, 7, 5}), Ones({1, 1, 3, 3})},
             .expected = {F({21, 33, 99, 117, 189, 207, 171, 183}, {1, 1, 4, 2})}});
}

TEST(ConvTest, GroupsDilationsAutoPad) {
  const Tensor y_group =
      F({-10,   -1,   -15,   1,    15,   -32, 3,    23,   -32, -13, 23,   10,  2,  15,  16,  -4,  12,  7,
         0,     -13,  7,     -9,   -13,  -4,  1,    -3,   -1,  -1,  -4,   12,  -9, 29,  12,  17,  29,  -10,
         -14.5, 19.5, -10.5, -1.5, 23.5, 4.5, 16.5, 16.5, 4.5, 7.5, 16.5, 5.5, 22, -22, 15,  -1,  -24, 16,
         -5,    -21,  16,    -21,  -21,  18,  -14,  18,   -11, 4,   31,   -24, -8, 16,  -24, -24, 16,  7},
        {1, 6, 3, 4});
  const graph::AttributeMap group_attrs = {
      {"group", AInt(2)}, {"strides", AInts({2, 1})}, {"dilations", AInts({1, 2})}, {"pads", AInts({1, 0, 0, 2})}};
  const Tensor gx = Pat({1, 4, 5, 6}), gw = Pat({6, 2, 2, 3}, 5, 1, 7, 3), gb = F({1, -2, 3, 0.5, -1, 2}, {6});
  RunOpCase({.label = "group 2, strides, dilations, asymmetric pads, bias",
             .op_type = "Conv",
             .attrs = group_attrs,
             .inputs = {gx, gw, gb},
             .expected = {y_group}});
  RunOpCase({.label = "float64",
             .op_type = "Conv",
             .attrs = group_attrs,
             .inputs = {Cast(gx, DType::kFloat64), Cast(gw, DType::kFloat64), Cast(gb, DType::kFloat64)},
             .expected = {Cast(y_group, DType::kFloat64)}});
  RunOpCase({.label = "float16",
             .op_type = "Conv",
             .attrs = group_attrs,
             .inputs = {Cast(gx, DType::kFloat16), Cast(gw, DType::kFloat16), Cast(gb, DType::kFloat16)},
             .expected = {Cast(y_group, DType::kFloat16)},
             .rtol = 1e-3,
             .atol = 1e-3});
  RunOpCase({.label = "1-D SAME_LOWER stride 2 (pads 2 + 1)",
             .op_type = "Conv",
             .attrs = {{"auto_pad", AString("SAME_LOWER")}, {"strides", AInts({2})}},
             .inputs = {Pat({1, 2, 7}), Pat({3, 2, 4}, 3, 2, 5, 2)},
             .expected = {F({-14, 12, 9, -10, -4, 12, -18, -9, 16, -3, -20, -13}, {1, 3, 4})}});
  RunOpCase({.label = "3-D SAME_UPPER",
             .op_type = "Conv",
             .attrs = {{"auto_pad", AString("SAME_UPPER")}},
             .inputs = {Pat({1, 1, 3, 3, 3}), Pat({2, 1, 2, 2, 2}, 3, 1, 5, 2)},
             .expected = {F({7,  3,   -9, 17, 2,   -11, 14, -1,  -3, 15,  0,  7,  3,   -12, 16,  0,  -15, 8,
                             -1, -19, 5,  0,  4,   -5,  -7, 11,  -4, 20,  -5, -5, 22,  -3,  -3,  11, 1,   2,
                             15, -10, 12, -5, -30, 14,  -2, -12, 8,  -13, 9,  5,  -13, 20,  -14, -5, 10,  -8},
                            {1, 2, 3, 3, 3})}});
  RunOpCase({.label = "VALID",
             .op_type = "Conv",
             .attrs = {{"auto_pad", AString("VALID")}, {"pads", AInts({5, 5, 5, 5})}},
             .inputs = {Ramp(25, {1, 1, 5, 5}), Ones({1, 1, 3, 3})},
             .expected = {F({54, 63, 72, 99, 108, 117, 144, 153, 162}, {1, 1, 3, 3})}});
  RunOpCase(
      {.label = "depthwise with multiplier 2, stride 2, pads 1, bias",
       .op_type = "Conv",
       .attrs = {{"group", AInt(3)}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}},
       .inputs = {Pat({1, 3, 4, 4}), Pat({6, 1, 3, 3}, 2, 1, 5, 2), F({0, 1, 2, 3, 4, 5}, {6})},
       .expected = {F({-17, 13, -3, 3, 15, -25, -10, 2, 9, 3, -5, -16, -1, 3, 3, 19, 8, -20, 16, -3, 17, 18, 5, 0},
                      {1, 6, 2, 2})}});
  RunOpCase({.label = "1x1 direct path, group 2",
             .op_type = "Conv",
             .attrs = {{"group", AInt(2)}},
             .inputs = {Pat({1, 2, 3, 4}, 5, 1, 9, 4), Pat({4, 1, 1, 1}, 3, 2, 5, 2)},
             .expected = {F({0, 0,  0, 0, 0,  0, 0,  0, 0,  0, 0,  0, 6,  -4, 4,  -6, 2, -8, 0, 8,  -2, 6,  -4, 4,
                             3, -1, 4, 0, -4, 1, -3, 2, -2, 3, -1, 4, -3, 1,  -4, 0,  4, -1, 3, -2, 2,  -3, 1,  -4},
                            {1, 4, 3, 4})}});
  RunOpCase({.label = "zero batch",
             .op_type = "Conv",
             .inputs = {F({}, {0, 2, 4, 4}), RandomF({3, 2, 3, 3}, 1)},
             .expected = {F({}, {0, 3, 2, 2})}});
  RunOpCase({.label = "zero input channels: bias only",
             .op_type = "Conv",
             .inputs = {F({}, {1, 0, 2, 2}), F({}, {2, 0, 1, 1}), F({1, 2}, {2})},
             .expected = {F({1, 1, 1, 1, 2, 2, 2, 2}, {1, 2, 2, 2})}});
}

TEST(ConvTest, BigRowsAgainstDirectLoops) {
  // Sizes that straddle the GEMM's register tile (6 x 32), panel (96 x 256 x 512) and im2col chunk edges.
  struct Big {
    std::vector<int64_t> x, w;
    int64_t group;
    std::array<int64_t, 2> s, d;
    std::array<int64_t, 4> pads;
  };
  const Big bigs[] = {{{2, 3, 23, 19}, {100, 3, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
                      {{1, 64, 9, 9}, {70, 32, 3, 3}, 2, {2, 1}, {1, 2}, {0, 2, 1, 0}},
                      {{1, 300, 5, 5}, {7, 300, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}}};
  int seed = 10;
  for (const Big& c : bigs) {
    const Tensor x = RandomF(c.x, seed++), w = RandomF(c.w, seed++), b = RandomF({c.w[0]}, seed++);
    RunOpCase({.label = StrCat("big ", Shape(c.x).ToString(), " * ", Shape(c.w).ToString()),
               .op_type = "Conv",
               .attrs = {{"group", AInt(c.group)},
                         {"strides", AInts({c.s[0], c.s[1]})},
                         {"dilations", AInts({c.d[0], c.d[1]})},
                         {"pads", AInts({c.pads[0], c.pads[1], c.pads[2], c.pads[3]})}},
               .inputs = {x, w, b},
               .expected = {NaiveConv2D(x, w, b, c.group, c.s, c.d, c.pads)},
               .rtol = 1e-4,
               .atol = 1e-4});
  }
}

TEST(ConvTest, Errors) {
  RunOpCase({.label = "channel mismatch",
             .op_type = "Conv",
             .inputs = {RandomF({1, 3, 5, 5}, 1), RandomF({2, 2, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "channels"});
  RunOpCase({.label = "group does not divide M",
             .op_type = "Conv",
             .attrs = {{"group", AInt(2)}},
             .inputs = {RandomF({1, 4, 5, 5}, 1), RandomF({3, 2, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "not divisible by group"});
  RunOpCase({.label = "kernel larger than input",
             .op_type = "Conv",
             .inputs = {RandomF({1, 1, 2, 2}, 1), RandomF({1, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "smaller than the (dilated) kernel"});
  RunOpCase({.label = "kernel_shape disagrees with W",
             .op_type = "Conv",
             .attrs = {{"kernel_shape", AInts({2, 2})}},
             .inputs = {RandomF({1, 1, 5, 5}, 1), RandomF({1, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "does not match"});
  RunOpCase({.label = "bad auto_pad",
             .op_type = "Conv",
             .attrs = {{"auto_pad", AString("SAME")}},
             .inputs = {RandomF({1, 1, 5, 5}, 1), RandomF({1, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "auto_pad must be"});
  RunOpCase({.label = "pads of the wrong length",
             .op_type = "Conv",
             .attrs = {{"pads", AInts({1, 1})}},
             .inputs = {RandomF({1, 1, 5, 5}, 1), RandomF({1, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "pads must have 4 values"});
  RunOpCase({.label = "rank 2",
             .op_type = "Conv",
             .inputs = {RandomF({1, 5}, 1), RandomF({1, 5}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "rank >= 3"});
  RunOpCase({.label = "bias of the wrong size",
             .op_type = "Conv",
             .inputs = {RandomF({1, 1, 5, 5}, 1), RandomF({2, 1, 3, 3}, 2), RandomF({3}, 3)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "B must be 1-D"});
  RunOpCase({.label = "integer input",
             .op_type = "Conv",
             .inputs = {I64({1}, {1, 1, 1}), I64({1}, {1, 1, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "float tensor"});
  RunOpCase({.label = "4 spatial dims",
             .op_type = "Conv",
             .inputs = {RandomF({1, 1, 2, 2, 2, 2}, 1), RandomF({1, 1, 1, 1, 1, 1}, 2)},
             .expect_error = StatusCode::kUnimplemented,
             .error_substr = "4 spatial dimensions"});
}

TEST(ConvTransposeTest, SpecAndNumpy) {
  // ONNX spec test_convtranspose: 3x3 ramp, W ones (1, 2, 3, 3).
  const Tensor y_spec =
      F({0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8}, {1, 1, 5, 5});
  std::vector<float> two(y_spec.values<float>().begin(), y_spec.values<float>().end());
  two.insert(two.end(), two.begin(), two.end());
  RunOpCase({.label = "spec",
             .op_type = "ConvTranspose",
             .inputs = {Ramp(9, {1, 1, 3, 3}), Ones({1, 2, 3, 3})},
             .expected = {F(two, {1, 2, 5, 5})}});
  RunOpCase({.label = "group 2, strides, dilations, output_padding, pads, bias",
             .op_type = "ConvTranspose",
             .attrs = {{"group", AInt(2)},
                       {"strides", AInts({2, 3})},
                       {"dilations", AInts({2, 1})},
                       {"pads", AInts({1, 0, 0, 2})},
                       {"output_padding", AInts({1, 0})}},
             .inputs = {Pat({1, 4, 2, 3}), Pat({4, 1, 2, 2}, 3, 2, 5, 2), F({1, -1}, {2})},
             .expected = {F({1,  1,  1,  1,  1,  1,  -3, 5,  1, 4,  -9, 1,  1,  1,  1,  1,  1,  1,  8,  -1,
                             1,  1,  -1, 1,  1,  1,  1,  1,  1, 1,  -1, -1, -1, -1, -1, -1, 3,  -5, -1, -5,
                             -1, -1, -1, -1, -1, -1, -1, -1, 3, -9, -1, -5, -1, -1, -1, -1, -1, -1, -1, -1},
                            {1, 2, 5, 6})}});
  const Tensor x3 = F({1, 2, 3}, {1, 1, 3});
  RunOpCase({.label = "output_shape beyond the full result: zeros at the end",
             .op_type = "ConvTranspose",
             .attrs = {{"strides", AInts({3})}, {"output_shape", AInts({10})}},
             .inputs = {x3, F({1, 10, 100}, {1, 1, 3})},
             .expected = {F({1, 10, 100, 2, 20, 200, 3, 30, 300, 0}, {1, 1, 10})}});
  RunOpCase({.label = "SAME_LOWER: odd pad at the start",
             .op_type = "ConvTranspose",
             .attrs = {{"strides", AInts({2})}, {"auto_pad", AString("SAME_LOWER")}},
             .inputs = {x3, F({1, 10, 100, 1000}, {1, 1, 4})},
             .expected = {F({10, 102, 1020, 203, 2030, 300}, {1, 1, 6})}});
  RunOpCase({.label = "SAME_UPPER: odd pad at the end",
             .op_type = "ConvTranspose",
             .attrs = {{"auto_pad", AString("SAME_UPPER")}},
             .inputs = {x3, F({1, 10, 100, 1000}, {1, 1, 4})},
             .expected = {F({12, 123, 1230}, {1, 1, 3})}});
  RunOpCase({.label = "output_shape given as N, C, spatial",
             .op_type = "ConvTranspose",
             .attrs = {{"strides", AInts({3})}, {"output_shape", AInts({1, 1, 10})}},
             .inputs = {x3, F({1, 10, 100}, {1, 1, 3})},
             .expected = {F({1, 10, 100, 2, 20, 200, 3, 30, 300, 0}, {1, 1, 10})}});
  RunOpCase({.label = "3-D, float64",
             .op_type = "ConvTranspose",
             .attrs = {{"strides", AInts({1, 2, 1})}},
             .inputs = {Cast(RandomF({1, 2, 2, 3, 2}, 4), DType::kFloat64),
                        Cast(RandomF({2, 3, 2, 2, 2}, 5), DType::kFloat64)}});
  RunOpCase({.label = "zero batch",
             .op_type = "ConvTranspose",
             .inputs = {F({}, {0, 1, 3, 3}), RandomF({1, 2, 3, 3}, 6)},
             .expected = {F({}, {0, 2, 5, 5})}});
  const Tensor x = RandomF({2, 6, 7, 9}, 7), w = RandomF({6, 40, 3, 4}, 8), b = RandomF({120}, 9);
  RunOpCase({.label = "big, group 3",
             .op_type = "ConvTranspose",
             .attrs = {{"group", AInt(3)},
                       {"strides", AInts({2, 3})},
                       {"dilations", AInts({1, 2})},
                       {"pads", AInts({1, 2, 0, 1})}},
             .inputs = {x, w, b},
             .expected = {NaiveConvTranspose2D(x, w, b, 3, {2, 3}, {1, 2}, {1, 2}, 2 * 6 + 3 - 1, 3 * 8 + 7 - 3)},
             .rtol = 1e-4,
             .atol = 1e-4});
}

TEST(ConvTransposeTest, Errors) {
  RunOpCase({.label = "channel mismatch",
             .op_type = "ConvTranspose",
             .inputs = {RandomF({1, 3, 3, 3}, 1), RandomF({2, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "channels"});
  RunOpCase({.label = "output_shape of the wrong length",
             .op_type = "ConvTranspose",
             .attrs = {{"output_shape", AInts({1, 2, 3})}},
             .inputs = {RandomF({1, 1, 3, 3}, 1), RandomF({1, 1, 3, 3}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "output_shape must have 2 values"});
  RunOpCase({.label = "pads larger than the result",
             .op_type = "ConvTranspose",
             .attrs = {{"pads", AInts({4, 4, 4, 4})}},
             .inputs = {RandomF({1, 1, 2, 2}, 1), RandomF({1, 1, 2, 2}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "remove more than"});
}

TEST(GemmTest, TransposesAlphaBetaBroadcast) {
  const Tensor a = Pat({3, 4}), b = Pat({4, 5}, 3, 1, 7, 3);
  const Tensor at = F({-2, 4, -1, 5, 0, -5, 1, -4, 2, -3, 3, -2}, {4, 3});
  const Tensor bt = F({-2, -1, 0, 1, 1, 2, 3, -3, -3, -2, -1, 0, 0, 1, 2, 3, 3, -3, -2, -1}, {5, 4});
  const Tensor y_row = F({0, 14, 3.5, 7, 0, -0.5, -4.5, 2, 8.5, 18.5, 4.5, 4.5, 11.5, 4.5, 15}, {3, 5});
  const Tensor y_col = F({-3, 21, -4, -1, -19, -3, -15, -6, 3, 19, 8, 4, 14, -4, 13}, {3, 5});
  RunOpCase({.label = "alpha, beta, C row",
             .op_type = "Gemm",
             .attrs = {{"alpha", AFloat(0.5f)}, {"beta", AFloat(2)}},
             .inputs = {a, b, F({1, 2, 3, 4, 5}, {5})},
             .expected = {y_row}});
  RunOpCase({.label = "transA, transB, C column",
             .op_type = "Gemm",
             .attrs = {{"transA", AInt(1)}, {"transB", AInt(1)}},
             .inputs = {at, bt, F({1, 2, 3}, {3, 1})},
             .expected = {y_col}});
  RunOpCase({.label = "C scalar, opset 9",
             .op_type = "Gemm",
             .opset = 9,
             .attrs = {{"transB", AInt(1)}},
             .inputs = {a, bt, F({0}, {})},
             .expected = {F({-4, 20, -5, -2, -20, -5, -17, -8, 1, 17, 5, 1, 11, -7, 10}, {3, 5})}});
  RunOpCase({.label = "no C (opset 11+)",
             .op_type = "Gemm",
             .opset = 11,
             .inputs = {a, b, Tensor()},
             .expected = {F({-4, 20, -5, -2, -20, -5, -17, -8, 1, 17, 5, 1, 11, -7, 10}, {3, 5})}});
  RunOpCase({.label = "beta 0 ignores NaN in C",
             .op_type = "Gemm",
             .attrs = {{"beta", AFloat(0)}},
             .inputs = {a, b, F({NAN}, {1})},
             .expected = {F({-4, 20, -5, -2, -20, -5, -17, -8, 1, 17, 5, 1, 11, -7, 10}, {3, 5})}});
  RunOpCase({.label = "int64",
             .op_type = "Gemm",
             .attrs = {{"alpha", AFloat(2)}, {"beta", AFloat(3)}},
             .inputs = {Cast(a, DType::kInt64), Cast(b, DType::kInt64), I64({1, 2, 3, 4, 5}, {5})},
             .expected = {I64({-5, 46, -1, 8, -25, -7, -28, -7, 14, 49, 13, 8, 31, -2, 35}, {3, 5})}});
  RunOpCase({.label = "int32 and uint32 agree with float",
             .op_type = "Gemm",
             .inputs = {Cast(a, DType::kInt32), Cast(b, DType::kInt32), Cast(F({1, 2, 3, 4, 5}, {5}), DType::kInt32)},
             .expected = {Cast(F({-3, 22, -2, 2, -15, -4, -15, -5, 5, 22, 6, 3, 14, -3, 15}, {3, 5}), DType::kInt32)}});
  RunOpCase(
      {.label = "float16",
       .op_type = "Gemm",
       .attrs = {{"alpha", AFloat(0.5f)}, {"beta", AFloat(2)}},
       .inputs = {Cast(a, DType::kFloat16), Cast(b, DType::kFloat16), Cast(F({1, 2, 3, 4, 5}, {5}), DType::kFloat16)},
       .expected = {Cast(y_row, DType::kFloat16)}});
  RunOpCase({.label = "zero K: beta * C",
             .op_type = "Gemm",
             .inputs = {F({}, {2, 0}), F({}, {0, 3}), F({1, 2, 3}, {3})},
             .expected = {F({1, 2, 3, 1, 2, 3}, {2, 3})}});
  RunOpCase(
      {.label = "zero M", .op_type = "Gemm", .inputs = {F({}, {0, 4}), b, F({1}, {1})}, .expected = {F({}, {0, 5})}});
  // Matrix-vector shapes (the GEMV path) and sizes across the blocking edges, against direct loops.
  const struct {
    int64_t m, k, n;
    bool ta, tb;
  } bigs[] = {
      {1, 300, 1000, false, true}, {700, 33, 1, true, false}, {100, 300, 600, false, false}, {97, 513, 65, true, true}};
  int seed = 20;
  for (const auto& g : bigs) {
    const Tensor ga = RandomF(g.ta ? std::vector<int64_t>{g.k, g.m} : std::vector<int64_t>{g.m, g.k}, seed++);
    const Tensor gb = RandomF(g.tb ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n}, seed++);
    const Tensor gc = RandomF({1, g.n}, seed++);
    RunOpCase({.label = StrCat("big m=", g.m, " k=", g.k, " n=", g.n),
               .op_type = "Gemm",
               .attrs = {{"transA", AInt(g.ta)}, {"transB", AInt(g.tb)}, {"alpha", AFloat(1.5f)}, {"beta", AFloat(-1)}},
               .inputs = {ga, gb, gc},
               .expected = {NaiveGemm(ga, gb, gc, g.ta, g.tb, 1.5, -1)},
               .rtol = 1e-4,
               .atol = 1e-4});
  }
}

TEST(GemmTest, Errors) {
  RunOpCase({.label = "inner dimension mismatch",
             .op_type = "Gemm",
             .inputs = {RandomF({2, 3}, 1), RandomF({4, 2}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "inner dimensions differ"});
  RunOpCase({.label = "C does not broadcast",
             .op_type = "Gemm",
             .inputs = {RandomF({2, 3}, 1), RandomF({3, 4}, 2), RandomF({3}, 3)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "does not broadcast"});
  RunOpCase({.label = "C required before opset 11",
             .op_type = "Gemm",
             .opset = 9,
             .inputs = {RandomF({2, 3}, 1), RandomF({3, 4}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "C is required"});
  RunOpCase({.label = "rank 3",
             .op_type = "Gemm",
             .inputs = {RandomF({1, 2, 3}, 1), RandomF({3, 4}, 2)},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "must be 2-D"});
  RunOpCase({.label = "mixed dtypes",
             .op_type = "Gemm",
             .inputs = {RandomF({2, 3}, 1), I64({1, 2, 3}, {3, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "element type"});
}

}  // namespace
}  // namespace strata::testing
