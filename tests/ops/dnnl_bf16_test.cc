// SessionOptions::precision bf16: the oneDNN convolution and matmul kernels compute in bfloat16 (float32 accumulation,
// float32 at their boundary) and are then named "dnnl-bf16". bfloat16 keeps 8 significant bits (relative rounding
// 2^-9 per operand), so the rows compare with the float32 reference within 1e-2 of each output's largest magnitude;
// the session test checks that the arithmetic really changed (bf16 results are not bit-equal to fp32) and that fp32
// stays the default.
#include <cmath>
#include <cstring>

#include "graph/interpreter.h"
#include "ops/dnnl/bf16_probe.h"
#include "ops/op.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::AttributeMap;
using graph::Precision;

constexpr double kBf16Tol = 1e-2;

// On a CPU without avx512_bf16 the kernels run float32 (with a warning) and keep their float32 name.
std::string Bf16Name() { return __builtin_cpu_supports("avx512bf16") ? "dnnl-bf16" : "dnnl"; }

OpCase Bf16(OpCase row) {
  row.precision = Precision::kBf16;
  row.kernel_name = Bf16Name();
  row.fast_tol_of_max = kBf16Tol;
  return row;
}

OpCase Conv(std::string label, std::vector<int64_t> x, std::vector<int64_t> w, AttributeMap attrs,
            bool const_w = true) {
  return {.label = std::move(label),
          .op_type = "Conv",
          .attrs = std::move(attrs),
          .inputs = {RandomF(x, 1), RandomF(w, 2, -0.5f, 0.5f), RandomF({w[0]}, 3)},
          .constant_inputs = const_w ? std::vector<int>{1, 2} : std::vector<int>{},
          .kernel = "dnnl"};
}

OpCase FusedConv(std::string label, std::vector<int64_t> x, std::vector<int64_t> w, bool residual, std::string act,
                 AttributeMap attrs) {
  OpCase row{.label = std::move(label),
             .op_type = "FusedConv",
             .domain = "strata",
             .opset = 1,
             .attrs = std::move(attrs),
             .inputs = {RandomF(x, 7), RandomF(w, 8, -0.5f, 0.5f), RandomF({w[0]}, 9)},
             .constant_inputs = {1, 2},
             .kernel = "dnnl"};
  if (residual) row.inputs.push_back(RandomF({x[0], w[0], x[2], x[3]}, 10));  // stride 1, same padding
  if (!act.empty()) row.attrs["activation"] = AString(act);
  return row;
}

TEST(DnnlBf16Test, Convolutions) {
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  RunOpCase(Bf16(Conv("3x3, 16 -> 32, bias", {2, 16, 9, 9}, {32, 16, 3, 3}, pad1)));
  RunOpCase(Bf16(Conv("3x3 that fp32 runs as Winograd", {1, 64, 14, 14}, {64, 64, 3, 3}, pad1)));
  RunOpCase(Bf16(Conv("1x1, 64 -> 256", {2, 64, 7, 7}, {256, 64, 1, 1}, {})));
  RunOpCase(Bf16(Conv("first layer 7x7 stride 2", {1, 3, 32, 32}, {64, 3, 7, 7},
                      {{"strides", AInts({2, 2})}, {"pads", AInts({3, 3, 3, 3})}})));
  RunOpCase(Bf16(Conv("odd channels 5 -> 7", {2, 5, 6, 6}, {7, 5, 3, 3}, pad1)));
  RunOpCase(Bf16(Conv("runtime weights", {2, 16, 8, 8}, {32, 16, 3, 3}, pad1, false)));
  RunOpCase(Bf16(FusedConv("bias + relu", {2, 32, 8, 8}, {32, 32, 3, 3}, false, "Relu", pad1)));
  RunOpCase(Bf16(FusedConv("bias + residual + relu", {2, 32, 8, 8}, {32, 32, 3, 3}, true, "Relu", pad1)));
  RunOpCase(Bf16(FusedConv("1x1 residual, no activation", {1, 64, 6, 6}, {64, 64, 1, 1}, true, "", {})));
  RunOpCase(Bf16(Conv("depthwise 3x3, 32 channels", {2, 32, 9, 9}, {32, 1, 3, 3},
                      {{"group", AInt(32)}, {"pads", AInts({1, 1, 1, 1})}})));
  RunOpCase(Bf16(Conv("groups 2", {1, 32, 8, 8}, {32, 16, 3, 3}, {{"group", AInt(2)}, {"pads", AInts({1, 1, 1, 1})}})));
  RunOpCase(Bf16(Conv("1-D", {2, 16, 20}, {32, 16, 3}, {})));
  OpCase deconv = Conv("ConvTranspose stride 2", {1, 16, 5, 5}, {16, 8, 3, 3}, {{"strides", AInts({2, 2})}});
  deconv.op_type = "ConvTranspose";
  deconv.inputs[2] = RandomF({8}, 3);
  RunOpCase(Bf16(deconv));
  // The same layer in fp32 (the default) keeps the float32 kernel and the tight tolerance.
  OpCase fp32 = FusedConv("fp32: bias + residual + relu", {2, 32, 8, 8}, {32, 32, 3, 3}, true, "Relu", pad1);
  fp32.kernel_name = "dnnl";
  RunOpCase(fp32);
}

TEST(DnnlBf16Test, ChannelsLastConvolutions) {
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  const Tensor x = RandomF({2, 9, 10, 32}, 120);  // NHWC
  const Tensor w = RandomF({64, 32, 3, 3}, 121, -0.3f, 0.3f);
  OpCase conv = ChannelsLastCase("channels-last conv", "Conv", "", {x, w, RandomF({64}, 122)}, pad1, "dnnl");
  conv.constant_inputs = {1, 2};
  RunOpCase(Bf16(conv));
  AttributeMap fused = pad1;
  fused["activation"] = AString("Relu");
  fused["nhwc_inputs"] = AInts({0, 3});
  const Tensor w2 = RandomF({32, 32, 3, 3}, 123, -0.3f, 0.3f);
  OpCase res = ChannelsLastCase("channels-last conv + residual + relu", "FusedConv", "strata",
                                {x, w2, RandomF({32}, 124), RandomF({2, 9, 10, 32}, 125)}, fused, "dnnl");
  res.constant_inputs = {1, 2};
  RunOpCase(Bf16(res));
}

OpCase MatMul(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int> constant) {
  return {.label = std::move(label),
          .op_type = "MatMul",
          .inputs = {RandomF(a, 11), RandomF(b, 12)},
          .constant_inputs = std::move(constant),
          .kernel = "dnnl"};
}

OpCase Gemm(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> c,
            AttributeMap attrs, std::vector<int> constant = {1, 2}) {
  return {.label = std::move(label),
          .op_type = "Gemm",
          .attrs = std::move(attrs),
          .inputs = {RandomF(a, 13), RandomF(b, 14), RandomF(c, 15)},
          .constant_inputs = std::move(constant),
          .kernel = "dnnl"};
}

TEST(DnnlBf16Test, MatMulAndGemm) {
  RunOpCase(Bf16(MatMul("2-D constant weights", {32, 256}, {256, 64}, {1})));
  RunOpCase(Bf16(MatMul("odd sizes", {37, 129}, {129, 65}, {1})));
  RunOpCase(Bf16(MatMul("runtime B", {16, 64}, {64, 48}, {})));
  RunOpCase(Bf16(MatMul("batched x 2-D constant", {2, 8, 64}, {64, 32}, {1})));
  RunOpCase(Bf16(MatMul("batched both runtime", {3, 8, 32}, {3, 32, 16}, {})));
  RunOpCase(Bf16(Gemm("Linear: transB, bias", {8, 128}, {64, 128}, {64}, {{"transB", AInt(1)}})));
  RunOpCase(Bf16(Gemm("transA transB", {64, 8}, {32, 64}, {1, 32}, {{"transA", AInt(1)}, {"transB", AInt(1)}})));
  RunOpCase(
      Bf16(Gemm("alpha beta, full C", {8, 64}, {64, 16}, {8, 16}, {{"alpha", AFloat(0.5f)}, {"beta", AFloat(2)}})));
  RunOpCase(Bf16(Gemm("runtime B and C", {8, 64}, {64, 16}, {16}, {}, {})));
  OpCase fused =
      Gemm("FusedGemm relu", {8, 128}, {64, 128}, {64}, {{"transB", AInt(1)}, {"activation", AString("Relu")}});
  fused.op_type = "FusedGemm";
  fused.domain = "strata";
  fused.opset = 1;
  RunOpCase(Bf16(fused));
  OpCase fp32 = Gemm("fp32: Linear", {8, 128}, {64, 128}, {64}, {{"transB", AInt(1)}});
  fp32.kernel_name = "dnnl";
  RunOpCase(fp32);
}

// Mixed-precision training (nn::DTypePolicy mixed_bfloat16): the convolution gradients in bfloat16 (dY and W, or dY
// and X, rounded to bfloat16; float32 accumulation and dX/dW/dB), compared with the float32 reference kernels within
// the same bf16 tolerance as the forward rows. The policy reaches a kernel through the node attribute
// strata_compute_dtype (ops/compute_dtype.h), which overrides SessionOptions::precision either way.
OpCase ConvGrad(std::string label, bool data, std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y,
                AttributeMap attrs, bool nhwc = false) {
  auto to_nhwc = [&](std::vector<int64_t> s) { return nhwc ? std::vector<int64_t>{s[0], s[2], s[3], s[1]} : s; };
  const std::string op = data ? "ConvBackwardData" : "ConvBackwardFilter";
  std::vector<Tensor> in = {RandomF(to_nhwc(y), 140), data ? RandomF(w, 141, -0.3f, 0.3f) : RandomF(to_nhwc(x), 142),
                            T_<int64_t>(data ? x : w, {static_cast<int64_t>(x.size())})};
  OpCase row;
  if (nhwc) {
    attrs["op_domain"] = AString("strata");
    attrs["nhwc_inputs"] = data ? AInts({0}) : AInts({0, 1});
    if (!data) attrs["nhwc_output"] = AInt(0);
    row = ChannelsLastCase(std::move(label), op, "strata", std::move(in), std::move(attrs), "dnnl");
    row.constant_inputs = {2};
  } else {
    row = {.label = std::move(label),
           .op_type = op,
           .domain = "strata",
           .opset = 1,
           .attrs = std::move(attrs),
           .inputs = std::move(in),
           .constant_inputs = {2},
           .kernel = "dnnl"};
  }
  if (!data) row.num_outputs = 2;  // dW and dB
  return row;
}

// The row marked by a mixed_bfloat16 policy (the attribute), with the session left at fp32.
OpCase Policy(OpCase row, const char* dtype = "bfloat16") {
  row.attrs["strata_compute_dtype"] = AString(dtype);
  row.kernel_name = Bf16Name();
  row.fast_tol_of_max = kBf16Tol;
  return row;
}

