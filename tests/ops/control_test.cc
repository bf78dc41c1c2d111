// Table rows for the control-flow ops If, Loop and Scan, plus whole-model checks of what subgraphs need from the
// executor: outer-scope reads (at any depth, and body outputs that name an outer value), their liveness in the memory
// plan, dead-code elimination, topological sorting, body verification and body type inference. Expected values are
// worked out by hand from the ONNX spec's pseudo-code.
#include "graph/infer.h"
#include "graph/passes/passes.h"
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Node;
using graph::ValueInfo;

Node N(std::string op, std::vector<std::string> in, std::vector<std::string> out, graph::AttributeMap attrs = {}) {
  Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  n.opset = 17;
  return n;
}

ValueInfo V(std::string name, DType dt = DType::kUndefined, PartialShape s = PartialShape::Unknown()) {
  return {std::move(name), dt, std::move(s), ""};
}
ValueInfo V(std::string name, DType dt, Shape s) { return V(std::move(name), dt, PartialShape::Of(s)); }

std::shared_ptr<Graph> G(std::vector<ValueInfo> inputs, std::vector<Node> nodes, std::vector<ValueInfo> outputs,
                         std::map<std::string, Tensor> initializers = {}) {
  auto g = std::make_shared<Graph>();
  g->name = "body";
  g->inputs = std::move(inputs);
  g->nodes = std::move(nodes);
  g->outputs = std::move(outputs);
  g->initializers = std::move(initializers);
  return g;
}

Attribute AGraph(std::shared_ptr<Graph> g) { return Attribute::GraphValue(std::move(g)); }
Node Const(std::string out, Tensor v) {
  return N("Constant", {}, {std::move(out)}, {{"value", Attribute::TensorValue(v)}});
}

const Shape kScalar{};

// ---- If ----

graph::AttributeMap Branches(std::shared_ptr<Graph> then_g, std::shared_ptr<Graph> else_g) {
  return {{"then_branch", AGraph(std::move(then_g))}, {"else_branch", AGraph(std::move(else_g))}};
}

TEST(IfTest, PicksTheBranch) {
  auto then_g = G({}, {Const("t", F({1, 2, 3}, {3}))}, {V("t", DType::kFloat32, Shape{3})});
  auto else_g = G({}, {Const("e", F({4, 5}, {2}))}, {V("e", DType::kFloat32, Shape{2})});
  RunOpCase({.label = "true",
             .op_type = "If",
             .attrs = Branches(then_g, else_g),
             .inputs = {B({true}, {})},
             .expected = {F({1, 2, 3}, {3})}});
  RunOpCase({.label = "false",
             .op_type = "If",
             .attrs = Branches(then_g, else_g),
             .inputs = {B({false}, {})},
             .expected = {F({4, 5}, {2})}});
  RunOpCase({.label = "constant cond, opset 11",
             .op_type = "If",
             .opset = 11,
             .attrs = Branches(then_g, else_g),
             .inputs = {B({false}, {1})},
             .expected = {F({4, 5}, {2})},
             .constant_inputs = {0}});
  // Two outputs, one of them a string, from branches that declare no types.
  auto t2 = G({}, {Const("a", I64({7}, {})), Const("b", T_<std::string>({"yes"}, {1}))}, {V("a"), V("b")});
  auto e2 = G({}, {Const("a2", I64({8}, {})), Const("b2", T_<std::string>({"no", "!"}, {2}))}, {V("a2"), V("b2")});
  RunOpCase({.label = "two outputs",
             .op_type = "If",
             .attrs = Branches(t2, e2),
             .inputs = {B({false}, {})},
             .num_outputs = 2,
             .expected = {I64({8}, {}), T_<std::string>({"no", "!"}, {2})}});
}

