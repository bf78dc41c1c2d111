// Gradient rows for the nn family (Conv, ConvTranspose, pools, normalisation, softmax, Gemm, MatMul): float64
// inputs checked against central finite differences by the op harness.
#include "tests/ops/grad_test_util.h"

namespace strata::testing {
namespace {

TEST(GradNnTest, Conv) {
  GradRow(
      {.label = "3x3 with bias", .op_type = "Conv", .inputs = {RD({2, 2, 5, 5}, 1), RD({3, 2, 3, 3}, 2), RD({3}, 3)}});
  GradRow({.label = "strides pads dilations",
           .op_type = "Conv",
           .attrs = {{"strides", AInts({2, 1})}, {"pads", AInts({1, 0, 2, 1})}, {"dilations", AInts({1, 2})}},
           .inputs = {RD({1, 2, 6, 7}, 4), RD({2, 2, 3, 2}, 5)}});
  GradRow({.label = "groups",
           .op_type = "Conv",
           .attrs = {{"group", AInt(2)}, {"pads", AInts({1, 1, 1, 1})}},
           .inputs = {RD({2, 4, 4, 4}, 6), RD({6, 2, 3, 3}, 7), RD({6}, 8)}});
  GradRow({.label = "depthwise",
           .op_type = "Conv",
           .attrs = {{"group", AInt(3)}, {"strides", AInts({2, 2})}},
           .inputs = {RD({1, 3, 5, 5}, 9), RD({3, 1, 2, 2}, 10)}});
  GradRow({.label = "same upper",
           .op_type = "Conv",
           .attrs = {{"auto_pad", AString("SAME_UPPER")}, {"strides", AInts({2, 2})}},
           .inputs = {RD({1, 1, 5, 4}, 11), RD({2, 1, 3, 3}, 12)}});
  GradRow({.label = "1d",
           .op_type = "Conv",
           .attrs = {{"pads", AInts({2, 1})}},
           .inputs = {RD({2, 2, 7}, 13), RD({3, 2, 3}, 14), RD({3}, 15)}});
  GradRow({.label = "3d",
           .op_type = "Conv",
           .attrs = {{"strides", AInts({1, 2, 1})}},
           .inputs = {RD({1, 2, 3, 4, 3}, 16), RD({2, 2, 2, 2, 2}, 17)}});
  GradRow({.label = "bias only",
           .op_type = "Conv",
           .inputs = {RD({1, 1, 3, 3}, 18), RD({2, 1, 2, 2}, 19), RD({2}, 20)},
           .grad_inputs = {2}});
}

TEST(GradNnTest, ConvTranspose) {
  GradRow({.label = "stride 2 with bias",
           .op_type = "ConvTranspose",
           .attrs = {{"strides", AInts({2, 2})}},
           .inputs = {RD({2, 2, 3, 3}, 1), RD({2, 3, 3, 3}, 2), RD({3}, 3)}});
  GradRow({.label = "pads output_padding dilation group",
           .op_type = "ConvTranspose",
           .attrs = {{"strides", AInts({2, 3})},
                     {"pads", AInts({1, 0, 0, 1})},
                     {"output_padding", AInts({1, 2})},
                     {"dilations", AInts({2, 1})},
                     {"group", AInt(2)}},
           .inputs = {RD({1, 4, 3, 2}, 4), RD({4, 1, 2, 3}, 5)}});
  GradRow({.label = "output_shape",
           .op_type = "ConvTranspose",
           .attrs = {{"strides", AInts({2, 2})}, {"output_shape", AInts({7, 6})}},
           .inputs = {RD({1, 1, 3, 3}, 6), RD({1, 2, 3, 2}, 7)}});
}

TEST(GradNnTest, Pools) {
  GradRow({.label = "max 2x2",
           .op_type = "MaxPool",
           .attrs = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}},
           .inputs = {DistinctD({2, 2, 4, 4}, 1)}});
  GradRow({.label = "max overlapping padded dilated ceil",
           .op_type = "MaxPool",
           .attrs = {{"kernel_shape", AInts({3, 2})},
                     {"pads", AInts({1, 0, 1, 1})},
                     {"dilations", AInts({1, 2})},
                     {"ceil_mode", AInt(1)},
                     {"strides", AInts({2, 1})}},
           .inputs = {DistinctD({1, 2, 5, 6}, 2)}});
  GradRow({.label = "max 1d with indices",
           .op_type = "MaxPool",
           .attrs = {{"kernel_shape", AInts({3})}},
           .inputs = {DistinctD({2, 1, 7}, 3)},
           .num_outputs = 2});
  for (int include : {0, 1}) {
    GradRow({.label = "average padded",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({3, 3})},
                       {"pads", AInts({1, 1, 1, 1})},
                       {"strides", AInts({2, 2})},
                       {"count_include_pad", AInt(include)}},
             .inputs = {RD({2, 2, 5, 5}, 4)}});
    GradRow({.label = "average ceil same",
             .op_type = "AveragePool",
             .attrs = {{"kernel_shape", AInts({2, 3})},
                       {"ceil_mode", AInt(1)},
                       {"strides", AInts({2, 2})},
                       {"count_include_pad", AInt(include)},
                       {"pads", AInts({0, 1, 0, 1})}},
             .inputs = {RD({1, 2, 5, 6}, 5)}});
  }
  GradRow({.label = "average 3d",
           .op_type = "AveragePool",
           .attrs = {{"kernel_shape", AInts({2, 2, 2})}},
           .inputs = {RD({1, 1, 3, 3, 3}, 6)}});
  GradRow({.label = "global average", .op_type = "GlobalAveragePool", .inputs = {RD({2, 3, 3, 2}, 7)}});
  GradRow({.label = "global max", .op_type = "GlobalMaxPool", .inputs = {DistinctD({2, 3, 3, 2}, 8)}});
  GradRow(
      {.label = "global lp", .op_type = "GlobalLpPool", .attrs = {{"p", AInt(3)}}, .inputs = {AwayD({2, 2, 3}, 9)}});
}

