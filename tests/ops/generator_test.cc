// Table rows for the generator ops: ConstantOfShape, Range, the random ops (RandomUniform/Normal(Like), Bernoulli,
// Multinomial) and Dropout. Seeded random ops draw numpy's legacy RandomState stream (random_util.h), so their
// expected values come from numpy with the same seed; unseeded ones are checked for shape, range and variety.
#include <cmath>
#include <set>

#include "graph/interpreter.h"
#include "tests/ops/op_harness.h"


namespace strata::testing {
namespace {

TEST(ConstantOfShapeTest, ValuesAndShapes) {
  RunOpCase({.label = "default float 0", .op_type = "ConstantOfShape", .inputs = {I64({2, 3}, {2})},
             .expected = {F({0, 0, 0, 0, 0, 0}, {2, 3})}, .constant_inputs = {0}});
  RunOpCase({.label = "int64 value, run-time shape", .op_type = "ConstantOfShape",
             .attrs = {{"value", graph::Attribute::TensorValue(I64({7}, {1}))}}, .inputs = {I64({3}, {1})},
             .expected = {I64({7, 7, 7}, {3})}});
  RunOpCase({.label = "empty shape is a scalar", .op_type = "ConstantOfShape",
             .attrs = {{"value", graph::Attribute::TensorValue(B({true}, {1}))}}, .inputs = {I64({}, {0})},
             .expected = {B({true}, {})}});
  RunOpCase({.label = "zero dim", .op_type = "ConstantOfShape", .inputs = {I64({2, 0}, {2})},
             .expected = {F({}, {2, 0})}});
  RunOpCase({.label = "negative dim", .op_type = "ConstantOfShape", .inputs = {I64({2, -1}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "negative dimension -1"});
  RunOpCase({.label = "too large", .op_type = "ConstantOfShape", .inputs = {I64({1 << 30, 1 << 30, 1 << 30}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "too many elements"});
}

TEST(RangeTest, TypesSignsAndErrors) {
  RunOpCase({.label = "float", .op_type = "Range", .inputs = {F({1}, {}), F({5}, {}), F({1.5f}, {})},
             .expected = {F({1, 2.5, 4}, {3})}, .constant_inputs = {0, 1, 2}});
  RunOpCase({.label = "int32 negative delta", .op_type = "Range",
             .inputs = {I32({10}, {}), I32({6}, {}), I32({-3}, {})},
             .expected = {I32({10, 7}, {2})}});
  RunOpCase({.label = "empty", .op_type = "Range", .inputs = {I64({5}, {}), I64({1}, {}), I64({2}, {})},
             .expected = {I64({}, {0})}, .constant_inputs = {0, 1, 2}});
  RunOpCase({.label = "int64 extremes", .op_type = "Range",
             .inputs = {I64({-(int64_t{1} << 62)}, {}), I64({int64_t{1} << 62}, {}), I64({int64_t{3} << 60}, {})},
             .expected = {I64({-(int64_t{1} << 62), -(int64_t{1} << 60), int64_t{1} << 61}, {3})}});
  RunOpCase({.label = "double", .op_type = "Range", .inputs = {D({0}, {}), D({1}, {}), D({0.25}, {})},
             .expected = {D({0, 0.25, 0.5, 0.75}, {4})}});
  RunOpCase({.label = "int16", .op_type = "Range", .inputs = {T_<int16_t>({-30000}, {}), T_<int16_t>({30000}, {}),
             T_<int16_t>({20000}, {})}, .expected = {T_<int16_t>({-30000, -10000, 10000}, {3})}});
  RunOpCase({.label = "delta 0", .op_type = "Range", .inputs = {F({0}, {}), F({1}, {}), F({0}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "delta must not be 0"});
  RunOpCase({.label = "mixed types", .op_type = "Range", .inputs = {F({0}, {}), I64({1}, {}), F({1}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "same element type"});
  RunOpCase({.label = "too many", .op_type = "Range", .inputs = {F({0}, {}), F({1e30f}, {}), F({1}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "too large"});
}

TEST(RandomTest, SeededOpsMatchNumpy) {
  RunOpCase({.label = "uniform", .op_type = "RandomUniform",
             .attrs = {{"shape", AInts({2, 3})}, {"low", AFloat(-2)}, {"high", AFloat(3)}, {"seed", AFloat(5)}},
             .expected = {F({-0.890034139, 2.35366154, -0.9664042, 2.59305453, 0.442055941, 1.05871928}, {2, 3})}});
  RunOpCase({.label = "uniform double", .op_type = "RandomUniform",
             .attrs = {{"shape", AInts({4})}, {"dtype", AInt(11)}, {"seed", AFloat(0)}},
             .expected = {D({0.54881350392732475, 0.71518936637241948, 0.60276337607164387, 0.54488318299689686}, {4})},
             .rtol = 0, .atol = 0});
  RunOpCase({.label = "normal", .op_type = "RandomNormal",
             .attrs = {{"shape", AInts({5})}, {"mean", AFloat(1)}, {"scale", AFloat(2)}, {"seed", AFloat(3)}},
             .expected = {F({4.57725716, 1.8730197, 1.19299495, -2.72698545, 0.4452236}, {5})}});
  RunOpCase({.label = "normal like, dtype from input", .op_type = "RandomNormalLike", .attrs = {{"seed", AFloat(1)}},
             .inputs = {D({0, 0, 0}, {3})},
             .expected = {D({1.6243453636632417, -0.61175641365007538, -0.5281717522634557}, {3})}, .rtol = 1e-15});
  RunOpCase({.label = "uniform like, dtype attribute", .op_type = "RandomUniformLike",
             .attrs = {{"seed", AFloat(2)}, {"dtype", AInt(1)}}, .inputs = {I32({0, 0, 0, 0}, {2, 2})},
             .expected = {F({0.435994893, 0.0259262323, 0.549662471, 0.435322404}, {2, 2})}});
  RunOpCase({.label = "bernoulli", .op_type = "Bernoulli", .attrs = {{"seed", AFloat(4)}},
             .inputs = {F({0.1f, 0.9f, 0.5f, 0.5f, 0, 1}, {6})},
             .expected = {F({0, 1, 0, 0, 0, 1}, {6})}});
  RunOpCase({.label = "bernoulli to int64", .op_type = "Bernoulli", .attrs = {{"seed", AFloat(4)}, {"dtype", AInt(7)}},
             .inputs = {D({0.1, 0.9, 0.5}, {3})}, .expected = {I64({0, 1, 0}, {3})}});
  RunOpCase({.label = "multinomial", .op_type = "Multinomial", .attrs = {{"seed", AFloat(9)}, {"sample_size", AInt(5)}},
             .inputs = {F({0, 1, 2, 3, 1, 0}, {2, 3})},
             .expected = {I32({0, 2, 2, 1, 1, 0, 0, 0, 0, 0}, {2, 5})}});
}

TEST(RandomTest, Errors) {
  RunOpCase({.label = "integer dtype", .op_type = "RandomUniform", .attrs = {{"shape", AInts({2})}, {"dtype", AInt(7)}},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
  RunOpCase({.label = "no shape", .op_type = "RandomNormal", .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "shape"});
  RunOpCase({.label = "probability above 1", .op_type = "Bernoulli", .attrs = {{"seed", AFloat(1)}},
             .inputs = {F({0.5f, 1.5f}, {2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "probability 1.5 at element 1 is outside [0, 1]"});
  RunOpCase({.label = "huge sample_size", .op_type = "Multinomial", .attrs = {{"sample_size", AInt(int64_t{1} << 60)}},
             .inputs = {F({0, 1, 0, 1}, {2, 2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "too many elements"});
  RunOpCase({.label = "multinomial dtype", .op_type = "Multinomial", .attrs = {{"dtype", AInt(1)}},
             .inputs = {F({0, 1}, {1, 2})}, .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "int32 (6) or int64 (7)"});
}

// Runs one unseeded random node twice with the reference interpreter.
std::vector<Tensor> RunTwice(const std::string& op, graph::AttributeMap attrs, std::vector<Tensor> inputs) {
  graph::Model m;
  m.opset_imports[""] = 17;
  graph::Node n;
  n.op_type = op;
  n.opset = 17;
  n.attrs = std::move(attrs);
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    n.inputs.push_back(StrCat("in", i));
    m.graph.inputs.push_back({StrCat("in", i), inputs[i].dtype(), PartialShape::Of(inputs[i].shape())});
    feeds.emplace_back(StrCat("in", i), inputs[i]);
  }
  n.outputs = {"out"};
  m.graph.outputs.push_back({"out", DType::kUndefined, PartialShape::Unknown()});
  m.graph.nodes.push_back(n);
  std::vector<Tensor> a, b;
  EXPECT_TRUE(graph::RunReference(m, feeds, &a).ok());
  EXPECT_TRUE(graph::RunReference(m, feeds, &b).ok());
  if (a.size() != 1 || b.size() != 1) return {};
  return {a[0], b[0]};
}

TEST(RandomTest, UnseededOpsVaryAndStayInRange) {
  auto u = RunTwice("RandomUniform", {{"shape", AInts({1000})}, {"low", AFloat(2)}, {"high", AFloat(4)}}, {});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].shape(), Shape({1000}));
  double sum = 0;
  for (float v : u[0].values<float>()) {
    EXPECT_GE(v, 2.0f);
    EXPECT_LT(v, 4.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 3.0, 0.1);
  EXPECT_NE(CompareTensors(u[0], u[1], 0, 0), "") << "two unseeded runs drew the same values";
  auto n = RunTwice("RandomNormalLike", {}, {Tensor::Zeros(DType::kFloat32, Shape{2000})});
  ASSERT_EQ(n.size(), 2u);
  double mean = 0, sq = 0;
  for (float v : n[0].values<float>()) {
    mean += v;
    sq += static_cast<double>(v) * v;
  }
  mean /= 2000;
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(sq / 2000 - mean * mean, 1.0, 0.15);
  auto m = RunTwice("Multinomial", {{"sample_size", AInt(200)}, {"dtype", AInt(7)}}, {F({0, -100, 0}, {1, 3})});
  ASSERT_EQ(m.size(), 2u);
  std::set<int64_t> seen(m[0].values<int64_t>().begin(), m[0].values<int64_t>().end());
  EXPECT_EQ(seen, (std::set<int64_t>{0, 2})) << "class 1 has probability ~e^-100";
}

TEST(DropoutTest, InferenceAndTrainingModes) {
  RunOpCase({.label = "opset 13 inference with mask", .op_type = "Dropout", .inputs = {F({-1, 0, 1}, {3})},
             .num_outputs = 2,
             .expected = {F({-1, 0, 1}, {3}), B({true, true, true}, {3})}});
  RunOpCase({.label = "opset 7 mask of the input type", .op_type = "Dropout", .opset = 7,
             .attrs = {{"ratio", AFloat(0.3f)}},
             .inputs = {D({2, 3}, {2})}, .num_outputs = 2, .expected = {D({2, 3}, {2}), D({1, 1}, {2})}});
  RunOpCase({.label = "ratio without training", .op_type = "Dropout", .opset = 12,
             .inputs = {F({1.69052565, -0.465937376, 0.0328201652, 0.407516271, -0.788923025, 0.00206557289,
             -0.000890385883, -1.75472426, 1.017658, 0.600498497, -0.625428975, -0.171548262}, {3, 4}), F({0.9f},
                 {})}, .expected = {F({1.69052565, -0.465937376, 0.0328201652, 0.407516271, -0.788923025,
                     0.00206557289, -0.000890385883, -1.75472426, 1.017658, 0.600498497, -0.625428975, -0.171548262},
                         {3, 4})}});
  RunOpCase({.label = "training, seed 0, ratio 0.75", .op_type = "Dropout", .attrs = {{"seed", AInt(0)}},
             .inputs = {F({1.69052565, -0.465937376, 0.0328201652, 0.407516271, -0.788923025, 0.00206557289,
             -0.000890385883, -1.75472426, 1.017658, 0.600498497, -0.625428975, -0.171548262}, {3, 4}), F({0.75f},
                 {}), B({true}, {})}, .num_outputs = 2,
             .expected = {F({0, -0, 0, 0, -0, 0, -0, -7.01889706, 4.07063198, 0, -2.5017159, -0},
             {3, 4}), B({false, false, false, false, false, false, false, true, true, false, true, false}, {3, 4})}});
  RunOpCase({.label = "training, default ratio 0.5, seed 3", .op_type = "Dropout", .attrs = {{"seed", AInt(3)}},
             .inputs = {F({1.69052565, -0.465937376, 0.0328201652, 0.407516271, -0.788923025, 0.00206557289,
             -0.000890385883, -1.75472426, 1.017658, 0.600498497, -0.625428975, -0.171548262},
                 {3, 4}), Tensor(), B({true}, {})},
                     .expected = {F({3.3810513, -0.931874752, 0, 0.815032542, -1.57784605, 0.00413114578, -0, -0, 0,
                     0, -0, -0}, {3, 4})}});
  RunOpCase({.label = "training, ratio 0", .op_type = "Dropout", .inputs = {F({1, 2}, {2}), D({0}, {}), B({true}, {})},
             .num_outputs = 2, .expected = {F({1, 2}, {2}), B({true, true}, {2})}});
  RunOpCase({.label = "ratio 1", .op_type = "Dropout", .inputs = {F({1, 2}, {2}), F({1}, {}), B({true}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "ratio must be in [0, 1)"});
  RunOpCase({.label = "integer input", .op_type = "Dropout", .inputs = {I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "must be a float type"});
}

}  // namespace
}  // namespace strata::testing