TEST(DnnlBf16Test, ConvolutionGradients) {
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  const AttributeMap s2 = {{"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}};
  for (bool data : {true, false}) {
    SCOPED_TRACE(data ? "backward data" : "backward weights");
    RunOpCase(Policy(ConvGrad("3x3 16 -> 32, pad 1", data, {2, 16, 16, 16}, {32, 16, 3, 3}, {2, 32, 16, 16}, pad1)));
    RunOpCase(Policy(ConvGrad("3x3 64 -> 64 (Winograd in fp32)", data, {2, 64, 16, 16}, {64, 64, 3, 3},
                              {2, 64, 16, 16}, pad1)));
    RunOpCase(Policy(ConvGrad("3x3 stride 2", data, {2, 32, 33, 33}, {64, 32, 3, 3}, {2, 64, 17, 17}, s2)));
    RunOpCase(Policy(ConvGrad("1x1 64 -> 256, 7x7", data, {2, 64, 7, 7}, {256, 64, 1, 1}, {2, 256, 7, 7}, {})));
    RunOpCase(Policy(ConvGrad("first layer, 1 input channel", data, {4, 1, 18, 18}, {32, 1, 3, 3}, {4, 32, 16, 16},
                              {})));
    RunOpCase(Policy(ConvGrad("channels-last 3x3 32 -> 64", data, {2, 32, 16, 15}, {64, 32, 3, 3}, {2, 64, 16, 15},
                              pad1, /*nhwc=*/true)));
    // Channels-last bfloat16 memory goes straight into oneDNN's nhwc (acdb) kernels: 1x1 and strided layers too.
    RunOpCase(Policy(ConvGrad("channels-last 1x1 64 -> 256, 14x14", data, {2, 64, 14, 14}, {256, 64, 1, 1},
                              {2, 256, 14, 14}, {}, /*nhwc=*/true)));
    RunOpCase(Policy(ConvGrad("channels-last 3x3 stride 2", data, {2, 32, 33, 33}, {64, 32, 3, 3}, {2, 64, 17, 17}, s2,
                              /*nhwc=*/true)));
    // A 3x3 layer at 7x7: bfloat16 backward data, but backward weights stays float32 (measured slower in bf16).
    OpCase small = Policy(ConvGrad("3x3 32 -> 32 at 7x7", data, {2, 32, 7, 7}, {32, 32, 3, 3}, {2, 32, 7, 7}, pad1));
    if (!data) {
      small.kernel_name = "dnnl";
      small.fast_tol_of_max = 0;
      small.rtol = 1e-4;
      small.atol = 1e-4;
    }
    RunOpCase(small);
    // SessionOptions::precision bf16 without the attribute (inference's --precision) reaches them too.
    RunOpCase(Bf16(ConvGrad("session bf16", data, {2, 16, 16, 16}, {32, 16, 3, 3}, {2, 32, 16, 16}, pad1)));
    // A float32 policy attribute overrides a bf16 session: float32 kernel, float32 tolerance.
    OpCase fp32 = ConvGrad("float32 override", data, {2, 16, 9, 9}, {32, 16, 3, 3}, {2, 32, 9, 9}, pad1);
    fp32.attrs["strata_compute_dtype"] = AString("float32");
    fp32.precision = Precision::kBf16;
    fp32.kernel_name = "dnnl";
    fp32.rtol = 1e-4;
    fp32.atol = 1e-4;
    RunOpCase(fp32);
  }
  // The matmul gradients are MatMul/Gemm nodes: the attribute reaches them the same way.
  OpCase mm{.label = "MatMul (a dense layer's dW = X^T dY) by attribute",
            .op_type = "MatMul",
            .inputs = {RandomF({128, 32}, 143), RandomF({32, 10}, 144)},
            .kernel = "dnnl"};
  RunOpCase(Policy(mm));
}

// A small classifier: Conv + Relu, global pooling, Gemm. The option reaches the kernels through SessionOptions.
std::shared_ptr<graph::Model> SmallNet() {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  graph::Graph& g = model->graph;
  g.initializers["w"] = RandomF({32, 16, 3, 3}, 140, -0.2f, 0.2f);
  g.initializers["b"] = RandomF({32}, 141);
  g.initializers["fc_w"] = RandomF({10, 32}, 142, -0.5f, 0.5f);
  g.initializers["fc_b"] = RandomF({10}, 143);
  g.nodes.push_back({.name = "conv",
                     .op_type = "Conv",
                     .inputs = {"x", "w", "b"},
                     .outputs = {"c"},
                     .attrs = {{"pads", AInts({1, 1, 1, 1})}},
                     .opset = 17});
  g.nodes.push_back({.name = "relu", .op_type = "Relu", .inputs = {"c"}, .outputs = {"r"}, .opset = 17});
  g.nodes.push_back({.name = "pool", .op_type = "GlobalAveragePool", .inputs = {"r"}, .outputs = {"p"}, .opset = 17});
  g.nodes.push_back({.name = "flat", .op_type = "Flatten", .inputs = {"p"}, .outputs = {"f"}, .opset = 17});
  g.nodes.push_back({.name = "fc",
                     .op_type = "Gemm",
                     .inputs = {"f", "fc_w", "fc_b"},
                     .outputs = {"y"},
                     .attrs = {{"transB", AInt(1)}},
                     .opset = 17});
  g.inputs = {{"x", DType::kFloat32, PartialShape::Of(Shape{4, 16, 12, 12})}};
  g.outputs = {{"y", DType::kFloat32, PartialShape::Unknown()}};
  return model;
}

TEST(DnnlBf16Test, SessionOptionSelectsBf16Kernels) {
  auto model = SmallNet();
  const Tensor x = RandomF({4, 16, 12, 12}, 150);
  std::vector<Tensor> out[2];
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    SCOPED_TRACE(std::string(graph::PrecisionName(p)));
    graph::SessionOptions o;
    if (p == Precision::kBf16) o.precision = p;  // fp32 is the default
    auto session = graph::Session::Create(model, o);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto plan = (*session)->DescribePlan({{"x", Shape{4, 16, 12, 12}}});
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if (p == Precision::kBf16 && Bf16Name() == "dnnl-bf16") {
      EXPECT_NE(plan->find("kernel=dnnl-bf16"), std::string::npos) << *plan;
    } else {
      EXPECT_EQ(plan->find("bf16"), std::string::npos) << *plan;
    }
    ASSERT_TRUE((*session)->Run({{"x", x}}, &out[p == Precision::kBf16]).ok());
  }
  ASSERT_EQ(out[0].size(), 1u);
  ASSERT_EQ(out[1].size(), 1u);
  const auto f32 = out[0][0].values<float>(), bf16 = out[1][0].values<float>();
  ASSERT_EQ(f32.size(), bf16.size());
  double max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(f32[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(f32[i]) - bf16[i]));
  }
  EXPECT_LE(max_diff, kBf16Tol * max_abs);
  // bfloat16 arithmetic rounds differently from float32: equal outputs would mean fp32 kernels ran.
  if (Bf16Name() == "dnnl-bf16") {
    EXPECT_GT(max_diff, 0.0);
  }
}

// Graph-building helpers of the model tests below: a Conv (X, W, B) and a one-input op named after its output.
void AddConv(graph::Graph& g, std::string name, std::string x, std::string w, std::string b, std::string y,
             AttributeMap a) {
  g.nodes.push_back({.name = std::move(name),
                     .op_type = "Conv",
                     .inputs = {std::move(x), std::move(w), std::move(b)},
                     .outputs = {std::move(y)},
                     .attrs = std::move(a),
                     .opset = 17});
}
void AddUnary(graph::Graph& g, std::string op, std::string x, std::string y, AttributeMap a = {}) {
  g.nodes.push_back({.name = y,
                     .op_type = std::move(op),
                     .inputs = {std::move(x)},
                     .outputs = {y},
                     .attrs = std::move(a),
                     .opset = 17});
}

// bfloat16 activations (Plan::StoreBf16): a value that only bfloat16 kernels write and read is stored in bfloat16.
// A bottleneck-like chain: c1 = relu(conv3x3(x)), c2 = relu(conv1x1(c1)), c3 = relu(conv3x3(c2) + c1) (FusedConv with
// the residual Z), y = conv1x1(c3) (the graph output). With the default passes every convolution runs channels-last.
std::shared_ptr<graph::Model> Bottleneck() {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  graph::Graph& g = model->graph;
  g.initializers["w1"] = RandomF({32, 16, 3, 3}, 160, -0.2f, 0.2f);
  g.initializers["b1"] = RandomF({32}, 161);
  g.initializers["w2"] = RandomF({32, 32, 1, 1}, 162, -0.3f, 0.3f);
  g.initializers["b2"] = RandomF({32}, 163);
  g.initializers["w3"] = RandomF({32, 32, 3, 3}, 164, -0.1f, 0.1f);
  g.initializers["b3"] = RandomF({32}, 165);
  g.initializers["w4"] = RandomF({8, 32, 1, 1}, 166, -0.3f, 0.3f);
  g.initializers["b4"] = RandomF({8}, 167);
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  AddConv(g, "conv1", "x", "w1", "b1", "p1", pad1);
  AddUnary(g, "Relu", "p1", "c1");
  AddConv(g, "conv2", "c1", "w2", "b2", "p2", {});
  AddUnary(g, "Relu", "p2", "c2");
  AddConv(g, "conv3", "c2", "w3", "b3", "p3", pad1);
  g.nodes.push_back({.name = "add", .op_type = "Add", .inputs = {"p3", "c1"}, .outputs = {"s3"}, .opset = 17});
  AddUnary(g, "Relu", "s3", "c3");
  AddConv(g, "conv4", "c3", "w4", "b4", "y", {});
  g.inputs = {{"x", DType::kFloat32, PartialShape::Of(Shape{2, 16, 10, 10})}};
  g.outputs = {{"y", DType::kFloat32, PartialShape::Unknown()}};
  return model;
}

// Runs `model` on x and returns its outputs and the plan's description.
std::vector<Tensor> RunModel(std::shared_ptr<graph::Model> model, graph::SessionOptions o, const Tensor& x,
                             std::string* plan) {
  auto session = graph::Session::Create(model, o);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  auto d = (*session)->DescribePlan({{"x", x.shape()}});
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (d.ok()) *plan = *d;
  std::vector<Tensor> out;
  Status s = (*session)->Run({{"x", x}}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// The plan's type of value `name` ("bfloat16", "float32"), as Plan::Describe writes it, or "" when not listed.
std::string PlannedType(const std::string& plan, const std::string& name) {
  const std::string key = " " + name + ":";
  const size_t at = plan.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return plan.substr(begin, plan.find('[', begin) - begin);
}

void ExpectClose(const Tensor& ref, const Tensor& got, double tol_of_max, const std::string& what) {
  const auto r = ref.values<float>(), v = got.values<float>();
  ASSERT_EQ(r.size(), v.size()) << what;
  double max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(r[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(r[i]) - v[i]));
  }
  EXPECT_LE(max_diff, tol_of_max * max_abs) << what << ": max |diff| " << max_diff << ", max |ref| " << max_abs;
}

TEST(DnnlBf16Test, Bf16ActivationsBetweenConvolutions) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the model runs float32";
  const Tensor x = RandomF({2, 16, 10, 10}, 169);
  graph::SessionOptions ref_options;
  ref_options.use_fast_kernels = false;
  std::string plan;
  const std::vector<Tensor> ref = RunModel(Bottleneck(), ref_options, x, &plan);
  graph::SessionOptions o;
  o.precision = Precision::kBf16;
  const std::vector<Tensor> out = RunModel(Bottleneck(), o, x, &plan);
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);  // the model's output stays float32
  ExpectClose(ref[0], out[0], kBf16Tol, "y");
  // Channels-last values between the convolutions: c1 (read by conv2 and as conv3's residual), c2 and c3.
  for (const char* v : {"c1__nhwc", "c2__nhwc", "c3__nhwc"})
    EXPECT_EQ(PlannedType(plan, v), "bfloat16") << v << "\n" << plan;
  EXPECT_EQ(PlannedType(plan, "y"), "float32") << plan;
  // The same plan in float32 has no bfloat16 value.
  const std::vector<Tensor> f32 = RunModel(Bottleneck(), graph::SessionOptions{}, x, &plan);
  EXPECT_EQ(plan.find("bfloat16"), std::string::npos) << plan;
}

