// FuseQuantizedConv / FuseQuantizedMatMul: QDQ convolutions and matrix products -> strata.QuantizedConv /
// strata.QuantizedMatMul on oneDNN's int8 kernels, checked against the reference
// interpretation of the unfused QDQ graph (reference DequantizeLinear / Conv / QuantizeLinear kernels).
//
// Tolerance: one quantization step of the output. The int8 kernel accumulates exact int32 sums and applies one float32
// multiplier per channel; the reference convolves the dequantized float32 values (a different rounding of the same
// sum, relative error about 1e-6) and then rounds to nearest even. A value that lands within that error of a
// half-way point may round to the neighbouring integer, so outputs agree exactly except for rare one-step
// differences (the test counts them and requires at most 1% of the outputs).
#include <cmath>

#include "ops/int8_support.h"
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

using graph::FuseQuantizedConv;
using graph::FuseQuantizedMatMul;

constexpr float kYScale = 0.05f;

Tensor Int8Weights(std::vector<int64_t> shape, uint64_t seed) {
  Tensor f = RandomF(shape, seed, -127.0f, 127.0f);
  Tensor q = Tensor::Empty(DType::kInt8, Shape(shape));
  for (int64_t i = 0; i < f.num_elements(); ++i)
    q.data<int8_t>()[i] = static_cast<int8_t>(std::nearbyint(f.data<float>()[i]));
  return q;
}

// x [2, C, 8, 8] float in [lo, hi] -> QuantizeLinear (uint8, zero point from lo) -> DequantizeLinear -> Conv 3x3 with
// int8 per-channel weights and an int32 bias -> "c". `x_zp` is x's zero point.
GraphBuilder QdqConv(int64_t c, int64_t m, uint8_t x_zp, float x_scale) {
  GraphBuilder b;
  std::vector<float> ws(m), bs(m);
  std::vector<int32_t> bq(m);
  for (int64_t i = 0; i < m; ++i) {
    ws[i] = 0.002f * static_cast<float>(1 + i % 5);
    bs[i] = x_scale * ws[i];
    bq[i] = static_cast<int32_t>((i * 37) % 200) - 100;
  }
  b.Input("x", {2, c, 8, 8})
      .Constant("xs", Tensor::Scalar(x_scale))
      .Constant("xz", Tensor::Scalar(x_zp))
      .Constant("wq", Int8Weights({m, c, 3, 3}, 11))
      .Constant("ws", Tensor::FromVector(ws))
      .Constant("wz", Tensor::Zeros(DType::kInt8, Shape{m}))
      .Constant("bq", Tensor::FromVector(bq))
      .Constant("bs", Tensor::FromVector(bs))
      .Constant("bz", Tensor::Zeros(DType::kInt32, Shape{m}))
      .Constant("ys", Tensor::Scalar(kYScale))
      .Constant("yz", Tensor::Scalar(uint8_t{0}))
      .Node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, {}, 13)
      .Node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}, {}, 13)
      .Node("DequantizeLinear", {"wq", "ws", "wz"}, {"wd"}, {{"axis", AInt(0)}}, 13)
      .Node("DequantizeLinear", {"bq", "bs", "bz"}, {"bd"}, {{"axis", AInt(0)}}, 13)
      .Node("Conv", {"xd", "wd", "bd"}, {"c"}, {{"pads", AInts({1, 1, 1, 1})}}, 13);
  return b;
}

// The fused graph against the reference interpretation, within one output step; the fast session must run the
// int8 kernel.
void CheckInt8(const graph::Model& model, const Tensor& x, double step, int expect_fused,
               const std::string& fused_op = "strata.QuantizedConv") {
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", x}};
  graph::Graph g = CheckPass(model, feeds, fused_op == "strata.QuantizedConv" ? FuseQuantizedConv : FuseQuantizedMatMul,
                             0.0, step * 1.001);
  EXPECT_EQ(OpCounts(g)[fused_op], expect_fused);
  auto shared = std::make_shared<graph::Model>(model);
  auto session = graph::Session::Create(shared);
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto plan = (*session)->DescribePlan({{"x", x.shape()}});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_NE(plan->find("dnnl-int8"), std::string::npos) << *plan;
  // Exact except for rare half-way ties.
  std::vector<Tensor> ref, fast;
  ASSERT_TRUE(graph::RunReference(model, feeds, &ref).ok());
  ASSERT_TRUE((*session)->Run(feeds, &fast).ok());
  int64_t off = 0, nonzero = 0;
  for (int64_t i = 0; i < ref[0].num_elements(); ++i) {
    off += ref[0].data<float>()[i] != fast[0].data<float>()[i];
    nonzero += ref[0].data<float>()[i] != 0;
  }
  EXPECT_GT(nonzero, ref[0].num_elements() / 5) << "a degenerate case: most outputs are 0";
  EXPECT_LE(off, ref[0].num_elements() / 100) << off << " of " << ref[0].num_elements() << " outputs differ";
}