TEST(IfTest, Errors) {
  auto then_g = G({}, {Const("t", F({1}, {1}))}, {V("t", DType::kFloat32, Shape{1})});
  auto else_g = G({}, {Const("e", F({2}, {1}))}, {V("e", DType::kFloat32, Shape{1})});
  RunOpCase({.label = "cond with two elements",
             .op_type = "If",
             .attrs = Branches(then_g, else_g),
             .inputs = {B({true, false}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "exactly one element"});
  RunOpCase({.label = "float cond",
             .op_type = "If",
             .attrs = Branches(then_g, else_g),
             .inputs = {F({1}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "cond must be a bool tensor"});
  auto two = G({}, {Const("t", F({1}, {1})), Const("u", F({1}, {1}))}, {V("t"), V("u")});
  RunOpCase({.label = "branch arity",
             .op_type = "If",
             .attrs = Branches(two, else_g),
             .inputs = {B({true}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "then_branch must have 1 outputs"});
  auto ints = G({}, {Const("i", I64({1}, {1}))}, {V("i", DType::kInt64, Shape{1})});
  RunOpCase({.label = "branch types differ",
             .op_type = "If",
             .attrs = Branches(then_g, ints),
             .inputs = {B({true}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "float32 in then_branch but int64"});
  RunOpCase({.label = "missing branch",
             .op_type = "If",
             .attrs = {{"then_branch", AGraph(then_g)}},
             .inputs = {B({true}, {})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "'else_branch' (a graph) is required"});
}

// ---- Loop ----

// body(i, c, y) -> (c, y + float(i), y + float(i)): y accumulates 0 + 1 + ... and every step is scanned.
std::shared_ptr<Graph> SumBody() {
  return G({V("i", DType::kInt64, kScalar), V("c", DType::kBool, kScalar), V("y", DType::kFloat32, Shape{1})},
           {N("Cast", {"i"}, {"fi"}, {{"to", AInt(1)}}), N("Add", {"y", "fi"}, {"y2"}), N("Identity", {"y2"}, {"s"})},
           {V("c", DType::kBool, kScalar), V("y2", DType::kFloat32, Shape{1}), V("s", DType::kFloat32, Shape{1})});
}

TEST(LoopTest, TripCountAndCondition) {
  const auto body = AGraph(SumBody());
  RunOpCase({.label = "for loop with scan output",
             .op_type = "Loop",
             .attrs = {{"body", body}},
             .inputs = {I64({3}, {}), B({true}, {}), F({0}, {1})},
             .num_outputs = 2,
             .expected = {F({3}, {1}), F({0, 1, 3}, {3, 1})}});
  RunOpCase({.label = "no cond input (opset 11)",
             .op_type = "Loop",
             .opset = 11,
             .attrs = {{"body", body}},
             .inputs = {I64({4}, {}), Tensor(), F({10}, {1})},
             .num_outputs = 2,
             .expected = {F({16}, {1}), F({10, 11, 13, 16}, {4, 1})}});
  RunOpCase({.label = "zero trip count",
             .op_type = "Loop",
             .attrs = {{"body", body}},
             .inputs = {I64({0}, {}), B({true}, {}), F({5}, {1})},
             .num_outputs = 2,
             .expected = {F({5}, {1}), F({}, {0, 1})}});
  RunOpCase({.label = "negative trip count",
             .op_type = "Loop",
             .attrs = {{"body", body}},
             .inputs = {I64({-2}, {}), B({true}, {}), F({5}, {1})},
             .num_outputs = 2,
             .expected = {F({5}, {1}), F({}, {0, 1})}});
  RunOpCase({.label = "cond false from the start",
             .op_type = "Loop",
             .attrs = {{"body", body}},
             .inputs = {I64({5}, {}), B({false}, {}), F({5}, {1})},
             .num_outputs = 2,
             .expected = {F({5}, {1}), F({}, {0, 1})}});
  RunOpCase({.label = "constant trip count",
             .op_type = "Loop",
             .attrs = {{"body", body}},
             .inputs = {I64({2}, {1}), B({true}, {1}), F({1}, {1})},
             .num_outputs = 2,
             .expected = {F({2}, {1}), F({1, 2}, {2, 1})},
             .constant_inputs = {0, 1}});
  // A while loop: the body's condition i < 2 stops it after three iterations; the trip count is omitted.
  auto while_body = G({V("i", DType::kInt64, kScalar), V("c", DType::kBool, kScalar), V("y")},
                      {N("Less", {"i", "two"}, {"go"}), N("Add", {"y", "one"}, {"y2"})}, {V("go"), V("y2")},
                      {{"two", I64({2}, {})}, {"one", F({1}, {})}});
  RunOpCase({.label = "while loop",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(while_body)}},
             .inputs = {Tensor(), B({true}, {}), F({0.5f, 1}, {2})},
             .expected = {F({3.5f, 4}, {2})}});
  RunOpCase({.label = "trip count wins over cond",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(while_body)}},
             .inputs = {I64({1}, {}), B({true}, {}), F({0}, {1})},
             .expected = {F({1}, {1})}});
}

TEST(LoopTest, CarriedShapesMayChange) {
  // body(i, c, y) -> (c, concat(y, [float(i)])): y grows by one element per iteration.
  auto grow = G({V("i", DType::kInt64, kScalar), V("c", DType::kBool, kScalar), V("y", DType::kFloat32, Shape{0})},
                {N("Cast", {"i"}, {"fi"}, {{"to", AInt(1)}}), N("Unsqueeze", {"fi", "axes"}, {"v"}),
                 N("Concat", {"y", "v"}, {"y2"}, {{"axis", AInt(0)}})},
                {V("c"), V("y2", DType::kFloat32, PartialShape::Of({Dim()}))}, {{"axes", I64({0}, {1})}});
  RunOpCase({.label = "growing",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(grow)}},
             .inputs = {I64({3}, {}), B({true}, {}), F({}, {0})},
             .expected = {F({0, 1, 2}, {3})}});
  // Several carried values of different types, and scan outputs left unused.
  auto multi = G({V("i"), V("c"), V("a"), V("b")},
                 {N("Add", {"a", "a"}, {"a2"}), N("Mul", {"b", "b"}, {"b2"}), N("Identity", {"i"}, {"si"})},
                 {V("c"), V("a2"), V("b2"), V("si")});
  RunOpCase({.label = "two carried, int64 scan",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(multi)}},
             .inputs = {I64({3}, {}), Tensor(), I32({1, -1}, {2}), D({2}, {})},
             .num_outputs = 3,
             .expected = {I32({8, -8}, {2}), D({256}, {}), I64({0, 1, 2}, {3})}});
}

TEST(LoopTest, MalformedBodiesError) {
  auto int_cond = G({V("i"), V("c"), V("y")}, {N("Cast", {"c"}, {"ci"}, {{"to", AInt(7)}})}, {V("ci"), V("y")});
  RunOpCase({.label = "condition not bool",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(int_cond)}},
             .inputs = {I64({3}, {}), B({true}, {}), F({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "the body's condition output must be a bool tensor with one element"});
  auto grow_scan =
      G({V("i"), V("c"), V("y")}, {N("Concat", {"y", "y"}, {"y2"}, {{"axis", AInt(0)}}), N("Identity", {"y2"}, {"s"})},
        {V("c"), V("y2"), V("s")});
  RunOpCase({.label = "scan output changes shape",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(grow_scan)}},
             .inputs = {I64({3}, {}), B({true}, {}), F({1}, {1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "in the first iteration"});
  auto retype = G({V("i"), V("c"), V("y", DType::kFloat32, Shape{1})}, {N("Cast", {"y"}, {"y2"}, {{"to", AInt(7)}})},
                  {V("c"), V("y2")});
  RunOpCase({.label = "carried value changes type",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(retype)}},
             .inputs = {I64({3}, {}), B({true}, {}), F({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "enters the body as float32 but the body returns int64"});
  RunOpCase({.label = "body arity",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(SumBody())}},
             .inputs = {I64({3}, {}), B({true}, {})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "the body must have 2 inputs and 3 outputs, got 3 inputs and 3 outputs"});
  RunOpCase({.label = "int32 trip count",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(SumBody())}},
             .inputs = {I32({3}, {}), B({true}, {}), F({0}, {1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "M (the trip count) must be int64"});
  RunOpCase({.label = "no body",
             .op_type = "Loop",
             .inputs = {I64({3}, {}), B({true}, {}), F({0}, {1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "'body' (a graph)"});
  auto failing =
      G({V("i"), V("c"), V("y")}, {N("Reshape", {"y", "bad"}, {"y2"})}, {V("c"), V("y2")}, {{"bad", I64({5}, {1})}});
  RunOpCase({.label = "body error",
             .op_type = "Loop",
             .attrs = {{"body", AGraph(failing)}},
             .inputs = {I64({3}, {}), B({true}, {}), F({0, 1}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "Reshape"});
}

// ---- Scan ----

// body(sum, x) -> (sum + x, sum + x)
std::shared_ptr<Graph> CumSumBody() {
  return G({V("sum_in"), V("next")}, {N("Add", {"sum_in", "next"}, {"sum_out"}), N("Identity", {"sum_out"}, {"s"})},
           {V("sum_out"), V("s")});
}

TEST(ScanTest, Opset9Plus) {
  const auto body = AGraph(CumSumBody());
  RunOpCase({.label = "cumulative sum",
             .op_type = "Scan",
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}},
             .inputs = {F({0, 0}, {2}), F({1, 2, 3, 4, 5, 6}, {3, 2})},
             .num_outputs = 2,
             .expected = {F({9, 12}, {2}), F({1, 2, 4, 6, 9, 12}, {3, 2})}});
  RunOpCase({.label = "axis 1, both directions reversed",
             .op_type = "Scan",
             .opset = 16,
             .attrs = {{"body", body},
                       {"num_scan_inputs", AInt(1)},
                       {"scan_input_axes", AInts({1})},
                       {"scan_input_directions", AInts({1})},
                       {"scan_output_axes", AInts({1})},
                       {"scan_output_directions", AInts({1})}},
             .inputs = {F({0, 0}, {2}), F({1, 2, 3, 4, 5, 6}, {2, 3})},
             .num_outputs = 2,
             .expected = {F({6, 15}, {2}), F({6, 5, 3, 15, 11, 6}, {2, 3})}});
  RunOpCase({.label = "negative axes (opset 11)",
             .op_type = "Scan",
             .opset = 11,
             .attrs = {{"body", body},
                       {"num_scan_inputs", AInt(1)},
                       {"scan_input_axes", AInts({-1})},
                       {"scan_output_axes", AInts({-1})}},
             .inputs = {F({0, 0}, {2}), F({1, 2, 3, 4, 5, 6}, {2, 3})},
             .num_outputs = 2,
             .expected = {F({6, 15}, {2}), F({1, 3, 6, 4, 9, 15}, {2, 3})}});
  auto product = G({V("a"), V("b")}, {N("Mul", {"a", "b"}, {"p"})}, {V("p")});
  RunOpCase({.label = "no state, two scan inputs, int64",
             .op_type = "Scan",
             .attrs = {{"body", AGraph(product)}, {"num_scan_inputs", AInt(2)}},
             .inputs = {I64({1, 2, 3}, {3}), I64({4, 5, 6}, {3})},
             .expected = {I64({4, 10, 18}, {3})}});
  auto state_only = G({V("sum_in"), V("next")}, {N("Add", {"sum_in", "next"}, {"sum_out"})}, {V("sum_out")});
  RunOpCase({.label = "empty sequence",
             .op_type = "Scan",
             .attrs = {{"body", AGraph(state_only)}, {"num_scan_inputs", AInt(1)}},
             .inputs = {F({1, 2}, {2}), F({}, {0, 2})},
             .num_outputs = 1,
             .expected = {F({1, 2}, {2})}});
  auto declared =
      G({V("sum_in"), V("next")}, {N("Add", {"sum_in", "next"}, {"sum_out"}), N("Identity", {"sum_out"}, {"s"})},
        {V("sum_out"), V("s", DType::kFloat32, Shape{2})});
  RunOpCase({.label = "empty sequence with a scan output",
             .op_type = "Scan",
             .attrs = {{"body", AGraph(declared)}, {"num_scan_inputs", AInt(1)}},
             .inputs = {F({1, 2}, {2}), F({}, {0, 2})},
             .num_outputs = 2,
             .expected = {F({1, 2}, {2}), F({}, {0, 2})}});
}

TEST(ScanTest, Opset8BatchAndSequenceLens) {
  const auto body = AGraph(CumSumBody());
  RunOpCase({.label = "sequence_lens pads with zeros",
             .op_type = "Scan",
             .opset = 8,
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}},
             .inputs = {I64({2, 3}, {2}), F({0, 0}, {2, 1}), F({1, 2, 3, 4, 5, 6}, {2, 3, 1})},
             .num_outputs = 2,
             .expected = {F({3, 15}, {2, 1}), F({1, 3, 0, 4, 9, 15}, {2, 3, 1})}});
  RunOpCase({.label = "reverse direction within each sequence",
             .op_type = "Scan",
             .opset = 8,
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}, {"directions", AInts({1})}},
             .inputs = {I64({2, 3}, {2}), F({0, 0}, {2, 1}), F({1, 2, 3, 4, 5, 6}, {2, 3, 1})},
             .num_outputs = 2,
             .expected = {F({3, 15}, {2, 1}), F({2, 3, 0, 6, 11, 15}, {2, 3, 1})}});
  RunOpCase({.label = "no sequence_lens",
             .op_type = "Scan",
             .opset = 8,
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}},
             .inputs = {Tensor(), F({0, 0}, {1, 2}), F({1, 2, 3, 4, 5, 6}, {1, 3, 2})},
             .num_outputs = 2,
             .expected = {F({9, 12}, {1, 2}), F({1, 2, 4, 6, 9, 12}, {1, 3, 2})}});
  RunOpCase({.label = "sequence_lens out of range",
             .op_type = "Scan",
             .opset = 8,
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}},
             .inputs = {I64({4}, {1}), F({0}, {1, 1}), F({1, 2, 3}, {1, 3, 1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "sequence_lens values must be in [0, 3]"});
}

TEST(ScanTest, Errors) {
  const auto body = AGraph(CumSumBody());
  auto product = G({V("a"), V("b")}, {N("Mul", {"a", "b"}, {"p"})}, {V("p")});
  RunOpCase({.label = "sequence lengths differ",
             .op_type = "Scan",
             .attrs = {{"body", AGraph(product)}, {"num_scan_inputs", AInt(2)}},
             .inputs = {F({1, 2, 3}, {3}), F({4, 5}, {2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "different sequence lengths"});
  RunOpCase({.label = "num_scan_inputs missing",
             .op_type = "Scan",
             .attrs = {{"body", body}},
             .inputs = {F({0}, {1}), F({1}, {1, 1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "num_scan_inputs"});
  RunOpCase({.label = "axis out of range",
             .op_type = "Scan",
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}, {"scan_input_axes", AInts({2})}},
             .inputs = {F({0}, {1}), F({1}, {1, 1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "out of range"});
  RunOpCase({.label = "direction 2",
             .op_type = "Scan",
             .attrs = {{"body", body}, {"num_scan_inputs", AInt(1)}, {"scan_input_directions", AInts({2})}},
             .inputs = {F({0}, {1}), F({1}, {1, 1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "directions 0 or 1"});
  RunOpCase({.label = "body arity",
             .op_type = "Scan",
             .attrs = {{"body", AGraph(product)}, {"num_scan_inputs", AInt(1)}},
             .inputs = {F({0}, {1}), F({1}, {1, 1})},
             .num_outputs = 2,
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "the body must have 2 inputs and 2 outputs"});
}

// ---- subgraphs in whole models ----

std::shared_ptr<graph::Model> ModelOf(Graph g) {
  auto m = std::make_shared<graph::Model>();
  m->opset_imports[""] = 17;
  m->graph = std::move(g);
  return m;
}

// x -> a = x + x (read only by the then branch), e = -x (the else branch's output, by name), and b, d (more
// arena values, planned while a and e must stay alive).
Graph OuterScopeGraph() {
  Graph g;
  g.inputs = {V("x", DType::kFloat32, Shape{4}), V("c", DType::kBool, kScalar)};
  auto then_g = G({}, {N("Mul", {"a", "d"}, {"t"})}, {V("t")});
  auto else_g = G({}, {}, {V("e")});
  g.nodes = {N("Add", {"x", "x"}, {"a"}),
             N("Neg", {"x"}, {"e"}),
             N("Mul", {"x", "x"}, {"b"}),
             N("Add", {"b", "b"}, {"d"}),
             N("If", {"c"}, {"r"}, Branches(then_g, else_g)),
             N("Add", {"r", "x"}, {"out"})};
  g.outputs = {V("out")};
  return g;
}

TEST(SubgraphTest, OuterScopeValuesStayAliveInEveryExecutor) {
  auto model = ModelOf(OuterScopeGraph());
  const Tensor x = F({1, 2, 3, 4}, {4});
  for (bool cond : {true, false}) {
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", x}, {"c", B({cond}, {})}};
    // then: (2x)(2x^2) + x = 4x^3 + x; else: -x + x = 0.
    const Tensor want = cond ? F({5, 34, 111, 260}, {4}) : F({0, 0, 0, 0}, {4});
    std::vector<Tensor> ref;
    ASSERT_TRUE(graph::RunReference(*model, feeds, &ref).ok());
    EXPECT_EQ(CompareTensors(ref[0], want, 0, 0), "");
    for (bool optimize : {true, false}) {
      graph::SessionOptions opts;
      opts.optimize = optimize;
      auto session = graph::Session::Create(model, opts);
      ASSERT_TRUE(session.ok()) << session.status().ToString();
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<Tensor> got;
        Status s = (*session)->Run(feeds, &got);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(CompareTensors(got[0], want, 0, 0), "") << "cond " << cond << " optimize " << optimize;
      }
    }
  }
}

TEST(SubgraphTest, DeadCodeKeepsWhatBodiesRead) {
  Graph g = OuterScopeGraph();
  g.nodes.push_back(N("Sub", {"x", "x"}, {"unused"}));
  ASSERT_TRUE(graph::EliminateDeadCode(&g).ok());
  std::set<std::string> kept;
  for (const Node& n : g.nodes) kept.insert(n.outputs[0]);
  EXPECT_EQ(kept, (std::set<std::string>{"a", "e", "b", "d", "r", "out"}));
  EXPECT_EQ(graph::SubgraphOuterInputs(g.nodes[4]), (std::vector<std::string>{"a", "d", "e"}));
}

TEST(SubgraphTest, SortingHonoursValuesReadByBodies) {
  Graph g = OuterScopeGraph();
  std::swap(g.nodes[0], g.nodes[4]);  // the If before the nodes its branches read
  std::swap(g.nodes[1], g.nodes[5]);
  auto session = graph::Session::Create(ModelOf(g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<Tensor> got;
  ASSERT_TRUE((*session)->Run({{"x", F({1, 2, 3, 4}, {4})}, {"c", B({true}, {})}}, &got).ok());
  EXPECT_EQ(CompareTensors(got[0], F({5, 34, 111, 260}, {4}), 0, 0), "");
}

TEST(SubgraphTest, MalformedBodiesAreRejectedAtLoad) {
  Graph g = OuterScopeGraph();
  g.nodes[4].attrs["then_branch"] = AGraph(G({}, {N("Mul", {"a", "nowhere"}, {"t"})}, {V("t")}));
  auto session = graph::Session::Create(ModelOf(g));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("input 'nowhere' is not defined before it is used"), std::string::npos)
      << session.status().ToString();
  EXPECT_NE(session.status().message().find("then_branch"), std::string::npos) << session.status().ToString();
  // Unsorted body nodes, and an unknown op inside a body.
  g.nodes[4].attrs["then_branch"] = AGraph(G({}, {N("Neg", {"t0"}, {"t"}), N("Neg", {"a"}, {"t0"})}, {V("t")}));
  EXPECT_FALSE(graph::Session::Create(ModelOf(g)).ok());
  g.nodes[4].attrs["then_branch"] = AGraph(G({}, {N("NoSuchOp", {"a"}, {"t"})}, {V("t")}));
  auto unknown = graph::Session::Create(ModelOf(g));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
}

// A Loop whose body holds an If that reads the Loop body's carried value and a graph input two scopes out; no body
// declares any type, so every type comes from inferring the bodies.
Graph NestedGraph() {
  auto then_g = G({}, {N("Add", {"y", "w"}, {"t"})}, {V("t")});
  auto else_g = G({}, {N("Sub", {"y", "w"}, {"t2"})}, {V("t2")});
  auto body = G({V("i"), V("c"), V("y")},
                {N("Less", {"i", "one"}, {"first"}), N("If", {"first"}, {"y2"}, Branches(then_g, else_g))},
                {V("c"), V("y2")}, {{"one", I64({1}, {})}});
  Graph g;
  g.inputs = {V("w", DType::kFloat32, Shape{2}), V("m", DType::kInt64, kScalar)};
  g.initializers["y0"] = F({0, 0}, {2});
  g.nodes = {N("Loop", {"m", "", "y0"}, {"y"}, {{"body", AGraph(body)}}), N("Mul", {"y", "y"}, {"sq"})};
  g.outputs = {V("y"), V("sq")};
  return g;
}

TEST(SubgraphTest, NestedScopesAndInferredBodyTypes) {
  auto model = ModelOf(NestedGraph());
  std::vector<std::pair<std::string, Tensor>> feeds = {{"w", F({2, 3}, {2})}, {"m", I64({3}, {})}};
  // y = 0 + w - w - w = -w.
  std::vector<Tensor> ref;
  ASSERT_TRUE(graph::RunReference(*model, feeds, &ref).ok());
  EXPECT_EQ(CompareTensors(ref[0], F({-2, -3}, {2}), 0, 0), "");
  auto session = graph::Session::Create(model);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> got;  // after the session: results may use its allocator
  Status s = (*session)->Run(feeds, &got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(CompareTensors(got[0], F({-2, -3}, {2}), 0, 0), "");
  EXPECT_EQ(CompareTensors(got[1], F({4, 9}, {2}), 0, 0), "");

  graph::InferredGraph inferred;
  const Graph& g = model->graph;
  ASSERT_TRUE(graph::InferGraph(g, g.inputs, graph::InferOptions{}, &inferred).ok());
  EXPECT_EQ(inferred.types.at("y").dtype, DType::kFloat32);
  EXPECT_EQ(inferred.types.at("y").shape.ToString(), "[2]");
  EXPECT_EQ(inferred.types.at("sq").shape.ToString(), "[2]");
}

TEST(SubgraphTest, IfInferenceMergesBranchShapes) {
  Graph g;
  g.inputs = {V("c", DType::kBool, kScalar), V("x", DType::kFloat32, PartialShape::Of({Dim::Symbol("n"), Dim(3)}))};
  g.initializers["yes"] = B({true}, {});
  auto same_rank = Branches(G({}, {N("Identity", {"x"}, {"t"})}, {V("t")}),
                            G({}, {Const("e", F({1, 2, 3, 4, 5, 6}, {2, 3}))}, {V("e")}));
  auto other_rank =
      Branches(G({}, {N("Identity", {"x"}, {"t"})}, {V("t")}), G({}, {Const("e", F({1}, {1}))}, {V("e")}));
  g.nodes = {N("If", {"c"}, {"merged"}, same_rank), N("If", {"yes"}, {"picked"}, same_rank),
             N("If", {"c"}, {"ranks_differ"}, other_rank)};
  graph::InferredGraph inferred;
  ASSERT_TRUE(graph::InferGraph(g, g.inputs, graph::InferOptions{}, &inferred).ok());
  EXPECT_EQ(inferred.types.at("merged").shape.ToString(), "[?,3]");
  EXPECT_EQ(inferred.types.at("picked").shape.ToString(), "[n,3]");
  EXPECT_EQ(inferred.types.at("ranks_differ").shape.ToString(), "unknown rank");
  EXPECT_EQ(inferred.types.at("ranks_differ").dtype, DType::kFloat32);
}

TEST(SubgraphTest, LoopInferenceWidensChangingCarriedShapes) {
  Graph g;
  g.inputs = {V("m", DType::kInt64, kScalar), V("x", DType::kFloat32, Shape{2, 3})};
  auto grow =
      G({V("i"), V("c"), V("y")},
        {N("Concat", {"y", "y"}, {"y2"}, {{"axis", AInt(0)}}), N("ReduceSum", {"y"}, {"s"}, {{"keepdims", AInt(0)}})},
        {V("c"), V("y2"), V("s")});
  g.nodes = {N("Loop", {"m", "", "x"}, {"y", "scan"}, {{"body", AGraph(grow)}})};
  graph::InferredGraph inferred;
  ASSERT_TRUE(graph::InferGraph(g, g.inputs, graph::InferOptions{}, &inferred).ok());
  EXPECT_EQ(inferred.types.at("y").shape.ToString(), "[?,3]");
  EXPECT_EQ(inferred.types.at("scan").shape.ToString(), "[?]");
  EXPECT_EQ(inferred.types.at("scan").dtype, DType::kFloat32);
}

}  // namespace
}  // namespace strata::testing