// Without the graph passes (plain NCHW Conv nodes): p1 = conv(x) is read by a second Conv and by a MatMul, whose
// bfloat16 kernel takes float32 operands only. The plan first marks p1 bfloat16 (both readers compute in bfloat16),
// the MatMul's kernel then declines it, and p1 goes back to float32; p2 = conv(p1), read only by conv3, stays
// bfloat16.
TEST(DnnlBf16Test, Bf16ActivationsFallBackWhereAReaderDeclines) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the model runs float32";
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  graph::Graph& g = model->graph;
  g.initializers["w1"] = RandomF({32, 16, 3, 3}, 171, -0.2f, 0.2f);
  g.initializers["w2"] = RandomF({32, 32, 1, 1}, 172, -0.3f, 0.3f);
  g.initializers["w3"] = RandomF({8, 32, 3, 3}, 173, -0.1f, 0.1f);
  g.initializers["m"] = RandomF({10, 4}, 174);
  const AttributeMap pad1 = {{"pads", AInts({1, 1, 1, 1})}};
  g.nodes.push_back(
      {.name = "conv1", .op_type = "Conv", .inputs = {"x", "w1"}, .outputs = {"p1"}, .attrs = pad1, .opset = 17});
  g.nodes.push_back({.name = "conv2", .op_type = "Conv", .inputs = {"p1", "w2"}, .outputs = {"p2"}, .opset = 17});
  g.nodes.push_back({.name = "mm", .op_type = "MatMul", .inputs = {"p1", "m"}, .outputs = {"z"}, .opset = 17});
  g.nodes.push_back(
      {.name = "conv3", .op_type = "Conv", .inputs = {"p2", "w3"}, .outputs = {"y"}, .attrs = pad1, .opset = 17});
  g.inputs = {{"x", DType::kFloat32, PartialShape::Of(Shape{2, 16, 10, 10})}};
  g.outputs = {{"y", DType::kFloat32, PartialShape::Unknown()}, {"z", DType::kFloat32, PartialShape::Unknown()}};
  const Tensor x = RandomF({2, 16, 10, 10}, 175);
  graph::SessionOptions ref_options;
  ref_options.use_fast_kernels = false;
  std::string plan;
  const std::vector<Tensor> ref = RunModel(model, ref_options, x, &plan);
  graph::SessionOptions o;
  o.precision = Precision::kBf16;
  o.optimize = false;
  const std::vector<Tensor> out = RunModel(model, o, x, &plan);
  ASSERT_EQ(ref.size(), 2u);
  ASSERT_EQ(out.size(), 2u);
  ExpectClose(ref[0], out[0], kBf16Tol, "y");
  ExpectClose(ref[1], out[1], kBf16Tol, "z");
  EXPECT_EQ(PlannedType(plan, "p1"), "float32") << plan;
  EXPECT_EQ(PlannedType(plan, "p2"), "bfloat16") << plan;
  EXPECT_NE(plan.find("'mm' (MatMul) kernel=dnnl-bf16"), std::string::npos) << plan;
}

// Training (mixed_bfloat16): the channels-last batch-norm gradient's dX is the dY of a bfloat16 backward-data and a
// bfloat16 backward-weights convolution, which round it to bfloat16 on the way in; the plan has the batch-norm
// kernel write it in bfloat16 instead (ops/bf16_output.h). Both convolutions' results must be bit-equal to those of
// the same graph where dX is also a model output (then float32, each convolution converting it itself).
std::shared_ptr<graph::Model> BatchNormGradIntoConvGrads(bool dx_is_output) {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  model->opset_imports["strata"] = 1;
  graph::Graph& g = model->graph;
  const int64_t n = 2, h = 16, w = 15, c = 64, m = 32;  // conv: X [n, m, h, w] -> Y [n, c, h, w], 3x3 pad 1
  g.initializers["scale"] = RandomF({c}, 180, 0.5f, 1.5f);
  g.initializers["mean"] = RandomF({c}, 181);
  g.initializers["var"] = RandomF({c}, 182, 0.5f, 1.0f);
  g.initializers["w"] = RandomF({c, m, 3, 3}, 183, -0.2f, 0.2f);
  g.initializers["x_shape"] = T_<int64_t>({n, m, h, w}, {4});
  g.initializers["w_shape"] = T_<int64_t>({c, m, 3, 3}, {4});
  auto wrap = [](std::string op, std::vector<int64_t> nhwc, AttributeMap a) {
    a["op"] = AString(std::move(op));
    a["op_domain"] = AString("strata");
    a["nhwc_inputs"] = AInts(std::move(nhwc));
    return a;
  };
  g.nodes.push_back({.name = "bn_grad",
                     .op_type = "ChannelsLast",
                     .domain = "strata",
                     .inputs = {"dy", "y", "scale", "mean", "var"},
                     .outputs = {"dx", "dscale", "dbias"},
                     .attrs = wrap("BatchNormalizationGrad", {0, 1}, {{"training_mode", AInt(1)}}),
                     .opset = 17});
  AttributeMap conv = {{"pads", AInts({1, 1, 1, 1})}, {"strata_compute_dtype", AString("bfloat16")}};
  g.nodes.push_back({.name = "conv_data",
                     .op_type = "ChannelsLast",
                     .domain = "strata",
                     .inputs = {"dx", "w", "x_shape"},
                     .outputs = {"dx_in"},
                     .attrs = wrap("ConvBackwardData", {0}, conv),
                     .opset = 17});
  AttributeMap filter = wrap("ConvBackwardFilter", {0, 1}, conv);
  filter["nhwc_output"] = AInt(0);
  g.nodes.push_back({.name = "conv_filter",
                     .op_type = "ChannelsLast",
                     .domain = "strata",
                     .inputs = {"dx", "x", "w_shape"},
                     .outputs = {"dw", "db"},
                     .attrs = std::move(filter),
                     .opset = 17});
  g.inputs = {{"dy", DType::kFloat32, PartialShape::Of(Shape{n, h, w, c})},
              {"y", DType::kFloat32, PartialShape::Of(Shape{n, h, w, c})},
              {"x", DType::kFloat32, PartialShape::Of(Shape{n, h, w, m})}};
  for (const char* o : {"dx_in", "dw", "db", "dscale"})
    g.outputs.push_back({o, DType::kFloat32, PartialShape::Unknown()});
  if (dx_is_output) g.outputs.push_back({"dx", DType::kFloat32, PartialShape::Unknown()});
  return model;
}

TEST(DnnlBf16Test, Bf16BatchNormGradientIntoConvolutionGradients) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the convolutions run float32";
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"dy", RandomF({2, 16, 15, 64}, 184)},
      {"y", RandomF({2, 16, 15, 64}, 185)},
      {"x", RandomF({2, 16, 15, 32}, 186)}};
  graph::SessionOptions o;
  o.optimize = false;  // the graph is already what the channels-last pass writes
  std::vector<Tensor> out[2];
  std::string plan[2];
  for (bool dx_is_output : {false, true}) {
    auto session = graph::Session::Create(BatchNormGradIntoConvGrads(dx_is_output), o);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto d = (*session)->DescribePlan({{"dy", Shape{2, 16, 15, 64}}, {"y", Shape{2, 16, 15, 64}},
                                       {"x", Shape{2, 16, 15, 32}}});
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    plan[dx_is_output] = *d;
    Status s = (*session)->Run(feeds, &out[dx_is_output]);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(PlannedType(plan[0], "dx"), "bfloat16") << plan[0];
  EXPECT_EQ(PlannedType(plan[1], "dx"), "float32") << plan[1];
  for (const std::string& p : plan) {
    EXPECT_NE(p.find("'conv_data' (strata.ChannelsLast) kernel=dnnl-bf16"), std::string::npos) << p;
    EXPECT_NE(p.find("'conv_filter' (strata.ChannelsLast) kernel=dnnl-bf16"), std::string::npos) << p;
  }
  ASSERT_EQ(out[0].size(), 4u);
  ASSERT_EQ(out[1].size(), 5u);
  const char* names[] = {"dX of the convolution", "dW", "dB", "dScale"};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    ASSERT_EQ(out[0][i].shape(), out[1][i].shape());
    const auto a = out[0][i].values<float>(), b = out[1][i].values<float>();
    int differ = 0;
    for (size_t k = 0; k < a.size(); ++k) differ += a[k] != b[k];
    EXPECT_EQ(differ, 0) << "of " << a.size();
  }
}

// ---- mixed_bfloat16 training: bfloat16 activations through batch norm and Relu ----

// `t` rounded to bfloat16 (BFloat16: nearest even), as a bfloat16 tensor and widened back to float32.
Tensor ToBf16(const Tensor& t) {
  Tensor out = Tensor::Empty(DType::kBFloat16, t.shape());
  const auto v = t.values<float>();
  auto* p = static_cast<uint16_t*>(out.raw_data());
  for (size_t i = 0; i < v.size(); ++i) p[i] = BFloat16(v[i]).bits;
  return out;
}
Tensor Widened(const Tensor& b) {
  Tensor out = Tensor::Empty(DType::kFloat32, b.shape());
  const auto* p = static_cast<const uint16_t*>(b.raw_data());
  float* o = out.data<float>();
  for (int64_t i = 0; i < b.num_elements(); ++i) o[i] = static_cast<float>(BFloat16::FromBits(p[i]));
  return out;
}

AttributeMap ChannelsLastAttrs(std::string op, std::string domain, std::vector<int64_t> nhwc, AttributeMap a) {
  a["op"] = AString(std::move(op));
  a["op_domain"] = AString(std::move(domain));
  a["nhwc_inputs"] = AInts(std::move(nhwc));
  return a;
}

// A channels-last Conv node (X nhwc) with `attrs`, and a strata.ReluGrad node.
graph::Node ChannelsLastConv(std::string name, std::vector<std::string> inputs, std::string output,
                             AttributeMap attrs) {
  return {.name = std::move(name),
          .op_type = "ChannelsLast",
          .domain = "strata",
          .inputs = std::move(inputs),
          .outputs = {std::move(output)},
          .attrs = ChannelsLastAttrs("Conv", "", {0}, std::move(attrs)),
          .opset = 17};
}
graph::Node ReluGradNode(std::string name, std::string dy, std::string y, std::string dx) {
  return {.name = std::move(name),
          .op_type = "ReluGrad",
          .domain = "strata",
          .inputs = {std::move(dy), std::move(y)},
          .outputs = {std::move(dx)},
          .opset = 1};
}
// The channels-last training batch-norm gradient "bn_grad" of X with the inputs scale, mean and var; outputs dX,
// dscale and dbias.
graph::Node BatchNormGradNode(std::string dy, std::string x, std::string dx) {
  return {.name = "bn_grad",
          .op_type = "ChannelsLast",
          .domain = "strata",
          .inputs = {std::move(dy), std::move(x), "scale", "mean", "var"},
          .outputs = {std::move(dx), "dscale", "dbias"},
          .attrs = ChannelsLastAttrs("BatchNormalizationGrad", "strata", {0, 1}, {{"training_mode", AInt(1)}}),
          .opset = 17};
}

