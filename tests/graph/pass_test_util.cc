#include "tests/graph/pass_test_util.h"

namespace strata::testing {

std::map<std::string, int> OpCounts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes) ++counts[n.domain.empty() ? n.op_type : StrCat(n.domain, ".", n.op_type)];
  return counts;
}

graph::Graph CheckPass(const graph::Model& model, const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::function<Status(graph::Graph*)>& pass, double rtol, double atol) {
  std::vector<Tensor> want;
  Status s = graph::RunReference(model, feeds, &want);
  EXPECT_TRUE(s.ok()) << "reference run of the original graph: " << s.ToString();
  if (!s.ok()) return {};

  graph::Model rewritten = model;
  s = graph::TopologicalSort(&rewritten.graph);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = pass(&rewritten.graph);
  EXPECT_TRUE(s.ok()) << "pass: " << s.ToString();
  s = graph::VerifyGraph(rewritten.graph);
  EXPECT_TRUE(s.ok()) << "the rewritten graph does not verify: " << s.ToString();
  std::vector<Tensor> got;
  s = graph::RunReference(rewritten, feeds, &got);
  EXPECT_TRUE(s.ok()) << "reference run of the rewritten graph: " << s.ToString();
  if (s.ok()) {
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
      EXPECT_EQ(CompareTensors(got[i], want[i], rtol, atol), "") << "rewritten graph, output " << i;
  }

  auto session = graph::Session::Create(std::make_shared<graph::Model>(model));
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (session.ok()) {
    std::vector<Tensor> fast;
    s = (*session)->Run(feeds, &fast);
    EXPECT_TRUE(s.ok()) << "session: " << s.ToString();
    for (size_t i = 0; s.ok() && i < std::min(fast.size(), want.size()); ++i)
      EXPECT_EQ(CompareTensors(fast[i], want[i], rtol, atol), "") << "session with fast kernels, output " << i;
  }
  return rewritten.graph;
}

}  // namespace strata::testing
