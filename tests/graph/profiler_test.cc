// graph::Profiler: a Chrome trace (Trace Event Format) of Session runs, one complete event per executed node, memory
// counters, and the file layouts (plain JSON, gzip, TensorBoard's plugins/profile/<run>/<host>.trace.json.gz).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "core/json.h"
#include "strata/graph.h"

namespace strata::graph {
namespace {

// y = Relu((x @ W + b) * (x @ W + b)): four nodes, named mm, add, sq, relu.
std::shared_ptr<Model> FourNodeModel() {
  auto m = std::make_shared<Model>();
  m->opset_imports[""] = 17;
  m->graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(8)})});
  m->graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(8)})});
  m->graph.initializers["W"] = Tensor::FromVector<float>(std::vector<float>(64, 0.25f), Shape{8, 8});
  m->graph.initializers["b"] = Tensor::FromVector<float>(std::vector<float>(8, 0.5f), Shape{8});
  Node mm{.name = "mm", .op_type = "MatMul", .inputs = {"x", "W"}, .outputs = {"xw"}, .opset = 17};
  Node add{.name = "add", .op_type = "Add", .inputs = {"xw", "b"}, .outputs = {"z"}, .opset = 17};
  Node sq{.name = "sq", .op_type = "Mul", .inputs = {"z", "z"}, .outputs = {"zz"}, .opset = 17};
  Node relu{.name = "relu", .op_type = "Relu", .inputs = {"zz"}, .outputs = {"y"}, .opset = 17};
  m->graph.nodes = {mm, add, sq, relu};
  return m;
}

Tensor Rows(int64_t n) { return Tensor::FromVector<float>(std::vector<float>(n * 8, 1.0f), Shape{n, 8}); }