// Runs `model` (no graph passes) with the fast kernels on `feeds`; the outputs, and the plan in `*plan`.
std::vector<Tensor> RunFeeds(std::shared_ptr<graph::Model> model,
                             const std::vector<std::pair<std::string, Tensor>>& feeds, std::string* plan,
                             bool fast = true) {
  graph::SessionOptions o;
  o.optimize = false;
  o.use_fast_kernels = fast;
  auto session = graph::Session::Create(model, o);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto& [name, t] : feeds) shapes.emplace_back(name, t.shape());
  auto d = (*session)->DescribePlan(shapes);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (d.ok() && plan != nullptr) *plan = *d;
  std::vector<Tensor> out;
  Status st = (*session)->Run(feeds, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

void ExpectBitEqual(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), DType::kFloat32) << what;
  ASSERT_EQ(b.dtype(), DType::kFloat32) << what;
  const auto x = a.values<float>(), y = b.values<float>();
  int differ = 0;
  for (size_t k = 0; k < x.size(); ++k) differ += !(x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k])));
  EXPECT_EQ(differ, 0) << what << ": values differ, of " << x.size();
}

// Runs the fast kernel named `kernel` of `node` on `inputs` directly (as the plan would after Plan::StoreBf16 typed
// them): `out_types` are the output types the plan gives it.
std::vector<Tensor> RunKernel(const graph::Node& node, const std::vector<Tensor>& inputs,
                              const std::vector<DType>& out_types, std::string_view kernel,
                              const std::vector<Shape>& out_shapes = {}) {
  const ops::OpSchema* schema = ops::OpRegistry::Global().Find(node.domain, node.op_type);
  EXPECT_NE(schema, nullptr);
  if (schema == nullptr) return {};
  std::vector<ops::ValueType> in_vt, out_vt;
  std::string why;
  for (const Tensor& t : inputs) in_vt.push_back({t.dtype(), PartialShape::Of(t.shape()), nullptr});
  for (size_t i = 0; i < out_types.size(); ++i)
    out_vt.push_back(
        {out_types[i], i < out_shapes.size() ? PartialShape::Of(out_shapes[i]) : PartialShape::Unknown(), nullptr});
  for (const ops::KernelEntry& entry : schema->kernels) {
    if (entry.name != kernel) continue;
    auto k = entry.create(ops::KernelInit{node, in_vt, out_vt});
    if (!k.ok()) {  // another kernel of that name (the ChannelsLast wrappers) may take it
      why += k.status().ToString() + "; ";
      continue;
    }
    std::vector<const Tensor*> ins;
    for (const Tensor& t : inputs) ins.push_back(&t);
    const graph::ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
    graph::DynamicKernelContext ctx(node, ins, DefaultAllocator(), &none);
    Status st = (*k)->Run(ctx);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return ctx.outputs();
  }
  ADD_FAILURE() << "no " << kernel << " kernel takes " << node.Describe() << ": " << why;
  return {};
}

// bfloat16 bits of each value of `t` (float32: rounded to nearest even by BFloat16, the oracle; bfloat16: as is).
std::vector<uint16_t> Bf16Bits(const Tensor& t) {
  std::vector<uint16_t> bits(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kBFloat16) {
    std::memcpy(bits.data(), t.raw_data(), bits.size() * 2);
  } else {
    const auto v = t.values<float>();
    for (size_t i = 0; i < v.size(); ++i) bits[i] = BFloat16(v[i]).bits;
  }
  return bits;
}

// The hand-written kernels that read bfloat16 activations (channels-last training batch norm and its gradient, X;
// Relu, X; ReluGrad, Y) compute in float32 on the exactly widened values: fed a bfloat16 input, each must give bit
// for bit what it gives for the same values in float32, and the ones that write bfloat16 (batch norm Y, Relu Y) the
// float32 result rounded to nearest even.
TEST(DnnlBf16Test, KernelsReadingBf16ActivationsMatchFloat32) {
  const int64_t c = 48;
  Tensor x = RandomF({2, 9, 7, c}, 194, -2.0f, 3.0f);
  x.data<float>()[5] = 0.0f;
  x.data<float>()[6] = -0.0f;
  const Tensor xb = ToBf16(x), xw = Widened(xb);
  const Tensor dy = RandomF({2, 9, 7, c}, 195);
  const Tensor scale = RandomF({c}, 190, 0.5f, 1.5f), bias = RandomF({c}, 191), mean = RandomF({c}, 192),
               var = RandomF({c}, 193, 0.5f, 1.0f);
  const graph::Node bn{.name = "bn",
                       .op_type = "ChannelsLast",
                       .domain = "strata",
                       .inputs = {"x", "scale", "bias", "mean", "var"},
                       .outputs = {"y", "run_mean", "run_var"},
                       .attrs = ChannelsLastAttrs("BatchNormalization", "", {0}, {{"training_mode", AInt(1)}}),
                       .opset = 17};
  const graph::Node bn_grad = BatchNormGradNode("dy", "x", "dx");
  const graph::Node relu{.name = "relu", .op_type = "Relu", .inputs = {"x"}, .outputs = {"r"}, .opset = 17};
  const graph::Node relu_grad{.name = "relu_grad",
                              .op_type = "ReluGrad",
                              .domain = "strata",
                              .inputs = {"dy", "x"},
                              .outputs = {"dr"},
                              .opset = 1};
  const DType f32 = DType::kFloat32, bf16 = DType::kBFloat16;

  // Batch norm: X bfloat16 vs the widened float32 (the float32 kernel), Y float32 and bfloat16.
  const std::vector<Tensor> bn_f = RunKernel(bn, {xw, scale, bias, mean, var}, {f32, f32, f32}, "cpu");
  const std::vector<Tensor> bn_b = RunKernel(bn, {xb, scale, bias, mean, var}, {f32, f32, f32}, "cpu");
  const std::vector<Tensor> bn_bb = RunKernel(bn, {xb, scale, bias, mean, var}, {bf16, f32, f32}, "cpu");
  ASSERT_EQ(bn_f.size(), 3u);
  ASSERT_EQ(bn_b.size(), 3u);
  ASSERT_EQ(bn_bb.size(), 3u);
  for (int i = 0; i < 3; ++i) ExpectBitEqual(bn_f[i], bn_b[i], StrCat("batch norm output ", i));
  ASSERT_EQ(bn_bb[0].dtype(), bf16);
  EXPECT_EQ(Bf16Bits(bn_bb[0]), Bf16Bits(bn_f[0])) << "batch norm Y in bfloat16";
  for (int i = 1; i < 3; ++i) ExpectBitEqual(bn_f[i], bn_bb[i], StrCat("batch norm output ", i, ", Y bfloat16"));
  // ... and the float32 kernel agrees with the reference (the session without fast kernels) on the widened X.
  {
    auto model = std::make_shared<graph::Model>();
    model->opset_imports[""] = 17;
    model->opset_imports["strata"] = 1;
    model->graph.nodes = {bn, bn_grad};
    for (const auto& [n, t] :
         std::vector<std::pair<std::string, Tensor>>{{"scale", scale}, {"bias", bias}, {"mean", mean}, {"var", var}})
      model->graph.initializers[n] = t;
    model->graph.inputs = {{"x", f32, PartialShape::Unknown()}, {"dy", f32, PartialShape::Unknown()}};
    for (const char* o : {"y", "dx", "dscale", "dbias"})
      model->graph.outputs.push_back({o, f32, PartialShape::Unknown()});
    const std::vector<Tensor> ref = RunFeeds(model, {{"x", xw}, {"dy", dy}}, nullptr, /*fast=*/false);
    const std::vector<Tensor> grad = RunKernel(bn_grad, {dy, xb, scale, mean, var}, {f32, f32, f32}, "cpu");
    ASSERT_EQ(ref.size(), 4u);
    ASSERT_EQ(grad.size(), 3u);
    ExpectClose(ref[0], bn_b[0], 1e-5, "batch norm Y vs reference");
    for (int i = 0; i < 3; ++i)
      ExpectClose(ref[1 + i], grad[i], 1e-5, StrCat("batch norm gradient ", i, " vs reference"));
  }
  // Batch-norm gradient: X bfloat16 vs float32, dX float32 and bfloat16.
  const std::vector<Tensor> g_f = RunKernel(bn_grad, {dy, xw, scale, mean, var}, {f32, f32, f32}, "cpu");
  const std::vector<Tensor> g_b = RunKernel(bn_grad, {dy, xb, scale, mean, var}, {f32, f32, f32}, "cpu");
  const std::vector<Tensor> g_bb = RunKernel(bn_grad, {dy, xb, scale, mean, var}, {bf16, f32, f32}, "cpu");
  ASSERT_EQ(g_f.size(), 3u);
  ASSERT_EQ(g_b.size(), 3u);
  ASSERT_EQ(g_bb.size(), 3u);
  for (int i = 0; i < 3; ++i) ExpectBitEqual(g_f[i], g_b[i], StrCat("batch-norm gradient output ", i));
  EXPECT_EQ(Bf16Bits(g_bb[0]), Bf16Bits(g_f[0])) << "batch-norm gradient dX in bfloat16";

  // Relu, every mix of float32 and bfloat16 X and Y, against the reference arithmetic (x > 0 ? x : 0).
  std::vector<float> want(xw.num_elements());
  const auto xv = xw.values<float>();
  for (size_t i = 0; i < want.size(); ++i) want[i] = xv[i] > 0 ? xv[i] : 0.0f;
  const Tensor want_t = Tensor::FromVector(want, xw.shape());
  for (const auto& [in, out] : std::vector<std::pair<Tensor, DType>>{{xb, f32}, {xb, bf16}, {xw, bf16}}) {
    const std::vector<Tensor> r = RunKernel(relu, {in}, {out}, "cpu");
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].dtype(), out);
    if (out == f32) {
      ExpectBitEqual(want_t, r[0], "relu, X bfloat16");
    } else {
      EXPECT_EQ(Bf16Bits(r[0]), Bf16Bits(want_t)) << "relu, Y bfloat16, X " << DTypeName(in.dtype());
    }
  }
  // The float32 Relu stays oneDNN's (the hand-written kernel declines it).
  EXPECT_TRUE(RunKernel(relu, {xw}, {f32}, "dnnl", {xw.shape()}).size() == 1u);

  // ReluGrad: Y bfloat16 vs float32 (the oneDNN kernel and the reference arithmetic).
  const std::vector<Tensor> rg_b = RunKernel(relu_grad, {dy, xb}, {f32}, "cpu");
  const std::vector<Tensor> rg_f = RunKernel(relu_grad, {dy, xw}, {f32}, "dnnl", {dy.shape()});
  ASSERT_EQ(rg_b.size(), 1u);
  ASSERT_EQ(rg_f.size(), 1u);
  ExpectBitEqual(rg_f[0], rg_b[0], "relu grad, Y bfloat16");
  std::vector<float> want_g(dy.num_elements());
  const auto dv = dy.values<float>();
  for (size_t i = 0; i < want_g.size(); ++i) want_g[i] = xv[i] > 0 ? dv[i] : 0.0f;
  ExpectBitEqual(Tensor::FromVector(want_g, dy.shape()), rg_b[0], "relu grad vs the reference arithmetic");
}

