// Gradient rows for the elementwise math, logic and activation ops: float64 inputs checked against central finite
// differences by the op harness (loss = sum(out * R) through graph autodiff, reference interpreter and Session).
#include "tests/ops/grad_test_util.h"

namespace strata::testing {
namespace {

void Unary(const char* op, Tensor x, graph::AttributeMap attrs = {}) {
  GradRow({.label = op, .op_type = op, .attrs = std::move(attrs), .inputs = {std::move(x)}});
}

TEST(GradMathTest, BinaryArithmeticBroadcastsBothWays) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GradRow({.label = "same shape", .op_type = op, .inputs = {RD({2, 3}, 1), RD({2, 3}, 2, 0.5, 2)}});
    GradRow({.label = "b broadcast", .op_type = op, .inputs = {RD({2, 3, 4}, 3), RD({3, 1}, 4, 0.5, 2)}});
    GradRow({.label = "a broadcast", .op_type = op, .inputs = {RD({1, 4}, 5), RD({3, 1, 4}, 6, 0.5, 2)}});
    GradRow({.label = "both broadcast", .op_type = op, .inputs = {RD({3, 1}, 7), RD({1, 4}, 8, 0.5, 2)}});
    GradRow({.label = "scalar", .op_type = op, .inputs = {RD({}, 9), RD({2, 2}, 10, 0.5, 2)}});
  }
  GradRow({.label = "one input differentiated",
           .op_type = "Mul",
           .inputs = {RD({2, 3}, 11), RD({3}, 12)},
           .grad_inputs = {1}});
  GradRow({.label = "same value twice", .op_type = "Mul", .inputs = {RD({4}, 13), RD({4}, 14)}});
}

TEST(GradMathTest, Pow) {
  GradRow({.label = "float exponent", .op_type = "Pow", .inputs = {RD({2, 3}, 1, 0.5, 2), RD({3}, 2, -1.5, 2)}});
  GradRow({.label = "broadcast base", .op_type = "Pow", .inputs = {RD({3, 1}, 3, 0.5, 2), RD({1, 2}, 4)}});
  GradRow({.label = "int exponent", .op_type = "Pow", .inputs = {RD({4}, 5), I64({2, 3, 1, 4}, {4})}});
}

TEST(GradMathTest, UnaryMath) {
  Unary("Abs", AwayD({2, 3}, 1));
  Unary("Neg", RD({2, 3}, 2));
  Unary("Exp", RD({2, 3}, 3));
  Unary("Log", RD({2, 3}, 4, 0.2, 3));
  Unary("Sqrt", RD({2, 3}, 5, 0.2, 3));
  Unary("Reciprocal", AwayD({2, 3}, 6));
  Unary("Erf", RD({2, 3}, 7, -2, 2));
  Unary("Sin", RD({5}, 8, -3, 3));
  Unary("Cos", RD({5}, 9, -3, 3));
  Unary("Tan", RD({5}, 10, -1.2, 1.2));
  Unary("Asin", RD({5}, 11, -0.9, 0.9));
  Unary("Acos", RD({5}, 12, -0.9, 0.9));
  Unary("Atan", RD({5}, 13, -3, 3));
  Unary("Sinh", RD({5}, 14, -2, 2));
  Unary("Cosh", RD({5}, 15, -2, 2));
  Unary("Asinh", RD({5}, 16, -3, 3));
  Unary("Acosh", RD({5}, 17, 1.2, 3));
  Unary("Atanh", RD({5}, 18, -0.9, 0.9));
}

TEST(GradMathTest, VariadicMinMaxSumMean) {
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    GradRow({.label = "one input", .op_type = op, .inputs = {RD({3}, 1)}});
    GradRow({.label = "broadcast three",
             .op_type = op,
             .inputs = {DistinctD({2, 3}, 2), DistinctD({3}, 3), DistinctD({2, 1}, 4)}});
  }
}