TEST(GradNnTest, Normalization) {
  GradRow({.label = "batchnorm training",
           .op_type = "BatchNormalization",
           .opset = 15,
           .attrs = {{"training_mode", AInt(1)}, {"epsilon", AFloat(1e-3f)}},
           .inputs = {RD({3, 2, 2, 3}, 1), RD({2}, 2, 0.5, 1.5), RD({2}, 3), RD({2}, 4), RD({2}, 5, 0.5, 1.5)},
           .grad_inputs = {0, 1, 2}});
  GradRow({.label = "batchnorm training 2d",
           .op_type = "BatchNormalization",
           .opset = 15,
           .attrs = {{"training_mode", AInt(1)}},
           .inputs = {RD({5, 3}, 6), RD({3}, 7, 0.5, 1.5), RD({3}, 8), RD({3}, 9), RD({3}, 10, 0.5, 1.5)},
           .grad_inputs = {0, 1, 2}});
  GradRow({.label = "batchnorm inference, every input",
           .op_type = "BatchNormalization",
           .inputs = {RD({2, 3, 2, 2}, 11), RD({3}, 12, 0.5, 1.5), RD({3}, 13), RD({3}, 14), RD({3}, 15, 0.5, 1.5)}});
  GradRow({.label = "batchnorm opset 9 training by outputs",
           .op_type = "BatchNormalization",
           .opset = 9,
           .inputs = {RD({4, 2, 3}, 16), RD({2}, 17, 0.5, 1.5), RD({2}, 18), RD({2}, 19), RD({2}, 20, 0.5, 1.5)},
           .grad_inputs = {0, 1, 2}});
  // stash_type 11: float64 statistics (the default float32 ones are too coarse for finite differences).
  GradRow({.label = "layernorm last axis",
           .op_type = "LayerNormalization",
           .attrs = {{"stash_type", AInt(11)}},
           .inputs = {RD({3, 5}, 21), RD({5}, 22, 0.5, 1.5), RD({5}, 23)}});
  GradRow({.label = "layernorm axis 1 broadcast scale",
           .op_type = "LayerNormalization",
           .attrs = {{"axis", AInt(1)}, {"epsilon", AFloat(1e-3f)}, {"stash_type", AInt(11)}},
           .inputs = {RD({2, 3, 4}, 24), RD({3, 1}, 25, 0.5, 1.5), RD({4}, 26)}});
  GradRow({.label = "layernorm scale with outer dims",
           .op_type = "LayerNormalization",
           .attrs = {{"axis", AInt(-1)}, {"stash_type", AInt(11)}},
           .inputs = {RD({2, 3, 4}, 27), RD({2, 1, 4}, 28, 0.5, 1.5)}});
  GradRow({.label = "instancenorm",
           .op_type = "InstanceNormalization",
           .inputs = {RD({2, 3, 2, 3}, 29), RD({3}, 30, 0.5, 1.5), RD({3}, 31)}});
}