// Gradients in bfloat16 (mixed_bfloat16; ops/bf16_output.h): ReluGrad (dY, Y and dX each float32 or bfloat16), the
// channels-last training batch-norm gradient (dY bfloat16) and Sum (bfloat16 operands and output) compute in
// float32 on the exactly widened values, so each must give bit for bit its float32 result on those values, and a
// bfloat16 output must be that result rounded to nearest even (BFloat16 the oracle); the bfloat16 backward-data
// convolution writes dX in bfloat16 as its float32 dX rounded.
TEST(DnnlBf16Test, KernelsTakingBf16GradientsMatchFloat32) {
  const int64_t c = 48;
  const Shape shape{2, 9, 7, c};
  Tensor x = RandomF({2, 9, 7, c}, 230, -2.0f, 3.0f);
  x.data<float>()[3] = 0.0f;
  x.data<float>()[4] = -0.0f;
  const Tensor xb = ToBf16(x), xw = Widened(xb);
  const Tensor dy = RandomF({2, 9, 7, c}, 231), dyb = ToBf16(dy), dyw = Widened(dyb);
  const DType f32 = DType::kFloat32, bf16 = DType::kBFloat16;

  // ReluGrad: every mix, against the reference arithmetic on the widened values (dX = Y > 0 ? dY : 0).
  const graph::Node relu_grad = ReluGradNode("relu_grad", "dy", "y", "dx");
  const auto xv = xw.values<float>();
  for (const Tensor* g : {&dy, &dyb}) {
    const auto gv = (g->dtype() == bf16 ? dyw : dy).values<float>();
    std::vector<float> want(gv.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = xv[i] > 0 ? gv[i] : 0.0f;
    const Tensor want_t = Tensor::FromVector(want, shape);
    for (const Tensor* y : {&xw, &xb}) {
      for (DType out : {f32, bf16}) {
        if (g->dtype() == f32 && y->dtype() == f32 && out == f32) continue;  // the oneDNN kernel's
        SCOPED_TRACE(StrCat("dY ", DTypeName(g->dtype()), ", Y ", DTypeName(y->dtype()), ", dX ", DTypeName(out)));
        const std::vector<Tensor> r = RunKernel(relu_grad, {*g, *y}, {out}, "cpu");
        ASSERT_EQ(r.size(), 1u);
        ASSERT_EQ(r[0].dtype(), out);
        if (out == f32) {
          ExpectBitEqual(want_t, r[0], "relu grad");
        } else {
          EXPECT_EQ(Bf16Bits(r[0]), Bf16Bits(want_t)) << "relu grad, dX bfloat16";
        }
      }
    }
  }

  // Batch-norm gradient: dY bfloat16 vs the widened float32 dY, X float32 or bfloat16, dX float32 or bfloat16.
  const Tensor scale = RandomF({c}, 232, 0.5f, 1.5f), mean = RandomF({c}, 233), var = RandomF({c}, 234, 0.5f, 1.0f);
  const graph::Node bn_grad = BatchNormGradNode("dy", "x", "dx");
  for (const Tensor* xs : {&xw, &xb}) {
    SCOPED_TRACE(StrCat("X ", DTypeName(xs->dtype())));
    const std::vector<Tensor> want = RunKernel(bn_grad, {dyw, *xs, scale, mean, var}, {f32, f32, f32}, "cpu");
    const std::vector<Tensor> got = RunKernel(bn_grad, {dyb, *xs, scale, mean, var}, {f32, f32, f32}, "cpu");
    const std::vector<Tensor> got_b = RunKernel(bn_grad, {dyb, *xs, scale, mean, var}, {bf16, f32, f32}, "cpu");
    ASSERT_EQ(want.size(), 3u);
    ASSERT_EQ(got.size(), 3u);
    ASSERT_EQ(got_b.size(), 3u);
    for (int i = 0; i < 3; ++i) ExpectBitEqual(want[i], got[i], StrCat("batch-norm gradient output ", i));
    ASSERT_EQ(got_b[0].dtype(), bf16);
    EXPECT_EQ(Bf16Bits(got_b[0]), Bf16Bits(want[0])) << "batch-norm gradient dX in bfloat16, dY bfloat16";
    for (int i = 1; i < 3; ++i) ExpectBitEqual(want[i], got_b[i], StrCat("batch-norm gradient output ", i));
  }

  // Sum of three: any operand bfloat16, output float32 or bfloat16, against the float32 kernel on the widened values.
  const graph::Node sum{.name = "sum", .op_type = "Sum", .inputs = {"a", "b", "c"}, .outputs = {"s"}, .opset = 13};
  const Tensor t3 = RandomF({2, 9, 7, c}, 235, -5.0f, 5.0f), t3b = ToBf16(t3), t3w = Widened(t3b);
  const std::vector<Tensor> sum_f = RunKernel(sum, {dyw, xw, t3w}, {f32}, "cpu");
  ASSERT_EQ(sum_f.size(), 1u);
  {  // the float32 kernel is the reference's order: ((a + b) + c)
    const auto a = dyw.values<float>(), b = xw.values<float>(), cc = t3w.values<float>();
    std::vector<float> want(a.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = (a[i] + b[i]) + cc[i];
    ExpectBitEqual(Tensor::FromVector(want, shape), sum_f[0], "float32 sum");
  }
  for (const auto& ins : std::vector<std::vector<Tensor>>{{dyb, xw, t3w}, {dyw, xb, t3b}, {dyb, xb, t3b}}) {
    for (DType out : {f32, bf16}) {
      SCOPED_TRACE(StrCat("operands ", DTypeName(ins[0].dtype()), " ", DTypeName(ins[1].dtype()), " ",
                          DTypeName(ins[2].dtype()), ", output ", DTypeName(out)));
      const std::vector<Tensor> r = RunKernel(sum, ins, {out}, "cpu");
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].dtype(), out);
      if (out == f32) {
        ExpectBitEqual(sum_f[0], r[0], "sum");
      } else {
        EXPECT_EQ(Bf16Bits(r[0]), Bf16Bits(sum_f[0])) << "sum, output bfloat16";
      }
    }
  }

  // Sum of two (its one-pass path), likewise.
  const graph::Node sum2{.name = "sum2", .op_type = "Sum", .inputs = {"a", "b"}, .outputs = {"s"}, .opset = 13};
  const std::vector<Tensor> sum2_f = RunKernel(sum2, {dyw, t3w}, {f32}, "cpu");
  ASSERT_EQ(sum2_f.size(), 1u);
  for (const auto& ins : std::vector<std::vector<Tensor>>{{dyb, t3w}, {dyw, t3b}, {dyb, t3b}, {dyw, t3w}}) {
    for (DType out : {f32, bf16}) {
      if (ins[0].dtype() == f32 && ins[1].dtype() == f32 && out == f32) continue;
      SCOPED_TRACE(StrCat("two operands ", DTypeName(ins[0].dtype()), " ", DTypeName(ins[1].dtype()), ", output ",
                          DTypeName(out)));
      const std::vector<Tensor> r = RunKernel(sum2, ins, {out}, "cpu");
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].dtype(), out);
      if (out == f32) {
        ExpectBitEqual(sum2_f[0], r[0], "sum of two");
      } else {
        EXPECT_EQ(Bf16Bits(r[0]), Bf16Bits(sum2_f[0])) << "sum of two, output bfloat16";
      }
    }
  }

  // Backward data (bfloat16 kernel): dX in bfloat16 is the float32 dX of the same kernel rounded to nearest even. In a
  // plan: dX read by a ReluGrad whose Y is positive everywhere is stored in bfloat16 (and comes out widened), against
  // the same node whose dX is a graph output (float32).
  if (Bf16Name() != "dnnl-bf16") return;
  for (int64_t k : {1, 3}) {
    SCOPED_TRACE(StrCat(k, "x", k));
    const int64_t m = 32;  // dY [2, 9, 7, c] -> dX [2, 9, 7, m]
    AttributeMap conv = {{"strata_compute_dtype", AString("bfloat16")}};
    if (k == 3) conv["pads"] = AInts({1, 1, 1, 1});
    std::vector<Tensor> out[2];
    std::string plan[2];
    for (int through_relu_grad : {0, 1}) {
      auto model = std::make_shared<graph::Model>();
      model->opset_imports[""] = 17;
      model->opset_imports["strata"] = 1;
      graph::Graph& g = model->graph;
      g.initializers["w"] = RandomF({c, m, k, k}, 236, -0.2f, 0.2f);
      g.initializers["x_shape"] = T_<int64_t>({2, m, 9, 7}, {4});
      g.nodes.push_back({.name = "conv_data",
                         .op_type = "ChannelsLast",
                         .domain = "strata",
                         .inputs = {"g", "w", "x_shape"},
                         .outputs = {"dx"},
                         .attrs = ChannelsLastAttrs("ConvBackwardData", "strata", {0}, conv),
                         .opset = 17});
      g.inputs = {{"g", f32, PartialShape::Unknown()}, {"pos", f32, PartialShape::Unknown()}};
      if (through_relu_grad) {
        g.nodes.push_back(ReluGradNode("relu_grad", "dx", "pos", "out"));
        g.outputs = {{"out", f32, PartialShape::Unknown()}};
      } else {
        g.outputs = {{"dx", f32, PartialShape::Unknown()}};
      }
      out[through_relu_grad] =
          RunFeeds(model, {{"g", dy}, {"pos", RandomF({2, 9, 7, m}, 237, 0.5f, 1.0f)}}, &plan[through_relu_grad]);
      ASSERT_EQ(out[through_relu_grad].size(), 1u);
    }
    EXPECT_EQ(PlannedType(plan[0], "dx"), "float32") << plan[0];
    EXPECT_EQ(PlannedType(plan[1], "dx"), "bfloat16") << plan[1];
    for (const std::string& p : plan)
      EXPECT_NE(p.find("'conv_data' (strata.ChannelsLast) kernel=dnnl-bf16"), std::string::npos) << p;
    EXPECT_EQ(Bf16Bits(out[1][0]), Bf16Bits(out[0][0])) << "backward data, dX bfloat16";
    ExpectBitEqual(Widened(ToBf16(out[0][0])), out[1][0], "backward data, dX bfloat16 widened");
  }
}