TEST(FuseQuantizedConvTest, ConvReluQuantize) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  GraphBuilder b = QdqConv(16, 32, 0, 1.0f / 255);
  b.Node("Relu", {"c"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"}, {}, 13)
      .Output("y");
  CheckInt8(b.model(), RandomF({2, 16, 8, 8}, 3, 0.0f, 1.0f), kYScale, 1);
}

// An input with negative values: uint8 with a nonzero zero point (oneDNN's source zero point).
TEST(FuseQuantizedConvTest, AsymmetricInput) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  GraphBuilder b = QdqConv(3, 16, 85, 3.0f / 255);
  b.Node("Relu", {"c"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"}, {}, 13)
      .Output("y");
  CheckInt8(b.model(), RandomF({2, 3, 8, 8}, 4, -1.0f, 2.0f), kYScale, 1);
}

// ResNet's block end: Conv + Add(dequantized uint8 residual) + Relu + QuantizeLinear in one int8 primitive.
TEST(FuseQuantizedConvTest, QuantizedResidual) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  GraphBuilder b = QdqConv(16, 16, 0, 1.0f / 255);
  b.Constant("zs", Tensor::Scalar(0.02f))
      .Node("QuantizeLinear", {"x", "zs", "yz"}, {"zq"}, {}, 13)
      .Node("DequantizeLinear", {"zq", "zs", "yz"}, {"zd"}, {}, 13)
      .Node("Add", {"c", "zd"}, {"s"}, {}, 13)
      .Node("Relu", {"s"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"}, {}, 13)
      .Output("y");
  CheckInt8(b.model(), RandomF({2, 16, 8, 8}, 5, 0.0f, 1.0f), kYScale, 1);
}

// No QuantizeLinear after: float32 output; a quantized residual is dequantized into it. Float32 outputs differ by
// rounding only (no output step): the tolerance is the float error of the sums.
TEST(FuseQuantizedConvTest, FloatOutputWithQuantizedResidual) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  GraphBuilder b = QdqConv(16, 16, 0, 1.0f / 255);
  b.Constant("zs", Tensor::Scalar(0.02f))
      .Node("QuantizeLinear", {"x", "zs", "yz"}, {"zq"}, {}, 13)
      .Node("DequantizeLinear", {"zq", "zs", "yz"}, {"zd"}, {}, 13)
      .Node("Add", {"c", "zd"}, {"y"}, {}, 13)
      .Output("y");
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({2, 16, 8, 8}, 6, 0.0f, 1.0f)}};
  graph::Graph g = CheckPass(b.model(), feeds, FuseQuantizedConv, 1e-4, 1e-5);
  EXPECT_EQ(OpCounts(g)["strata.QuantizedConv"], 1);
}

// Two int8 convolutions in a row: the layout pass keeps the uint8 value between them channels-last (no reorder in
// or out), Transposes only at the region's edges.
TEST(FuseQuantizedConvTest, ChainRunsChannelsLast) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  GraphBuilder b = QdqConv(16, 16, 0, 1.0f / 255);
  b.Constant("w2q", Int8Weights({16, 16, 1, 1}, 12))
      .Constant("w2s", Tensor::FromVector(std::vector<float>(16, 0.004f)))
      .Constant("zs", Tensor::Scalar(0.02f))
      .Node("Relu", {"c"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"rd"}, {}, 13)
      .Node("DequantizeLinear", {"w2q", "w2s"}, {"w2d"}, {{"axis", AInt(0)}}, 13)
      .Node("Conv", {"rd", "w2d"}, {"c2"}, {}, 13)
      .Node("Relu", {"c2"}, {"r2"})
      .Node("QuantizeLinear", {"r2", "zs", "yz"}, {"r2q"}, {}, 13)
      .Node("DequantizeLinear", {"r2q", "zs", "yz"}, {"y"}, {}, 13)
      .Output("y");
  const Tensor x = RandomF({2, 16, 8, 8}, 7, 0.0f, 1.0f);
  CheckInt8(b.model(), x, 0.02, 2);
  auto session = graph::Session::Create(std::make_shared<graph::Model>(b.model()));
  ASSERT_TRUE(session.ok());
  std::map<std::string, int> counts = OpCounts((*session)->optimized_graph());
  EXPECT_EQ(counts["strata.ChannelsLast"], 2);
  EXPECT_EQ(counts["Transpose"], 2);  // x in (uint8), y out
}

