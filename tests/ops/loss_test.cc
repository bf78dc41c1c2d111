// Table rows for the loss family (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). Expected values come from the
// numpy reference functions the ONNX backend tests were generated with (onnx/backend/test/case/node/
// negativeloglikelihoodloss.py, softmaxcrossentropy.py) on the same data.
#include <cmath>
#include <limits>

#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// [3, 5] scores ((i*7) % 13 - 6) * 0.5, targets [1, 0, 4], class weights.
Tensor X() { return F({-3, 0.5f, -2.5f, 1, -2, 1.5f, -1.5f, 2, -1, 2.5f, -0.5f, 3, 0, -3, 0.5f}, {3, 5}); }
Tensor Target() { return I64({1, 0, 4}, {3}); }
Tensor Weight() { return F({1, 2, 0.5f, 1.5f, 3}, {5}); }
// [2, 3, 2, 2] scores ((i*7) % 13 - 6) * 0.25 and [2, 2, 2] targets with one -1.
Tensor X4() {
  return F({-1.5f, 0.25f, -1.25f, 0.5f, -1, 0.75f, -0.75f, 1, -0.5f, 1.25f, -0.25f, 1.5f,
            0, -1.5f, 0.25f, -1.25f, 0.5f, -1, 0.75f, -0.75f, 1, -0.5f, 1.25f, -0.25f}, {2, 3, 2, 2});
}
Tensor Target4() { return I64({0, 2, 1, 1, 2, 0, -1, 1}, {2, 2, 2}); }

graph::AttributeMap Red(const char* r) { return {{"reduction", AString(r)}}; }
graph::AttributeMap RedIgnore(const char* r, int64_t ii) {
  return {{"reduction", AString(r)}, {"ignore_index", AInt(ii)}};
}

TEST(NllLossTest, ReductionsWeightsIgnoreIndex) {
  const char* op = "NegativeLogLikelihoodLoss";
  RunOpCase({.label = "none", .op_type = op, .attrs = Red("none"), .inputs = {X(), Target()},
             .expected = {F({-0.5f, -1.5f, -0.5f}, {3})}});
  RunOpCase({.label = "sum", .op_type = op, .attrs = Red("sum"), .inputs = {X(), Target()},
             .expected = {F({-2.5f}, {})}});
  RunOpCase({.label = "mean (default)", .op_type = op, .inputs = {X(), Target()},
             .expected = {F({-0.8333333134651184f}, {})}});
  RunOpCase({.label = "weight none", .op_type = op, .attrs = Red("none"), .inputs = {X(), Target(), Weight()},
             .expected = {F({-1, -1.5f, -1.5f}, {3})}});
  RunOpCase({.label = "weight sum", .op_type = op, .attrs = Red("sum"), .inputs = {X(), Target(), Weight()},
             .expected = {F({-4}, {})}});
  RunOpCase({.label = "weight mean divides by weight sum", .op_type = op, .inputs = {X(), Target(), Weight()},
             .expected = {F({-0.6666666865348816f}, {})}});
  RunOpCase({.label = "ignore_index none", .op_type = op, .attrs = RedIgnore("none", 0), .inputs = {X(), Target()},
             .expected = {F({-0.5f, 0, -0.5f}, {3})}});
  RunOpCase({.label = "ignore_index mean counts the rest", .op_type = op, .attrs = RedIgnore("mean", 0),
             .inputs = {X(), Target()}, .expected = {F({-0.5f}, {})}});
  RunOpCase({.label = "weight + ignore_index mean", .op_type = op, .attrs = RedIgnore("mean", 4),
             .inputs = {X(), Target(), Weight()}, .expected = {F({-0.8333333134651184f}, {})}});
  RunOpCase({.label = "N,C,d1,d2 negative ignore_index", .op_type = op, .attrs = RedIgnore("none", -1),
             .inputs = {X4(), Target4()}, .expected = {F({1.5f, -1.25f, 0.75f, -1, -1, 1.5f, 0, 0.75f}, {2, 2, 2})}});
  RunOpCase({.label = "N,C,d1,d2 mean", .op_type = op, .attrs = RedIgnore("mean", -1), .inputs = {X4(), Target4()},
             .expected = {F({0.1785714328289032f}, {})}});
  RunOpCase({.label = "int32 target, float64", .op_type = op, .attrs = Red("sum"),
             .inputs = {Cast(X(), DType::kFloat64), I32({1, 0, 4}, {3})}, .expected = {D({-2.5}, {})}});
  RunOpCase({.label = "float16", .op_type = op, .attrs = Red("none"), .inputs = {Cast(X(), DType::kFloat16), Target()},
             .expected = {Cast(F({-0.5f, -1.5f, -0.5f}, {3}), DType::kFloat16)}});
  RunOpCase({.label = "everything ignored: mean is NaN", .op_type = op, .attrs = RedIgnore("mean", 1),
             .inputs = {X(), I64({1, 1, 1}, {3})}, .expected = {F({kNan}, {})}});
  RunOpCase({.label = "empty batch none", .op_type = op, .attrs = Red("none"), .inputs = {F({}, {0, 5}), I64({}, {0})},
             .expected = {F({}, {0})}});
}