// A bottleneck's backward chain under mixed_bfloat16: a bfloat16 backward-data convolution's dX -> ReluGrad -> the
// batch-norm gradient -> a second bfloat16 backward data, whose dX and a skip gradient go into a Sum. The plan stores
// the gradients between them in bfloat16 (the backward-data outputs, ReluGrad's dX; the batch-norm gradient's dX as
// before), but the Sum's output, which a graph output reads. With `f32_values` those are also graph outputs, so they
// stay float32: both plans must agree within the bfloat16 tolerance, and with the reference kernels.
std::shared_ptr<graph::Model> BackwardChain(bool f32_values) {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  model->opset_imports["strata"] = 1;
  graph::Graph& g = model->graph;
  const int64_t n = 2, h = 10, w = 9, cin = 32, c = 48;
  g.initializers["w1"] = RandomF({cin, c, 1, 1}, 240, -0.3f, 0.3f);  // conv1: c -> cin, its dX [n, h, w, c]
  g.initializers["w2"] = RandomF({c, cin, 3, 3}, 241, -0.1f, 0.1f);  // conv2: cin -> c, its dX [n, h, w, cin]
  g.initializers["x1_shape"] = T_<int64_t>({n, c, h, w}, {4});
  g.initializers["x2_shape"] = T_<int64_t>({n, cin, h, w}, {4});
  g.initializers["scale"] = RandomF({c}, 242, 0.5f, 1.5f);
  g.initializers["mean"] = RandomF({c}, 243);
  g.initializers["var"] = RandomF({c}, 244, 0.5f, 1.0f);
  const AttributeMap conv1 = {{"strata_compute_dtype", AString("bfloat16")}};
  AttributeMap conv2 = conv1;
  conv2["pads"] = AInts({1, 1, 1, 1});
  auto data = [](std::string name, std::vector<std::string> ins, std::string out, const AttributeMap& a) {
    return graph::Node{.name = std::move(name),
                       .op_type = "ChannelsLast",
                       .domain = "strata",
                       .inputs = std::move(ins),
                       .outputs = {std::move(out)},
                       .attrs = ChannelsLastAttrs("ConvBackwardData", "strata", {0}, a),
                       .opset = 17};
  };
  g.nodes.push_back(data("conv1_data", {"g", "w1", "x1_shape"}, "da", conv1));
  g.nodes.push_back(ReluGradNode("relu_grad", "da", "a", "dz"));
  g.nodes.push_back(BatchNormGradNode("dz", "z", "dy"));
  g.nodes.push_back(data("conv2_data", {"dy", "w2", "x2_shape"}, "dx2", conv2));
  g.nodes.push_back({.name = "sum", .op_type = "Sum", .inputs = {"dx2", "skip"}, .outputs = {"total"}, .opset = 13});
  g.nodes.push_back(ReluGradNode("relu_grad2", "total", "b", "dout"));
  g.inputs = {{"g", DType::kFloat32, PartialShape::Unknown()},
              {"a", DType::kFloat32, PartialShape::Unknown()},
              {"z", DType::kFloat32, PartialShape::Unknown()},
              {"skip", DType::kFloat32, PartialShape::Unknown()},
              {"b", DType::kFloat32, PartialShape::Unknown()}};
  for (const char* o : {"dout", "dscale", "dbias"}) g.outputs.push_back({o, DType::kFloat32, PartialShape::Unknown()});
  if (f32_values)
    for (const char* o : {"da", "dz", "dy", "dx2"}) g.outputs.push_back({o, DType::kFloat32, PartialShape::Unknown()});
  return model;
}

TEST(DnnlBf16Test, Bf16GradientsThroughReluGradBatchNormGradAndSum) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the convolutions run float32";
  const int64_t n = 2, h = 10, w = 9, cin = 32, c = 48;
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"g", RandomF({n, h, w, cin}, 245)},
                                                             {"a", RandomF({n, h, w, c}, 246, -1.0f, 2.0f)},
                                                             {"z", RandomF({n, h, w, c}, 247)},
                                                             {"skip", RandomF({n, h, w, cin}, 248)},
                                                             {"b", RandomF({n, h, w, cin}, 249, -1.0f, 2.0f)}};
  std::string plan_bf16, plan_f32;
  const std::vector<Tensor> got = RunFeeds(BackwardChain(false), feeds, &plan_bf16);
  const std::vector<Tensor> f32 = RunFeeds(BackwardChain(true), feeds, &plan_f32);
  const std::vector<Tensor> ref = RunFeeds(BackwardChain(false), feeds, nullptr, /*fast=*/false);
  for (const char* v : {"da", "dz", "dy", "dx2"})
    EXPECT_EQ(PlannedType(plan_bf16, v), "bfloat16") << v << "\n" << plan_bf16;
  EXPECT_EQ(PlannedType(plan_bf16, "total"), "float32") << plan_bf16;
  for (const char* v : {"da", "dz", "dy", "dx2", "total"}) EXPECT_EQ(PlannedType(plan_f32, v), "float32") << v;
  EXPECT_NE(plan_bf16.find("'relu_grad' (strata.ReluGrad) kernel=cpu"), std::string::npos) << plan_bf16;
  EXPECT_NE(plan_bf16.find("'sum' (Sum) kernel=cpu"), std::string::npos) << plan_bf16;
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(f32.size(), 7u);
  ASSERT_EQ(ref.size(), 3u);
  const char* names[] = {"dX of the chain", "dScale", "dB"};
  for (int i = 0; i < 3; ++i) {
    ExpectClose(f32[i], got[i], kBf16Tol, names[i]);
    ExpectClose(ref[i], got[i], kBf16Tol, names[i]);
  }
}

// A training block as the channels-last pass writes it under mixed_bfloat16: conv1 -> batch norm -> Relu -> conv2
// forward, and the gradients ReluGrad -> batch-norm gradient and conv2's backward weights. The plan stores conv1's
// output y (read by the batch norm and its gradient), the batch norm's output z (read by the Relu only) and the
// Relu's output a (read by conv2, its backward weights and ReluGrad) in bfloat16. With `f32_values` those three are
// also model outputs, so they stay float32.
std::shared_ptr<graph::Model> MixedTrainingBlock(bool y_output, bool za_outputs) {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  model->opset_imports["strata"] = 1;
  graph::Graph& g = model->graph;
  const int64_t cin = 32, c = 64, cout = 48;
  g.initializers["w1"] = RandomF({c, cin, 1, 1}, 200, -0.3f, 0.3f);
  g.initializers["w2"] = RandomF({cout, c, 3, 3}, 201, -0.1f, 0.1f);
  g.initializers["w2_shape"] = T_<int64_t>({cout, c, 3, 3}, {4});
  g.initializers["scale"] = RandomF({c}, 202, 0.5f, 1.5f);
  // z = bn(y) > 0 everywhere (scale < 1.5, |normalised y| < 5 here): rounding y cannot flip the ReLU mask, whose flips
  // would move dScale and dB by whole dA values and make the closeness checks below meaningless.
  g.initializers["bias"] = RandomF({c}, 203, 7.0f, 8.0f);
  g.initializers["mean"] = RandomF({c}, 204);
  g.initializers["var"] = RandomF({c}, 205, 0.5f, 1.0f);
  const AttributeMap bf16 = {{"strata_compute_dtype", AString("bfloat16")}};
  AttributeMap conv2 = bf16;
  conv2["pads"] = AInts({1, 1, 1, 1});
  g.nodes.push_back(ChannelsLastConv("conv1", {"x", "w1"}, "y", bf16));
  g.nodes.push_back({.name = "bn",
                     .op_type = "ChannelsLast",
                     .domain = "strata",
                     .inputs = {"y", "scale", "bias", "mean", "var"},
                     .outputs = {"z", "run_mean", "run_var"},
                     .attrs = ChannelsLastAttrs("BatchNormalization", "", {0}, {{"training_mode", AInt(1)}}),
                     .opset = 17});
  g.nodes.push_back({.name = "relu", .op_type = "Relu", .inputs = {"z"}, .outputs = {"a"}, .opset = 17});
  g.nodes.push_back(ChannelsLastConv("conv2", {"a", "w2"}, "out", conv2));
  g.nodes.push_back(ReluGradNode("relu_grad", "da", "a", "dz"));
  g.nodes.push_back(BatchNormGradNode("dz", "y", "dy"));
  AttributeMap filter = ChannelsLastAttrs("ConvBackwardFilter", "strata", {0, 1}, conv2);
  filter["nhwc_output"] = AInt(0);
  g.nodes.push_back({.name = "conv2_filter",
                     .op_type = "ChannelsLast",
                     .domain = "strata",
                     .inputs = {"dout", "a", "w2_shape"},
                     .outputs = {"dw2"},
                     .attrs = std::move(filter),
                     .opset = 17});
  g.inputs = {{"x", DType::kFloat32, PartialShape::Unknown()},
              {"da", DType::kFloat32, PartialShape::Unknown()},
              {"dout", DType::kFloat32, PartialShape::Unknown()}};
  for (const char* o : {"out", "run_mean", "run_var", "dy", "dscale", "dbias", "dw2"})
    g.outputs.push_back({o, DType::kFloat32, PartialShape::Unknown()});
  if (y_output) g.outputs.push_back({"y", DType::kFloat32, PartialShape::Unknown()});
  if (za_outputs)
    for (const char* o : {"z", "a"}) g.outputs.push_back({o, DType::kFloat32, PartialShape::Unknown()});
  return model;
}

// At h x w: above 14x14 conv2's backward weights runs bfloat16 (`bf16_filter`); at most 14x14 it stays float32
// (Bf16BackwardWeightsPays) and reads the bfloat16 a through the reorder into its blocked layout, so its dW is then
// the float32 kernel's on the rounded a, within the bfloat16 tolerance of the float32 one.
void CheckMixedTrainingBlock(int64_t h, int64_t w, bool bf16_filter) {
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", RandomF({2, h, w, 32}, 206)}, {"da", RandomF({2, h, w, 64}, 207)}, {"dout", RandomF({2, h, w, 48}, 208)}};
  std::string plan_all, plan_za, plan_none;
  const std::vector<Tensor> all = RunFeeds(MixedTrainingBlock(false, false), feeds, &plan_all);
  const std::vector<Tensor> za = RunFeeds(MixedTrainingBlock(true, false), feeds, &plan_za);
  const std::vector<Tensor> none = RunFeeds(MixedTrainingBlock(true, true), feeds, &plan_none);
  const std::vector<Tensor> ref = RunFeeds(MixedTrainingBlock(false, false), feeds, nullptr, /*fast=*/false);
  for (const char* v : {"y", "z", "a"}) EXPECT_EQ(PlannedType(plan_all, v), "bfloat16") << v << "\n" << plan_all;
  for (const char* v : {"z", "a"}) EXPECT_EQ(PlannedType(plan_za, v), "bfloat16") << v << "\n" << plan_za;
  EXPECT_EQ(plan_none.find("bfloat16["), std::string::npos) << plan_none;
  for (const std::string& p : {plan_all, plan_za}) {
    EXPECT_NE(p.find("'relu' (Relu) kernel=cpu"), std::string::npos) << p;
    EXPECT_NE(p.find("'relu_grad' (strata.ReluGrad) kernel=cpu"), std::string::npos) << p;
    EXPECT_EQ(p.find("'conv2_filter' (strata.ChannelsLast) kernel=dnnl-bf16") != std::string::npos, bf16_filter) << p;
  }
  ASSERT_EQ(all.size(), 7u);
  ASSERT_EQ(za.size(), 8u);
  ASSERT_EQ(none.size(), 10u);
  ASSERT_EQ(ref.size(), 7u);
  const char* names[] = {"conv2 output", "running mean", "running var", "dY of conv1", "dScale", "dB", "dW of conv2"};
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(names[i]);
    // z and a in bfloat16: the bfloat16 convolutions round a to bfloat16 anyway and Relu commutes with that
    // rounding, so everything is bit for bit what the float32 z and a give (but a float32 dW, see above).
    if (i == 6 && !bf16_filter) {
      ExpectClose(none[i], za[i], kBf16Tol, names[i]);
    } else {
      ExpectBitEqual(none[i], za[i], names[i]);
    }
    // y in bfloat16 too (as Keras's mixed_bfloat16 stores a convolution's output): the batch statistics come from
    // the rounded y, so only bfloat16 closeness, to the float32 values and to the reference kernels.
    ExpectClose(none[i], all[i], kBf16Tol, names[i]);
    ExpectClose(ref[i], all[i], kBf16Tol, names[i]);
  }
}

