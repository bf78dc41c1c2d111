// oneDNN kernels for MatMul, Gemm and the fused matmul ops, against the reference kernels (tests/ops/op_harness.h).
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

OpCase MatMulRow(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int> constant = {}) {
  return {.label = std::move(label), .op_type = "MatMul", .inputs = {RandomF(a, 11), RandomF(b, 12)},
          .constant_inputs = std::move(constant), .kernel = "dnnl"};
}

TEST(DnnlMatMulTest, ShapesBroadcastAndConstantWeights) {
  RunOpCase(MatMulRow("2-D", {3, 4}, {4, 5}));
  RunOpCase(MatMulRow("2-D constant weights", {3, 4}, {4, 5}, {1}));
  RunOpCase(MatMulRow("odd sizes above SIMD tiles", {37, 129}, {129, 65}, {1}));
  RunOpCase(MatMulRow("vector x matrix", {4}, {4, 5}));
  RunOpCase(MatMulRow("matrix x vector", {3, 4}, {4}));
  RunOpCase(MatMulRow("vector x vector", {7}, {7}));
  RunOpCase(MatMulRow("batched", {2, 3, 4}, {2, 4, 5}));
  RunOpCase(MatMulRow("batched x 2-D constant", {2, 3, 4}, {4, 5}, {1}));
  RunOpCase(MatMulRow("broadcast both ways", {2, 1, 3, 4}, {5, 4, 2}));
  RunOpCase(MatMulRow("rank 5", {2, 1, 2, 3, 4}, {1, 3, 1, 4, 2}));
  RunOpCase(MatMulRow("batched vector", {4}, {2, 3, 4, 5}));
}

TEST(DnnlMatMulTest, Declines) {
  RunOpCase({.label = "float64", .op_type = "MatMul", .inputs = {D({1, 2}, {1, 2}), D({3, 4}, {2, 1})},
             .kernel = "dnnl", .expect_decline = true});
  RunOpCase({.label = "int64", .op_type = "MatMul", .inputs = {I64({1, 2}, {1, 2}), I64({3, 4}, {2, 1})},
             .kernel = "dnnl", .expect_decline = true});
  RunOpCase({.label = "zero-size", .op_type = "MatMul", .inputs = {F({}, {0, 2}), RandomF({2, 3}, 1)},
             .kernel = "dnnl", .expect_decline = true});
}

OpCase FusedMatMulRow(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> c,
                      std::string act = "", graph::AttributeMap extra = {}) {
  OpCase row{.label = std::move(label), .op_type = "FusedMatMul", .domain = "strata", .opset = 1,
             .inputs = {RandomF(a, 21), RandomF(b, 22, -0.5f, 0.5f)}, .constant_inputs = {1}, .kernel = "dnnl"};
  if (!c.empty() || !act.empty()) row.inputs.push_back(c.empty() ? Tensor() : RandomF(c, 23));
  if (!act.empty()) row.attrs["activation"] = AString(act);
  for (auto& [k, v] : extra) row.attrs[k] = v;
  return row;
}

TEST(DnnlMatMulTest, FusedBiasAndActivations) {
  RunOpCase(FusedMatMulRow("bias [N]", {4, 8}, {8, 6}, {6}));
  RunOpCase(FusedMatMulRow("bias [1,N] relu", {4, 8}, {8, 6}, {1, 6}, "Relu"));
  RunOpCase(FusedMatMulRow("full addend", {4, 8}, {8, 6}, {4, 6}, "Tanh"));
  RunOpCase(FusedMatMulRow("batched, bias [N], sigmoid", {2, 5, 8}, {8, 6}, {6}, "Sigmoid"));
  RunOpCase(FusedMatMulRow("no bias, leaky", {4, 8}, {8, 6}, {}, "LeakyRelu", {{"activation_alpha", AFloat(0.2f)}}));
  RunOpCase(FusedMatMulRow("clip", {4, 8}, {8, 6}, {6}, "Clip",
                           {{"activation_alpha", AFloat(-0.3f)}, {"activation_beta", AFloat(0.4f)}}));
  RunOpCase(FusedMatMulRow("hard sigmoid", {4, 8}, {8, 6}, {6}, "HardSigmoid"));
  RunOpCase(FusedMatMulRow("hard swish", {4, 8}, {8, 6}, {6}, "HardSwish"));
  RunOpCase(FusedMatMulRow("elu", {4, 8}, {8, 6}, {6}, "Elu", {{"activation_alpha", AFloat(0.7f)}}));
  RunOpCase(FusedMatMulRow("selu", {4, 8}, {8, 6}, {6}, "Selu"));
  RunOpCase(FusedMatMulRow("softplus", {4, 8}, {8, 6}, {6}, "Softplus"));
}

}  // namespace
}  // namespace strata::testing
