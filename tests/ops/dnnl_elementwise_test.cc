// oneDNN eltwise and binary kernels against the reference kernels.
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

TEST(DnnlBinaryTest, BroadcastingBothWays) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    RunOpCase({.label = "same shape", .op_type = op, .inputs = {RandomF({2, 3, 17}, 1), RandomF({2, 3, 17}, 2, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase({.label = "row broadcast", .op_type = op, .inputs = {RandomF({4, 33}, 3), RandomF({33}, 4, 0.5f, 2)},
               .kernel = "dnnl"});
    RunOpCase({.label = "scalar right", .op_type = op, .inputs = {RandomF({5, 7}, 5), F({1.5f}, {})}, .kernel = "dnnl"});
    RunOpCase({.label = "constant channel bias", .op_type = op,
               .inputs = {RandomF({2, 3, 4, 5}, 6), RandomF({3, 1, 1}, 7, 0.5f, 2)}, .constant_inputs = {1},
               .kernel = "dnnl"});
    RunOpCase({.label = "rank 5 broadcast", .op_type = op,
               .inputs = {RandomF({2, 4, 3, 1, 5}, 8), RandomF({1, 4, 1, 6, 1}, 9, 0.5f, 2)}});
  }
  // Commutative ops swap a broadcast first operand in; Sub/Div decline it.
  RunOpCase({.label = "broadcast first, Add", .op_type = "Add", .inputs = {RandomF({7}, 10), RandomF({3, 7}, 11)},
             .kernel = "dnnl"});
  RunOpCase({.label = "broadcast first, Mul", .op_type = "Mul", .inputs = {F({2}, {}), RandomF({3, 7}, 11)},
             .kernel = "dnnl"});
  RunOpCase({.label = "broadcast first, Sub", .op_type = "Sub", .inputs = {RandomF({7}, 10), RandomF({3, 7}, 11)},
             .kernel = "dnnl", .expect_decline = true});
  RunOpCase({.label = "int64 declines", .op_type = "Add", .inputs = {I64({1, 2}, {2}), I64({3, 4}, {2})},
             .kernel = "dnnl", .expect_decline = true});
  RunOpCase({.label = "zero-size declines", .op_type = "Add", .inputs = {F({}, {0, 3}), F({1, 2, 3}, {3})},
             .kernel = "dnnl", .expect_decline = true});
}

TEST(DnnlEltwiseTest, Relu) {
  RunOpCase({.label = "relu", .op_type = "Relu", .inputs = {RandomF({3, 67}, 1)}, .kernel = "dnnl"});
  RunOpCase({.label = "relu scalar", .op_type = "Relu", .inputs = {F({-2}, {})}, .expected = {F({0}, {})},
             .kernel = "dnnl"});
  RunOpCase({.label = "relu float64 declines", .op_type = "Relu", .inputs = {D({-1, 1}, {2})}, .kernel = "dnnl",
             .expect_decline = true});
}

}  // namespace
}  // namespace strata::testing