TEST(DnnlBf16Test, Bf16ActivationsThroughTrainingBatchNormAndRelu) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the convolutions run float32";
  {
    SCOPED_TRACE("16x15, bfloat16 backward weights");
    CheckMixedTrainingBlock(16, 15, true);
  }
  {
    SCOPED_TRACE("12x11, float32 backward weights");
    CheckMixedTrainingBlock(12, 11, false);
  }
}

// The residual Add + Relu of a bottleneck block (strata.FusedElementwise, one oneDNN binary primitive with a relu
// post-op) with bfloat16 operands and output: oneDNN widens the operands exactly and rounds the float32 result to
// nearest even, so the output is bit for bit the float32 kernel's on the widened values, rounded (BFloat16 the
// oracle). In a plan, a block output read by bfloat16 convolutions is stored so.
TEST(DnnlBf16Test, FusedAddReluWithBf16Activations) {
  const graph::Node fe{.name = "add_relu",
                       .op_type = "FusedElementwise",
                       .domain = "strata",
                       .inputs = {"p", "q"},
                       .outputs = {"s"},
                       .attrs = {{"ops", graph::Attribute::Strings({"Add", "Relu"})}},
                       .opset = 1};
  const Shape shape{2, 7, 9, 32};
  const Tensor pb = ToBf16(RandomF({2, 7, 9, 32}, 210, -3.0f, 3.0f)), qb = ToBf16(RandomF({2, 7, 9, 32}, 211));
  const Tensor pw = Widened(pb), qw = Widened(qb);
  const DType f32 = DType::kFloat32;
  const std::vector<Tensor> want = RunKernel(fe, {pw, qw}, {f32}, "dnnl", {shape});
  ASSERT_EQ(want.size(), 1u);
  // oneDNN 2.6's binary primitive needs its output of the first operand's type (the kernel declines the other mixes,
  // and the plan then keeps those values float32); the second operand may be either.
  for (const auto& [a, b] : std::vector<std::pair<Tensor, Tensor>>{{pw, qb}, {pb, qw}, {pb, qb}}) {
    const std::vector<Tensor> r = RunKernel(fe, {a, b}, {a.dtype()}, "dnnl", {shape});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].dtype(), a.dtype());
    if (a.dtype() == f32) {
      ExpectBitEqual(want[0], r[0], "add + relu, bfloat16 second operand");
    } else {
      EXPECT_EQ(Bf16Bits(r[0]), Bf16Bits(want[0]))
          << "add + relu, bfloat16 output, second operand " << DTypeName(b.dtype());
    }
  }
  // The reference arithmetic: max(p + q, 0).
  const auto p = pw.values<float>(), q = qw.values<float>(), w = want[0].values<float>();
  int differ = 0;
  for (size_t i = 0; i < p.size(); ++i) differ += w[i] != std::max(p[i] + q[i], 0.0f);
  EXPECT_EQ(differ, 0);

  // In a plan: conv1 (bfloat16) -> add_relu(y, r) -> conv2 (bfloat16), and ReluGrad of the block output. y and the
  // block output s are stored in bfloat16; the result stays within the bfloat16 tolerance of the reference kernels.
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the convolutions run float32";
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  model->opset_imports["strata"] = 1;
  graph::Graph& g = model->graph;
  g.initializers["w1"] = RandomF({32, 16, 1, 1}, 212, -0.3f, 0.3f);
  g.initializers["w2"] = RandomF({24, 32, 1, 1}, 213, -0.3f, 0.3f);
  const AttributeMap conv = {{"strata_compute_dtype", AString("bfloat16")}};
  g.nodes.push_back(ChannelsLastConv("conv1", {"x", "w1"}, "y", conv));
  graph::Node add = fe;
  add.inputs = {"y", "r"};
  g.nodes.push_back(add);
  g.nodes.push_back(ChannelsLastConv("conv2", {"s", "w2"}, "out", conv));
  g.nodes.push_back(ReluGradNode("relu_grad", "ds", "s", "dr"));
  g.inputs = {
      {"x", f32, PartialShape::Unknown()}, {"r", f32, PartialShape::Unknown()}, {"ds", f32, PartialShape::Unknown()}};
  for (const char* o : {"out", "dr"}) g.outputs.push_back({o, f32, PartialShape::Unknown()});
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", RandomF({2, 7, 9, 16}, 214)}, {"r", RandomF({2, 7, 9, 32}, 215)}, {"ds", RandomF({2, 7, 9, 32}, 216)}};
  std::string plan;
  const std::vector<Tensor> got = RunFeeds(model, feeds, &plan);
  const std::vector<Tensor> ref = RunFeeds(model, feeds, nullptr, /*fast=*/false);
  for (const char* v : {"y", "s"}) EXPECT_EQ(PlannedType(plan, v), "bfloat16") << v << "\n" << plan;
  EXPECT_NE(plan.find("'add_relu' (strata.FusedElementwise) kernel=dnnl"), std::string::npos) << plan;
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(ref.size(), 2u);
  ExpectClose(ref[0], got[0], kBf16Tol, "conv2 output");
}

// ---- the channels-last pools under bf16 (src/ops/cpu/max_pool_nhwc.cc, global_avg_pool_nhwc.cc) ----

// A strata.ChannelsLast node wrapping `op` (X and Y [N, H, W, C]).
graph::Node ChannelsLastPoolNode(const char* op, AttributeMap attrs) {
  attrs["op"] = AString(op);
  return {.name = "pool",
          .op_type = "ChannelsLast",
          .domain = "strata",
          .inputs = {"x"},
          .outputs = {"y"},
          .attrs = std::move(attrs),
          .opset = 1};
}

// Creates the registered "cpu" kernel of `node` for X of x's type and shape and Y of type `y_type` under `precision`,
// as the plan does, and runs it on x; `name` gets Kernel::name() and `bf16` Kernel::computes_bf16().
StatusOr<Tensor> RunCpuPool(const graph::Node& node, const Tensor& x, DType y_type, Precision precision,
                            std::string* name = nullptr, bool* bf16 = nullptr) {
  const ops::OpSchema* schema = ops::OpRegistry::Global().Find("strata", "ChannelsLast");
  if (schema == nullptr) return NotFoundError("strata.ChannelsLast is not registered");
  const std::vector<ops::ValueType> in = {{x.dtype(), PartialShape::Of(x.shape()), nullptr}};
  const std::vector<ops::ValueType> out = {{y_type, PartialShape::Unknown(), nullptr}};
  for (const ops::KernelEntry& entry : schema->kernels) {
    if (entry.name != "cpu") continue;
    STRATA_ASSIGN_OR_RETURN(auto kernel,
                            entry.create(ops::KernelInit{node, in, out, graph::ConvAlgorithm::kAuto, precision}));
    if (name != nullptr) *name = std::string(kernel->name());
    if (bf16 != nullptr) *bf16 = kernel->computes_bf16();
    const graph::ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
    const std::vector<const Tensor*> inputs = {&x};  // the context keeps a reference
    graph::DynamicKernelContext ctx(node, inputs, DefaultAllocator(), &none);
    STRATA_RETURN_IF_ERROR(kernel->Run(ctx));
    return ctx.outputs()[0];
  }
  return NotFoundError("no cpu kernel for strata.ChannelsLast");
}

// The reference kernel of `node` on a float32 x.
Tensor ReferencePool(const graph::Node& node, const Tensor& x) {
  std::vector<Tensor> out;
  const graph::ValueLookup none = [](const std::string&) -> const Tensor* { return nullptr; };
  Status s = graph::RunNodeReference(node, {&x}, none, DefaultAllocator(), &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out.empty() ? Tensor() : out[0];
}

// float32 values rounded to bfloat16 (nearest even) and widened back: what a bfloat16 Y holds.
Tensor RoundedToBf16(const Tensor& f32) {
  Tensor r = Tensor::Empty(DType::kFloat32, f32.shape());
  const auto in = f32.values<float>();
  float* p = r.mutable_values<float>().data();
  for (size_t i = 0; i < in.size(); ++i) p[i] = static_cast<float>(BFloat16(in[i]));
  return r;
}

// Exact equality of float32 tensors (NaN == NaN), with the first difference.
void ExpectSameValues(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), DType::kFloat32) << what;
  EXPECT_EQ(CompareTensors(got, want, 0.0, 0.0), "") << what;
}

TEST(CpuBf16PoolTest, MaxPoolTakesBf16Exactly) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the pool stays float32";
  const AttributeMap stem = {
      {"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}};
  const AttributeMap k2 = {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}};
  const AttributeMap k3ceil = {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}};
  int seed = 200;
  // Channel counts: whole groups of four vectors (64), a group and a vector (80), a vector and a scalar tail (20),
  // scalars only (3).
  for (int64_t c : {64, 80, 20, 3}) {
    for (const AttributeMap* attrs : {&stem, &k2, &k3ceil}) {
      const graph::Node node = ChannelsLastPoolNode("MaxPool", *attrs);
      const std::string what = StrCat("C ", c, ", ",
                                      attrs == &stem ? "3x3/2 pad 1"
                                      : attrs == &k2 ? "2x2/2"
                                                     : "3x3/2 ceil");
      SCOPED_TRACE(what);
      Tensor x32 = RandomF({2, 11, 10, c}, ++seed);
      x32.mutable_values<float>()[5] = std::nanf("");  // a NaN among numbers: the maximum of the others
      const Tensor xb = Cast(x32, DType::kBFloat16);
      const Tensor want = ReferencePool(node, Cast(xb, DType::kFloat32));
      // bfloat16 X, bfloat16 Y: exactly the reference on the same (bfloat16) values.
      std::string name;
      bool bf16 = false;
      auto yb = RunCpuPool(node, xb, DType::kBFloat16, Precision::kBf16, &name, &bf16);
      ASSERT_TRUE(yb.ok()) << yb.status().ToString();
      EXPECT_EQ(name, "cpu-bf16");
      EXPECT_TRUE(bf16);
      ASSERT_EQ(yb->dtype(), DType::kBFloat16);
      ExpectSameValues(Cast(*yb, DType::kFloat32), want, "bf16 -> bf16");
      // bfloat16 X, float32 Y.
      auto yf = RunCpuPool(node, xb, DType::kFloat32, Precision::kBf16);
      ASSERT_TRUE(yf.ok()) << yf.status().ToString();
      ExpectSameValues(*yf, want, "bf16 -> f32");
      // float32 X, bfloat16 Y: the float32 maximum rounded to nearest even.
      auto yr = RunCpuPool(node, x32, DType::kBFloat16, Precision::kBf16);
      ASSERT_TRUE(yr.ok()) << yr.status().ToString();
      ASSERT_EQ(yr->dtype(), DType::kBFloat16);
      ExpectSameValues(Cast(*yr, DType::kFloat32), RoundedToBf16(ReferencePool(node, x32)), "f32 -> bf16");
    }
  }
  // Under float32 precision the kernel computes float32 only and declines bfloat16 operands.
  const graph::Node node = ChannelsLastPoolNode("MaxPool", k2);
  std::string name;
  bool bf16 = true;
  auto f32 = RunCpuPool(node, RandomF({1, 4, 4, 16}, 230), DType::kFloat32, Precision::kFp32, &name, &bf16);
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  EXPECT_EQ(name, "cpu");
  EXPECT_FALSE(bf16);
  auto declined =
      RunCpuPool(node, Cast(RandomF({1, 4, 4, 16}, 231), DType::kBFloat16), DType::kBFloat16, Precision::kFp32);
  ASSERT_FALSE(declined.ok());
  EXPECT_EQ(declined.status().code(), StatusCode::kUnimplemented) << declined.status().ToString();
}