TEST(NllLossTest, Errors) {
  const char* op = "NegativeLogLikelihoodLoss";
  RunOpCase({.label = "target out of range", .op_type = op, .inputs = {X(), I64({1, 5, 0}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "outside [0, 5)"});
  RunOpCase({.label = "negative target without ignore_index", .op_type = op, .inputs = {X(), I64({1, -1, 0}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "target value -1"});
  RunOpCase({.label = "target shape", .op_type = op, .inputs = {X(), I64({1, 0}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "does not match input shape"});
  RunOpCase({.label = "weight shape", .op_type = op, .inputs = {X(), Target(), F({1, 2}, {2})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "weight"});
  RunOpCase({.label = "bad reduction", .op_type = op, .attrs = Red("max"), .inputs = {X(), Target()},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "'none', 'sum' or 'mean'"});
  RunOpCase({.label = "float target", .op_type = op, .inputs = {X(), F({1, 0, 4}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "int32 or int64"});
  RunOpCase({.label = "rank 1 input", .op_type = op, .inputs = {F({1, 2}, {2}), I64({0}, {})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "[N, C, d1, ...]"});
}

TEST(SceLossTest, ReductionsWeightsLogProb) {
  const char* op = "SoftmaxCrossEntropyLoss";
  RunOpCase({.label = "none", .op_type = op, .attrs = Red("none"), .inputs = {X(), Target()},
             .expected = {F({1.0334657430648804f, 1.7045435905456543f, 2.6523330211639404f}, {3})}});
  RunOpCase({.label = "sum", .op_type = op, .attrs = Red("sum"), .inputs = {X(), Target()},
             .expected = {F({5.390342712402344f}, {})}});
  RunOpCase({.label = "mean (default)", .op_type = op, .inputs = {X(), Target()},
             .expected = {F({1.7967809438705444f}, {})}});
  RunOpCase({.label = "weights none", .op_type = op, .attrs = Red("none"), .inputs = {X(), Target(), Weight()},
             .expected = {F({2.0669314861297607f, 1.7045435905456543f, 7.956998825073242f}, {3})}});
  RunOpCase({.label = "weights mean", .op_type = op, .inputs = {X(), Target(), Weight()},
             .expected = {F({1.9547456502914429f}, {})}});
  RunOpCase({.label = "weights, ignore_index, log_prob", .op_type = op, .attrs = RedIgnore("mean", 0),
             .inputs = {X(), Target(), Weight()}, .num_outputs = 2,
             .expected = {F({2.0047860145568848f}, {}),
                          F({-4.53346586227417f, -1.0334657430648804f, -4.03346586227417f, -0.5334657430648804f,
                             -3.53346586227417f, -1.7045435905456543f, -4.704543590545654f, -1.2045434713363647f,
                             -4.204543590545654f, -0.7045434713363647f, -3.6523332595825195f, -0.15233318507671356f,
                             -3.1523332595825195f, -6.1523332595825195f, -2.6523330211639404f}, {3, 5})}});
  const float a = -1.680269718170166f, b = -1.1802695989608765f, c = -0.6802696585655212f;
  RunOpCase({.label = "N,C,d1,d2 sum with log_prob", .op_type = op, .attrs = RedIgnore("sum", -1),
             .inputs = {X4(), Target4()}, .num_outputs = 2,
             .expected = {F({8.26188850402832f}, {}),
                          F({a, a, a, a, b, b, b, b, c, c, c, c, a, a, a, a, b, b, b, b, c, c, c, c}, {2, 3, 2, 2})}});
  RunOpCase({.label = "float64", .op_type = op, .attrs = Red("sum"), .inputs = {Cast(X(), DType::kFloat64), Target()},
             .expected = {D({5.390342712402344}, {})}, .rtol = 1e-6});
  RunOpCase({.label = "large scores stay finite", .op_type = op, .attrs = Red("none"),
             .inputs = {F({1000, 0, -1000, 1000}, {2, 2}), I64({0, 0}, {2})}, .expected = {F({0, 2000}, {2})}});
  RunOpCase({.label = "labels out of range", .op_type = op, .inputs = {X(), I64({7, 0, 0}, {3})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "outside [0, 5)"});
  RunOpCase({.label = "weight dtype", .op_type = op, .inputs = {X(), Target(), D({1, 1, 1, 1, 1}, {5})},
             .expect_error = StatusCode::kInvalidArgument, .error_substr = "element type"});
}

}  // namespace
}  // namespace strata::testing