TEST(GradMathTest, ClipCastWhereIdentity) {
  GradRow({.label = "clip inputs",
           .op_type = "Clip",
           .inputs = {D({-2, -0.7, 0.1, 0.6, 2}, {5}), D({-0.5}, {}), D({0.5}, {})}});
  GradRow({.label = "clip max only",
           .op_type = "Clip",
           .inputs = {D({-2, -0.7, 0.1, 0.6, 2}, {5}), Tensor(), D({0.5}, {})}});
  GradRow({.label = "clip opset 6",
           .op_type = "Clip",
           .opset = 6,
           .attrs = {{"min", AFloat(-0.5f)}, {"max", AFloat(0.5f)}},
           .inputs = {D({-2, -0.7, 0.1, 0.6, 2}, {5})}});
  GradRow({.label = "cast float64 to float64", .op_type = "Cast", .attrs = {{"to", AInt(11)}}, .inputs = {RD({3}, 1)}});
  GradRow({.label = "castlike", .op_type = "CastLike", .inputs = {RD({3}, 2), D({0}, {1})}, .grad_inputs = {0}});
  GradRow({.label = "where broadcast",
           .op_type = "Where",
           .inputs = {B({true, false, true}, {3}), RD({2, 3}, 3), RD({2, 1}, 4)}});
  GradRow({.label = "identity", .op_type = "Identity", .inputs = {RD({2, 2}, 5)}});
}

TEST(GradMathTest, ModAndEinsum) {
  GradRow({.label = "fmod broadcast",
           .op_type = "Mod",
           .attrs = {{"fmod", AInt(1)}},
           .inputs = {D({3.3, -2.7, 5.2, -0.4, 1.9, 7.1}, {2, 3}), D({1.3, -0.7, 2.1}, {3})}});
  GradRow({.label = "matmul",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("ij,jk->ik")}},
           .inputs = {RD({2, 3}, 1), RD({3, 4}, 2)}});
  GradRow({.label = "implicit output, three operands",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("ab,bc,cd")}},
           .inputs = {RD({2, 3}, 3), RD({3, 2}, 4), RD({2, 2}, 5)}});
  GradRow({.label = "batched with ellipsis broadcast",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("...ij,...jk->...ik")}},
           .inputs = {RD({2, 1, 2, 3}, 6), RD({3, 3, 2}, 7)}});
  GradRow({.label = "summed label and transpose",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("ijk->ki")}},
           .inputs = {RD({2, 3, 4}, 8)}});
  GradRow({.label = "outer product with broadcast label",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("i,j->ij")}},
           .inputs = {RD({3}, 9), RD({4}, 10)}});
  GradRow({.label = "diagonal of another operand",
           .op_type = "Einsum",
           .attrs = {{"equation", AString("ii,i->i")}},
           .inputs = {RD({3, 3}, 11), RD({3}, 12)},
           .grad_inputs = {1}});
}

TEST(GradMathTest, Activations) {
  Unary("Relu", AwayD({3, 4}, 1));
  Unary("LeakyRelu", AwayD({3, 4}, 2), {{"alpha", AFloat(0.2f)}});
  Unary("Elu", AwayD({3, 4}, 3), {{"alpha", AFloat(1.5f)}});
  Unary("Selu", AwayD({3, 4}, 4));
  Unary("Celu", AwayD({3, 4}, 5), {{"alpha", AFloat(2)}});
  Unary("Sigmoid", RD({3, 4}, 6, -4, 4));
  Unary("Tanh", RD({3, 4}, 7, -2, 2));
  Unary("Softplus", RD({3, 4}, 8, -4, 4));
  Unary("Softsign", AwayD({3, 4}, 9));
  Unary("Mish", RD({3, 4}, 10, -3, 3));
  Unary("Gelu", RD({3, 4}, 11, -3, 3));
  Unary("Gelu", RD({3, 4}, 12, -3, 3), {{"approximate", AString("tanh")}});
  Unary("HardSigmoid", D({-4, -1, 0.3, 1.2, 4}, {5}), {{"alpha", AFloat(0.3f)}, {"beta", AFloat(0.4f)}});
  Unary("HardSwish", D({-4, -2, -0.5, 0.7, 2.5, 4}, {6}));
  Unary("ThresholdedRelu", D({-1, 0.5, 1.5, 3}, {4}));
  Unary("Shrink", D({-1, -0.2, 0.3, 1.5}, {4}), {{"lambd", AFloat(0.4f)}, {"bias", AFloat(0.1f)}});
  GradRow({.label = "prelu broadcast slope", .op_type = "PRelu", .inputs = {AwayD({2, 3, 4}, 13), RD({3, 1}, 14)}});
  GradRow({.label = "prelu scalar slope", .op_type = "PRelu", .inputs = {AwayD({2, 3}, 15), RD({1}, 16)}});
  GradRow({.label = "prelu opset 6 per channel",
           .op_type = "PRelu",
           .opset = 6,
           .inputs = {AwayD({2, 3, 2}, 17), RD({3}, 18)}});
}

}  // namespace
}  // namespace strata::testing
