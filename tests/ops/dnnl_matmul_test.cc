// oneDNN kernels for MatMul, Gemm and the fused matmul ops, against the reference kernels (tests/ops/op_harness.h).
#include <limits>
#include <thread>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

OpCase MatMulRow(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int> constant = {}) {
  return {.label = std::move(label),
          .op_type = "MatMul",
          .inputs = {RandomF(a, 11), RandomF(b, 12)},
          .constant_inputs = std::move(constant),
          .kernel = "dnnl"};
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
  RunOpCase({.label = "float64",
             .op_type = "MatMul",
             .inputs = {D({1, 2}, {1, 2}), D({3, 4}, {2, 1})},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "int64",
             .op_type = "MatMul",
             .inputs = {I64({1, 2}, {1, 2}), I64({3, 4}, {2, 1})},
             .kernel = "dnnl",
             .expect_decline = true});
  RunOpCase({.label = "zero-size",
             .op_type = "MatMul",
             .inputs = {F({}, {0, 2}), RandomF({2, 3}, 1)},
             .kernel = "dnnl",
             .expect_decline = true});
}

OpCase FusedMatMulRow(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> c,
                      std::string act = "", graph::AttributeMap extra = {}) {
  OpCase row{.label = std::move(label),
             .op_type = "FusedMatMul",
             .domain = "strata",
             .opset = 1,
             .inputs = {RandomF(a, 21), RandomF(b, 22, -0.5f, 0.5f)},
             .constant_inputs = {1},
             .kernel = "dnnl"};
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
  OpCase nan = FusedMatMulRow("clip with a NaN input falls back", {2, 3}, {3, 2}, {2}, "Clip",
                              {{"activation_alpha", AFloat(0.0f)}, {"activation_beta", AFloat(6.0f)}});
  nan.inputs[0] = F({1, std::numeric_limits<float>::quiet_NaN(), 2, 3, 4, 5}, {2, 3});
  RunOpCase(nan);
  RunOpCase(FusedMatMulRow("hard swish", {4, 8}, {8, 6}, {6}, "HardSwish"));
  RunOpCase(FusedMatMulRow("elu", {4, 8}, {8, 6}, {6}, "Elu", {{"activation_alpha", AFloat(0.7f)}}));
  RunOpCase(FusedMatMulRow("selu", {4, 8}, {8, 6}, {6}, "Selu"));
  RunOpCase(FusedMatMulRow("softplus", {4, 8}, {8, 6}, {6}, "Softplus"));
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// Kernel::Run must be safe for concurrent runs of one plan: each run borrows its own execution slot (memory
// objects, scratchpad) from the kernel.
TEST(DnnlMatMulTest, ConcurrentRunsOfOnePlan) {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  graph::Graph& g = model->graph;
  g.inputs.push_back({"x", DType::kFloat32, PartialShape::Of(Shape{16, 64})});
  g.initializers["w"] = RandomF({64, 48}, 5);
  g.initializers["b"] = RandomF({48}, 6);
  g.nodes.push_back(
      graph::Node{.name = "mm", .op_type = "MatMul", .inputs = {"x", "w"}, .outputs = {"p"}, .opset = 17});
  g.nodes.push_back(graph::Node{.name = "add", .op_type = "Add", .inputs = {"p", "b"}, .outputs = {"q"}, .opset = 17});
  g.nodes.push_back(graph::Node{.name = "relu", .op_type = "Relu", .inputs = {"q"}, .outputs = {"y"}, .opset = 17});
  g.outputs.push_back({"y", DType::kFloat32, PartialShape::Unknown()});
  auto session = graph::Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<Tensor> inputs, want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(RandomF({16, 64}, 100 + t));
    std::vector<Tensor> out;
    ASSERT_TRUE(graph::RunReference(*model, {{"x", inputs.back()}}, &out).ok());
    want.push_back(out[0]);
  }
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns && errors[t].empty(); ++r) {
        std::vector<Tensor> out;
        Status s = (*session)->Run({{"x", inputs[t]}}, &out);
        errors[t] = s.ok() ? CompareTensors(out[0], want[t], 1e-4, 1e-5) : s.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

}  // namespace
}  // namespace strata::testing