TEST(GradNnTest, LpAndMeanVarianceNormalization) {
  for (int p : {1, 2})
    GradRow({.label = "lp",
             .op_type = "LpNormalization",
             .attrs = {{"p", AInt(p)}, {"axis", AInt(1)}},
             .inputs = {AwayD({2, 3, 2}, p)}});
  GradRow({.label = "mvn default axes", .op_type = "MeanVarianceNormalization", .inputs = {RD({2, 2, 3, 2}, 3)}});
  GradRow({.label = "mvn last axis",
           .op_type = "MeanVarianceNormalization",
           .attrs = {{"axes", AInts({-1})}},
           .inputs = {RD({3, 4}, 4)}});
}

TEST(GradNnTest, SoftmaxGemmMatMul) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    GradRow({.label = "last axis", .op_type = op, .inputs = {RD({3, 4}, 1, -2, 2)}});
    GradRow({.label = "axis 1 of 3", .op_type = op, .attrs = {{"axis", AInt(1)}}, .inputs = {RD({2, 3, 4}, 2, -2, 2)}});
    GradRow({.label = "opset 11 flattens",
             .op_type = op,
             .opset = 11,
             .attrs = {{"axis", AInt(1)}},
             .inputs = {RD({2, 3, 2}, 3, -2, 2)}});
  }
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      const std::vector<int64_t> a = ta ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      const std::vector<int64_t> b = tb ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5};
      GradRow({.label = "gemm",
               .op_type = "Gemm",
               .attrs = {{"transA", AInt(ta)}, {"transB", AInt(tb)}, {"alpha", AFloat(0.5f)}, {"beta", AFloat(2)}},
               .inputs = {RD(a, 1 + ta), RD(b, 3 + tb), RD({1, 5}, 5)}});
    }
  GradRow({.label = "gemm scalar C", .op_type = "Gemm", .inputs = {RD({2, 3}, 6), RD({3, 2}, 7), RD({}, 8)}});
  GradRow({.label = "gemm no C", .op_type = "Gemm", .inputs = {RD({2, 3}, 9), RD({3, 2}, 10)}});
  GradRow({.label = "matmul 2d", .op_type = "MatMul", .inputs = {RD({3, 4}, 11), RD({4, 2}, 12)}});
  GradRow(
      {.label = "matmul batch broadcast", .op_type = "MatMul", .inputs = {RD({2, 1, 3, 4}, 13), RD({3, 4, 2}, 14)}});
  GradRow({.label = "matmul vector left", .op_type = "MatMul", .inputs = {RD({4}, 15), RD({2, 4, 3}, 16)}});
  GradRow({.label = "matmul vector right", .op_type = "MatMul", .inputs = {RD({2, 3, 4}, 17), RD({4}, 18)}});
  GradRow({.label = "matmul vectors", .op_type = "MatMul", .inputs = {RD({4}, 19), RD({4}, 20)}});
}

}  // namespace
}  // namespace strata::testing