// Gemm (transB = 1, int32 bias) + Relu + QuantizeLinear, and MatMul with a 3-D input and a float32 output:
// strata.QuantizedMatMul on oneDNN's int8 matmul.
TEST(FuseQuantizedConvTest, GemmAndMatMul) {
  if (!ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "no VNNI here: see NoVnniRunsTheQdqGraphInFloat";
  const int64_t k = 40, n = 24;
  std::vector<float> ws(n), bs(n);
  std::vector<int32_t> bq(n);
  for (int64_t i = 0; i < n; ++i) {
    ws[i] = 0.003f * static_cast<float>(1 + i % 4);
    bs[i] = 0.01f * ws[i];
    bq[i] = static_cast<int32_t>((i * 53) % 300) - 150;
  }
  GraphBuilder g;
  g.Input("x", {6, k})
      .Constant("xs", Tensor::Scalar(0.01f))
      .Constant("xz", Tensor::Scalar(uint8_t{60}))
      .Constant("wq", Int8Weights({n, k}, 21))
      .Constant("ws", Tensor::FromVector(ws))
      .Constant("bq", Tensor::FromVector(bq))
      .Constant("bs", Tensor::FromVector(bs))
      .Constant("ys", Tensor::Scalar(kYScale))
      .Constant("yz", Tensor::Scalar(uint8_t{0}))
      .Node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, {}, 13)
      .Node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}, {}, 13)
      .Node("DequantizeLinear", {"wq", "ws"}, {"wd"}, {{"axis", AInt(0)}}, 13)
      .Node("DequantizeLinear", {"bq", "bs"}, {"bd"}, {{"axis", AInt(0)}}, 13)
      .Node("Gemm", {"xd", "wd", "bd"}, {"c"}, {{"transB", AInt(1)}}, 13)
      .Node("Relu", {"c"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"}, {}, 13)
      .Output("y");
  CheckInt8(g.model(), RandomF({6, k}, 8, -0.6f, 1.9f), kYScale, 1, "strata.QuantizedMatMul");

  GraphBuilder m;
  m.Input("x", {2, 3, k})
      .Constant("xs", Tensor::Scalar(0.01f))
      .Constant("wq", Int8Weights({k, n}, 22))
      .Constant("ws", Tensor::FromVector(ws))
      .Node("QuantizeLinear", {"x", "xs"}, {"xq"}, {}, 13)
      .Node("DequantizeLinear", {"xq", "xs"}, {"xd"}, {}, 13)
      .Node("DequantizeLinear", {"wq", "ws"}, {"wd"}, {{"axis", AInt(1)}}, 13)
      .Node("MatMul", {"xd", "wd"}, {"y"}, {}, 13)
      .Output("y");
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({2, 3, k}, 9, 0.0f, 2.5f)}};
  graph::Graph mg = CheckPass(m.model(), feeds, FuseQuantizedMatMul, 1e-4, 1e-5);
  EXPECT_EQ(OpCounts(mg)["strata.QuantizedMatMul"], 1);
}

// Without VNNI (run this binary under DNNL_MAX_CPU_ISA=AVX512_CORE, AVX2 or SSE41 to see it) the pass leaves the
// QDQ graph alone: float32 convolutions of the dequantized values, no int8 kernel, the reference's results.
TEST(FuseQuantizedConvTest, NoVnniRunsTheQdqGraphInFloat) {
  if (ops::Int8ConvolutionsAvailable()) GTEST_SKIP() << "this CPU has VNNI: the int8 tests above apply";
  GraphBuilder b = QdqConv(16, 32, 0, 1.0f / 255);
  b.Node("Relu", {"c"}, {"r"})
      .Node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}, {}, 13)
      .Node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"}, {}, 13)
      .Output("y");
  const Tensor x = RandomF({2, 16, 8, 8}, 3, 0.0f, 1.0f);
  graph::Graph g = CheckPass(b.model(), {{"x", x}}, FuseQuantizedConv, 0.0, kYScale * 1.001);
  EXPECT_EQ(OpCounts(g).count("strata.QuantizedConv"), 0u);
  auto session = graph::Session::Create(std::make_shared<graph::Model>(b.model()));
  ASSERT_TRUE(session.ok());
  auto plan = (*session)->DescribePlan({{"x", x.shape()}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->find("dnnl-int8"), std::string::npos) << *plan;
}

// Weights that are not a constant int8 DequantizeLinear (float weights): no QDQ convolution, the pass leaves it.
TEST(FuseQuantizedConvTest, FloatWeightsStay) {
  GraphBuilder b;
  b.Input("x", {2, 4, 6, 6})
      .Constant("xs", Tensor::Scalar(0.01f))
      .Constant("w", RandomF({8, 4, 3, 3}, 1, -0.5f, 0.5f))
      .Node("QuantizeLinear", {"x", "xs"}, {"xq"}, {}, 13)
      .Node("DequantizeLinear", {"xq", "xs"}, {"xd"}, {}, 13)
      .Node("Conv", {"xd", "w"}, {"y"}, {}, 13)
      .Output("y");
  graph::Graph g = CheckPass(b.model(), {{"x", RandomF({2, 4, 6, 6}, 2, 0.0f, 1.0f)}}, FuseQuantizedConv);
  EXPECT_EQ(OpCounts(g).count("strata.QuantizedConv"), 0u);
}

}  // namespace
}  // namespace strata::testing