std::unique_ptr<Session> MakeSession(std::shared_ptr<Profiler> p) {
  SessionOptions o;
  o.optimize = false;  // every node a step of its own
  o.profiler = std::move(p);
  auto s = Session::Create(FourNodeModel(), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

void RunOnce(Session& s, int64_t rows) {
  std::vector<Tensor> out;
  ASSERT_TRUE(s.Run({{"x", Rows(rows)}}, &out).ok());
}

// The events of the parsed trace whose "cat" satisfies `pred`.
template <typename Pred>
std::vector<const Json*> Events(const Json& trace, Pred pred) {
  std::vector<const Json*> out;
  const Json* evs = trace.Find("traceEvents");
  if (evs == nullptr) return out;
  for (size_t i = 0; i < evs->size(); ++i) {
    const Json* cat = (*evs)[i].Find("cat");
    if (cat != nullptr && pred(cat->as_string(), (*evs)[i])) out.push_back(&(*evs)[i]);
  }
  return out;
}

bool IsNodeEvent(const std::string& cat, const Json& e) {
  return cat.rfind("strata", 0) != 0 && e.Find("ph")->as_string() == "X";
}

std::string GunzipFile(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "<cannot open>";
  std::string out;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProfilerTest, OneCompleteEventPerExecutedNodeWithItsNameAndOpType) {
  auto profiler = std::make_shared<Profiler>();
  auto s = MakeSession(profiler);
  profiler->Start();
  RunOnce(*s, 3);
  RunOnce(*s, 3);
  profiler->Stop();
  auto trace = Json::Parse(profiler->ChromeTraceJson(), "trace");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto nodes = Events(*trace, IsNodeEvent);
  const std::vector<std::string> names = {"mm", "add", "sq", "relu"};
  const std::vector<std::string> ops = {"MatMul", "Add", "Mul", "Relu"};
  ASSERT_EQ(nodes.size(), 2 * names.size());
  double last_ts = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& e = *nodes[i];
    EXPECT_EQ(e.Find("name")->as_string(), names[i % 4]);
    EXPECT_EQ(e.Find("cat")->as_string(), ops[i % 4]);
    EXPECT_GE(e.Find("dur")->as_double(), 0.0);
    EXPECT_GE(e.Find("ts")->as_double(), last_ts);  // the steps of one thread run in order
    last_ts = e.Find("ts")->as_double();
    EXPECT_EQ(e.Find("pid")->as_int(), 1);
    const Json* args = e.Find("args");
    ASSERT_NE(args, nullptr);
    EXPECT_EQ(args->Find("op_type")->as_string(), ops[i % 4]);
    EXPECT_EQ(args->Find("outputs")->as_string(), "float32[3,8]");
    EXPECT_EQ(args->Find("output_bytes")->as_int(), 3 * 8 * 4);
    EXPECT_NE(args->Find("kernel"), nullptr);
  }
  // A memory counter after every node, and one event per run; the plan was compiled on the first run only.
  const auto counters = Events(*trace, [](const std::string& c, const Json&) { return c == "strata.memory"; });
  ASSERT_EQ(counters.size(), nodes.size());
  EXPECT_EQ(counters[0]->Find("ph")->as_string(), "C");
  EXPECT_GT(counters[0]->Find("args")->Find("allocator_bytes_in_use")->as_int(), 0);
  EXPECT_EQ(Events(*trace, [](const std::string& c, const Json&) { return c == "strata.run"; }).size(), 2u);
  EXPECT_EQ(Events(*trace, [](const std::string& c, const Json&) { return c == "strata.compile"; }).size(), 1u);
}

// With the passes on, MatMul + Add + ... fuse into strata-domain ops: their events still count as nodes (category =
// the bare op type, the domain in the args), never as one of the profiler's own "strata.*" categories.
TEST(ProfilerTest, FusedStrataDomainNodesAreNodeEvents) {
  auto profiler = std::make_shared<Profiler>();
  SessionOptions o;
  o.profiler = profiler;
  auto s = Session::Create(FourNodeModel(), o);
  ASSERT_TRUE(s.ok());
  size_t strata_domain = 0;
  for (const Node& n : (*s)->optimized_graph().nodes) strata_domain += n.domain == "strata";
  ASSERT_GT(strata_domain, 0u) << "expected a fused strata-domain node";
  profiler->Start();
  RunOnce(**s, 3);
  auto trace = Json::Parse(profiler->ChromeTraceJson(), "trace");
  ASSERT_TRUE(trace.ok());
  const auto nodes = Events(*trace, IsNodeEvent);
  EXPECT_EQ(nodes.size(), (*s)->optimized_graph().nodes.size());
  size_t with_domain = 0;
  for (const Json* e : nodes) {
    const Json* d = e->Find("args")->Find("domain");
    if (d != nullptr && d->as_string() == "strata") ++with_domain;
  }
  EXPECT_EQ(with_domain, strata_domain);
}

TEST(ProfilerTest, RecordsNothingUntilStartedAndNothingAfterStop) {
  auto profiler = std::make_shared<Profiler>();
  auto s = MakeSession(profiler);
  RunOnce(*s, 2);
  EXPECT_EQ(profiler->num_events(), 0u);
  profiler->Start();
  RunOnce(*s, 2);
  const size_t one_run = profiler->num_events();
  EXPECT_GT(one_run, 4u);
  profiler->Stop();
  RunOnce(*s, 2);
  EXPECT_EQ(profiler->num_events(), one_run);
}

TEST(ProfilerTest, StartForRunsRecordsTheNextNRunsThenCallsDoneOnce) {
  auto profiler = std::make_shared<Profiler>();
  auto s = MakeSession(profiler);
  int done_calls = 0;
  size_t events_at_done = 0;
  profiler->StartForRuns(2, [&](Profiler& p) {
    ++done_calls;
    events_at_done = p.num_events();
  });
  for (int i = 0; i < 5; ++i) RunOnce(*s, 1 + i);
  EXPECT_EQ(done_calls, 1);
  EXPECT_FALSE(profiler->active());
  EXPECT_EQ(events_at_done, profiler->num_events());
  auto trace = Json::Parse(profiler->ChromeTraceJson(), "trace");
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(Events(*trace, [](const std::string& c, const Json&) { return c == "strata.run"; }).size(), 2u);
  EXPECT_EQ(Events(*trace, IsNodeEvent).size(), 8u);
}

TEST(ProfilerTest, WritesPlainGzipAndTensorBoardLayouts) {
  auto profiler = std::make_shared<Profiler>();
  auto s = MakeSession(profiler);
  profiler->Start();
  RunOnce(*s, 4);
  profiler->Stop();
  const std::string dir = ::testing::TempDir() + "/strata_profiler_" + std::to_string(::getpid());
  ASSERT_TRUE(MakeDirs(dir).ok());
  const std::string json = profiler->ChromeTraceJson();
  ASSERT_TRUE(profiler->WriteChromeTrace(dir + "/t.json").ok());
  EXPECT_EQ(ReadRaw(dir + "/t.json"), json);
  ASSERT_TRUE(profiler->WriteChromeTrace(dir + "/t.json.gz").ok());
  const std::string gz = ReadRaw(dir + "/t.json.gz");
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(GunzipFile(dir + "/t.json.gz"), json);

  auto path = profiler->WriteTensorBoardTrace(dir + "/logs", "run1");
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(*path, dir + "/logs/plugins/profile/run1/" + std::string(host) + ".trace.json.gz");
  EXPECT_EQ(GunzipFile(*path), json);
  // Without a run name: a time stamp directory under plugins/profile.
  auto stamped = profiler->WriteTensorBoardTrace(dir + "/logs2");
  ASSERT_TRUE(stamped.ok());
  EXPECT_NE(stamped->find(dir + "/logs2/plugins/profile/20"), std::string::npos) << *stamped;
  // An unwritable place is an error naming it.
  const Status bad = profiler->WriteChromeTrace("/proc/strata_no/t.json");
  EXPECT_FALSE(bad.ok());
}

TEST(ProfilerTest, AFailedRunIsRecordedWithItsStatus) {
  auto profiler = std::make_shared<Profiler>();
  SessionOptions o;
  o.optimize = false;
  o.check_numerics = true;
  o.profiler = profiler;
  auto s = Session::Create(FourNodeModel(), o);
  ASSERT_TRUE(s.ok());
  profiler->Start();
  std::vector<float> v(8, 1.0f);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<Tensor> out;
  ASSERT_FALSE((*s)->Run({{"x", Tensor::FromVector<float>(v, Shape{1, 8})}}, &out).ok());
  auto trace = Json::Parse(profiler->ChromeTraceJson(), "trace");
  ASSERT_TRUE(trace.ok());
  const auto runs = Events(*trace, [](const std::string& c, const Json&) { return c == "strata.run"; });
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0]->Find("args")->Find("status")->as_string().find("check_numerics: node 'mm'"), std::string::npos)
      << runs[0]->Find("args")->Find("status")->as_string();
  // The run stopped at the first node.
  EXPECT_EQ(Events(*trace, IsNodeEvent).size(), 1u);
}

}  // namespace
}  // namespace strata::graph
