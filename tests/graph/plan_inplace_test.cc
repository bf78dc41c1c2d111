// The planner's in-place outputs: a residual convolution (oneDNN sum post-op) writes its output over the residual
// when the residual is read by that step alone, and nowhere else. Results against the reference interpreter.
#include "graph/plan.h"
#include "tests/graph/pass_test_util.h"

namespace strata::testing {
namespace {

// x -> conv0 + relu -> r -> conv1 + relu -> h; conv2(h) + r -> relu -> y (a ResNet basic block after a stem)
// [and, with `reuse`, r is read again after conv2: y2 = r * 2]
graph::Model Residual(bool reuse) {
  GraphBuilder b;
  b.Input("x", {2, 8, 6, 6})
      .Constant("w0", RandomF({8, 8, 3, 3}, 5, -0.2f, 0.2f))
      .Constant("w1", RandomF({8, 8, 3, 3}, 1, -0.2f, 0.2f))
      .Constant("b1", RandomF({8}, 2))
      .Constant("w2", RandomF({8, 8, 3, 3}, 3, -0.2f, 0.2f))
      .Constant("b2", RandomF({8}, 4))
      .Node("Conv", {"x", "w0"}, {"c0"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c0"}, {"r"})
      .Node("Conv", {"r", "w1", "b1"}, {"c1"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Relu", {"c1"}, {"h"})
      .Node("Conv", {"h", "w2", "b2"}, {"c2"}, {{"pads", AInts({1, 1, 1, 1})}})
      .Node("Add", {"c2", "r"}, {"s"})
      .Node("Relu", {"s"}, {"y"})
      .Output("y");
  if (reuse) b.Constant("two", F({2}, {})).Node("Mul", {"r", "two"}, {"y2"}).Output("y2");
  return b.model();
}

struct Checked {
  bool shared = false;  // the residual convolution's output has its residual's block
  bool found = false;   // a step with a residual input was planned
};

Checked RunAndInspect(const graph::Model& model) {
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({2, 8, 6, 6}, 9)}};
  std::vector<Tensor> want;
  Status s = graph::RunReference(model, feeds, &want);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto session = graph::Session::Create(std::make_shared<graph::Model>(model));
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  Checked c;
  if (!session.ok() || !s.ok()) return c;
  // The same plan the session would compile, inspected directly.
  const graph::Graph& g = (*session)->optimized_graph();
  auto plan = graph::Plan::Compile(g, g.inputs, graph::SessionOptions{}, DefaultAllocator());
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return c;
  for (const graph::PlanStep& step : (*plan)->steps()) {
    const graph::Node& n = *step.node;
    if (n.domain != graph::kStrataDomain || step.inputs.size() < 4 || step.inputs[3] < 0) continue;
    if (n.op_type != "FusedConv" && !(n.op_type == "ChannelsLast" && n.GetString("op", "") == "FusedConv")) continue;
    c.found = true;
    const graph::PlanValue& z = (*plan)->values()[step.inputs[3]];
    const graph::PlanValue& y = (*plan)->values()[step.outputs[0]];
    c.shared = z.arena_offset >= 0 && z.arena_offset == y.arena_offset;
  }
  // Run the plan twice (the second run reuses the execution state) and the session once.
  for (int run = 0; run < 2; ++run) {
    std::vector<const Tensor*> ins = {&feeds[0].second};
    std::vector<int> fetch;
    for (const graph::ValueInfo& o : g.outputs) fetch.push_back((*plan)->ValueId(o.name));
    std::vector<Tensor> got;
    s = (*plan)->Run(ins, fetch, &got);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; s.ok() && i < want.size(); ++i)
      EXPECT_EQ(CompareTensors(got[i], want[i], 1e-4, 1e-5), "") << "plan run " << run << ", output " << i;
  }
  std::vector<Tensor> got;
  s = (*session)->Run(feeds, &got);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; s.ok() && i < want.size(); ++i) EXPECT_EQ(CompareTensors(got[i], want[i], 1e-4, 1e-5), "");
  return c;
}

TEST(PlanInplaceTest, ResidualConvolutionWritesOverItsResidual) {
  const Checked c = RunAndInspect(Residual(false));
  EXPECT_TRUE(c.found) << "no residual convolution in the plan (fusion did not fire?)";
  EXPECT_TRUE(c.shared) << "the residual convolution's output did not take over the residual's memory";
}

TEST(PlanInplaceTest, NotWhenTheResidualIsReadLater) {
  const Checked c = RunAndInspect(Residual(true));
  EXPECT_TRUE(c.found);
  EXPECT_FALSE(c.shared) << "the residual is read after the convolution: it must keep its own memory";
}

// A Transpose that only moves a dim of size 1 becomes a view: its source must stay alive (not be overwritten by later
// values) while the view is read.
TEST(PlanInplaceTest, TransposeViewKeepsItsSourceAlive) {
  GraphBuilder b;
  b.Input("x", {1, 16, 8})
      .Node("Relu", {"x"}, {"a"})
      .Node("Transpose", {"a"}, {"t"}, {{"perm", AInts({1, 0, 2})}})
      .Node("Sigmoid", {"x"}, {"s1"})
      .Node("Tanh", {"s1"}, {"s2"})
      .Node("Neg", {"s2"}, {"s3"})
      .Node("Transpose", {"s3"}, {"s4"}, {{"perm", AInts({1, 0, 2})}})
      .Node("Add", {"t", "s4"}, {"y"})
      .Output("y");
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomF({1, 16, 8}, 5)}};
  std::vector<Tensor> want, got;
  ASSERT_TRUE(graph::RunReference(b.model(), feeds, &want).ok());
  graph::SessionOptions opts;
  opts.optimize = false;  // keep every node: the values are planned one by one
  auto session = graph::Session::Create(std::make_shared<graph::Model>(b.model()), opts);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE((*session)->Run(feeds, &got).ok());
    EXPECT_EQ(CompareTensors(got[0], want[0], 1e-5, 1e-6), "") << "run " << run;
  }
}

}  // namespace
}  // namespace strata::testing