TEST(CpuBf16PoolTest, GlobalAveragePoolReadsBf16) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the pool stays float32";
  const graph::Node node = ChannelsLastPoolNode("GlobalAveragePool", {});
  int seed = 240;
  for (int64_t c : {2048, 80, 20, 3}) {
    SCOPED_TRACE(StrCat("C ", c));
    const Tensor x32 = RandomF({3, 7, 7, c}, ++seed);
    const Tensor xb = Cast(x32, DType::kBFloat16);
    const Tensor want = ReferencePool(node, Cast(xb, DType::kFloat32));
    std::string name;
    bool bf16 = false;
    // bfloat16 X, float32 Y (what the classifier reads): float32 sums of the bfloat16 values.
    auto y = RunCpuPool(node, xb, DType::kFloat32, Precision::kBf16, &name, &bf16);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(name, "cpu-bf16");
    EXPECT_TRUE(bf16);
    ASSERT_EQ(y->shape(), Shape({3, 1, 1, c}));
    EXPECT_EQ(CompareTensors(*y, want, 1e-6, 1e-7), "");
    // float32 X (the plan's first pass, or a producer that writes float32): as the reference.
    auto y32 = RunCpuPool(node, x32, DType::kFloat32, Precision::kBf16);
    ASSERT_TRUE(y32.ok()) << y32.status().ToString();
    EXPECT_EQ(CompareTensors(*y32, ReferencePool(node, x32), 1e-6, 1e-7), "");
    // bfloat16 Y: the float32 mean rounded to nearest even.
    auto yb = RunCpuPool(node, xb, DType::kBFloat16, Precision::kBf16);
    ASSERT_TRUE(yb.ok()) << yb.status().ToString();
    ASSERT_EQ(yb->dtype(), DType::kBFloat16);
    EXPECT_EQ(CompareTensors(Cast(*yb, DType::kFloat32), RoundedToBf16(*y), 0.0, 0.0), "");
  }
  // Float32 precision leaves the node to the oneDNN kernel; planes of more than 4096 pixels are declined.
  auto f32 = RunCpuPool(node, RandomF({1, 7, 7, 16}, 250), DType::kFloat32, Precision::kFp32);
  ASSERT_FALSE(f32.ok());
  EXPECT_EQ(f32.status().code(), StatusCode::kUnimplemented) << f32.status().ToString();
  auto big = RunCpuPool(node, Cast(RandomF({1, 65, 64, 16}, 251), DType::kBFloat16), DType::kFloat32, Precision::kBf16);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("4160 pixels"), std::string::npos) << big.status().ToString();
}

// The op harness's rows under bf16 precision (float32 X and Y: what the kernels run where the plan keeps the
// values float32): inference, the reference kernel and the session executor, with the kernels named cpu-bf16.
TEST(CpuBf16PoolTest, HarnessRowsUnderBf16Precision) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the pools stay float32";
  OpCase max = ChannelsLastCase("MaxPool 3x3/2 pad 1, C 80", "MaxPool", "", {RandomF({2, 11, 10, 80}, 270)},
                                {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})},
                                 {"pads", AInts({1, 1, 1, 1})}},
                                "cpu");
  max.precision = Precision::kBf16;
  max.kernel_name = "cpu-bf16";
  max.rtol = max.atol = 0;  // the maximum is exact
  RunOpCase(max);
  OpCase gap = ChannelsLastCase("GlobalAveragePool 7x7, C 80", "GlobalAveragePool", "", {RandomF({3, 7, 7, 80}, 271)},
                                {}, "cpu");
  gap.precision = Precision::kBf16;
  gap.kernel_name = "cpu-bf16";
  gap.rtol = 1e-6;
  gap.atol = 1e-7;
  RunOpCase(gap);
}

// A ResNet-like stem and head: conv 7x7/2 + relu, max pool 3x3/2, conv 1x1 + relu, conv 3x3 + relu, global average
// pool, Flatten, Gemm. Under bf16 the stem's output (read by the max pool), the pool's output and the last
// convolution's output (read by the global pool) are stored in bfloat16.
std::shared_ptr<graph::Model> StemAndHead() {
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = 17;
  graph::Graph& g = model->graph;
  g.initializers["w1"] = RandomF({16, 3, 7, 7}, 260, -0.2f, 0.2f);
  g.initializers["b1"] = RandomF({16}, 261);
  g.initializers["w2"] = RandomF({32, 16, 1, 1}, 262, -0.3f, 0.3f);
  g.initializers["b2"] = RandomF({32}, 263);
  g.initializers["w3"] = RandomF({32, 32, 3, 3}, 264, -0.1f, 0.1f);
  g.initializers["b3"] = RandomF({32}, 265);
  g.initializers["fc_w"] = RandomF({10, 32}, 266, -0.5f, 0.5f);
  g.initializers["fc_b"] = RandomF({10}, 267);
  AddConv(g, "conv1", "x", "w1", "b1", "p1", {{"pads", AInts({3, 3, 3, 3})}, {"strides", AInts({2, 2})}});
  AddUnary(g, "Relu", "p1", "c1");
  AddUnary(g, "MaxPool", "c1", "m",
           {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})}, {"pads", AInts({1, 1, 1, 1})}});
  AddConv(g, "conv2", "m", "w2", "b2", "p2", {});
  AddUnary(g, "Relu", "p2", "c2");
  AddConv(g, "conv3", "c2", "w3", "b3", "p3", {{"pads", AInts({1, 1, 1, 1})}});
  AddUnary(g, "Relu", "p3", "c3");
  AddUnary(g, "GlobalAveragePool", "c3", "gap");
  AddUnary(g, "Flatten", "gap", "f");
  g.nodes.push_back({.name = "fc",
                     .op_type = "Gemm",
                     .inputs = {"f", "fc_w", "fc_b"},
                     .outputs = {"y"},
                     .attrs = {{"transB", AInt(1)}},
                     .opset = 17});
  g.inputs = {{"x", DType::kFloat32, PartialShape::Of(Shape{2, 3, 32, 32})}};
  g.outputs = {{"y", DType::kFloat32, PartialShape::Unknown()}};
  return model;
}

TEST(DnnlBf16Test, Bf16ActivationsThroughThePools) {
  if (Bf16Name() != "dnnl-bf16") GTEST_SKIP() << "no avx512_bf16: the model runs float32";
  const Tensor x = RandomF({2, 3, 32, 32}, 268);
  graph::SessionOptions ref_options;
  ref_options.use_fast_kernels = false;
  std::string plan;
  const std::vector<Tensor> ref = RunModel(StemAndHead(), ref_options, x, &plan);
  graph::SessionOptions o;
  o.precision = Precision::kBf16;
  const std::vector<Tensor> out = RunModel(StemAndHead(), o, x, &plan);
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(out.size(), 1u);
  ExpectClose(ref[0], out[0], kBf16Tol, "y");
  for (const char* v : {"c1__nhwc", "m__nhwc", "c2__nhwc", "c3__nhwc"})
    EXPECT_EQ(PlannedType(plan, v), "bfloat16") << v << "\n" << plan;
  EXPECT_EQ(PlannedType(plan, "gap__nhwc"), "float32") << plan;
  EXPECT_NE(plan.find("'m' (strata.ChannelsLast) kernel=cpu-bf16"), std::string::npos) << plan;
  EXPECT_NE(plan.find("'gap' (strata.ChannelsLast) kernel=cpu-bf16"), std::string::npos) << plan;
  // float32 precision: no bfloat16 value, and the pools keep their float32 kernels.
  RunModel(StemAndHead(), graph::SessionOptions{}, x, &plan);
  EXPECT_EQ(plan.find("bf16"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("bfloat16"), std::string::npos) << plan;
}

TEST(DnnlBf16Test, ParsePrecision) {
  EXPECT_EQ(graph::ParsePrecision("fp32").value(), Precision::kFp32);
  EXPECT_EQ(graph::ParsePrecision("bf16").value(), Precision::kBf16);
  EXPECT_EQ(graph::PrecisionName(Precision::kBf16), "bf16");
  EXPECT_EQ(graph::SessionOptions{}.precision, Precision::kFp32);
  auto bad = graph::ParsePrecision("fp16", "--precision");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--precision expects 'fp32' or 'bf16', got 'fp16'"), std::string::npos)
      << bad.status().message();
}

// The start-up probe of bfloat16 against float32 speed (ops/dnnl/bf16_probe.h): the warning is given exactly when
// bfloat16 ran slower, and names the rates and the way to skip the probe.
TEST(DnnlBf16Test, SlowerBf16IsWarnedAboutAndFasterIsNot) {
  const std::string slow = ops::onednn::Bf16SlowerWarning({.f32_gflops = 326, .bf16_gflops = 168}, "mixed_bfloat16");
  EXPECT_NE(slow.find("mixed_bfloat16: this CPU ran a bfloat16 matmul at 168 GFLOPS against 326 in float32 (0.52x)"),
            std::string::npos)
      << slow;
  EXPECT_NE(slow.find("likely to be slower than float32"), std::string::npos) << slow;
  EXPECT_NE(slow.find("STRATA_BF16_PROBE=0"), std::string::npos) << slow;
  EXPECT_EQ(ops::onednn::Bf16SlowerWarning({.f32_gflops = 451, .bf16_gflops = 882}, "--precision bf16"), "");
  EXPECT_EQ(ops::onednn::Bf16SlowerWarning({.f32_gflops = 300, .bf16_gflops = 300}, "--precision bf16"), "");
  EXPECT_EQ(ops::onednn::Bf16SlowerWarning({}, "--precision bf16"), "");  // no figures: nothing to say
}

TEST(DnnlBf16Test, TheProbeMeasuresBothPrecisions) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "no avx512_bf16: the probe is never run here";
  auto probe = ops::onednn::ProbeBf16Speed();
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  // A 512^3 matmul on any CPU this runs on: between 1 GFLOPS and 100 TFLOPS, in each precision.
  EXPECT_GT(probe->f32_gflops, 1);
  EXPECT_LT(probe->f32_gflops, 1e5);
  EXPECT_GT(probe->bf16_gflops, 1);
  EXPECT_LT(probe->bf16_gflops, 1e5);
}

}  // namespace
}  // namespace strata::testing
