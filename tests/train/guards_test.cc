// Issue 16's guards in training: a NaN at step k stops there (TerminateOnNaN names the step; check_numerics names the
// op), TrainerOptions::input_signature refuses inputs that do not fit, and ProfileSteps writes a Chrome trace of
// steps A..B in TensorBoard's profile layout.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "core/file_util.h"
#include "core/json.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

using testutil::Compile;
using testutil::Mlp;

// n examples of "x" [8] (small finite values) and "label"; every example of batch `nan_batch` (1-based, batches of
// `batch`) has a NaN in feature 3. nan_batch 0: none.
data::Dataset Data(int n, int batch, int nan_batch) {
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    y.data<int64_t>()[i] = i % 3;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = 0.1f * static_cast<float>((i + j) % 5);
    if (nan_batch > 0 && i / batch == nan_batch - 1) x.data<float>()[i * 8 + 3] = std::nanf("");
  }
  return data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Batch(batch);
}

// x [8] -> Dense 3 "logits": no Relu between the input and the loss (Relu maps NaN to 0, which would hide an input
// NaN from the loss until the weights it poisoned make the next step's loss NaN).
std::unique_ptr<nn::Model> Linear() {
  auto in = nn::Input({8}, "x");
  auto logits = nn::Dense(3)(in);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in},
                                     std::vector<nn::ModelOutput>{{"logits", logits}}, "linear");
}

TEST(GuardsTest, TerminateOnNaNStopsAtTheStepThatProducedTheNaNAndNamesIt) {
  for (int k : {1, 4, 7}) {
    auto model = Linear();
    auto t = Trainer::Create(model.get(), Compile("sgd", 0.01));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    FitOptions fo;
    fo.verbose = 0;
    fo.epochs = 1;
    auto nan_guard = TerminateOnNaN();
    ASSERT_TRUE(nan_guard.ok()) << nan_guard.status().ToString();
    fo.callbacks = {*nan_guard};
    auto h = (*t)->Fit(Data(80, 8, k), fo);  // 10 batches; batch k holds the NaN
    ASSERT_FALSE(h.ok()) << "k=" << k;
    EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(h.status().message().find("TerminateOnNaN: the loss is nan after training step " + std::to_string(k) +
                                        " (epoch 1, batch " + std::to_string(k) + ")"),
              std::string::npos)
        << h.status().message();
    EXPECT_EQ((*t)->iterations(), k);  // stopped there: no later step ran
  }
}

TEST(GuardsTest, CheckNumericsNamesTheOpThatFirstProducedTheNaN) {
  auto model = Mlp();
  TrainerOptions to;
  to.check_numerics = true;
  auto t = Trainer::Create(model.get(), Compile("sgd", 0.01), to);
  ASSERT_TRUE(t.ok());
  auto h = (*t)->Fit(Data(80, 8, 3), {.epochs = 1, .verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << h.status().ToString();
  // The first op to read the NaN input is the first Dense layer's matrix product; it names its input 'x' and the NaN.
  EXPECT_NE(h.status().message().find("check_numerics: node '"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("'x' float32[8,8]"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("8 NaN"), std::string::npos) << h.status().message();
  EXPECT_EQ((*t)->iterations(), 2);  // steps 1 and 2 trained; step 3 failed before its update
}

TEST(GuardsTest, InputSignatureRefusesABatchThatDoesNotFit) {
  auto model = Mlp();
  TrainerOptions to;
  to.input_signature = *graph::ParseInputSignature("x:[-1,8]:float32");
  auto t = Trainer::Create(model.get(), Compile(), to);
  ASSERT_TRUE(t.ok());
  auto h = (*t)->Fit(Data(40, 8, 0), {.epochs = 1, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ((*t)->train_stats().plan_cache_misses, 1);
  // A signature that contradicts the model is refused when the training graph is compiled, naming the input.
  auto model2 = Mlp();
  to.input_signature = *graph::ParseInputSignature("x:[-1,9]");
  auto t2 = Trainer::Create(model2.get(), Compile(), to);
  ASSERT_TRUE(t2.ok());
  auto h2 = (*t2)->Fit(Data(40, 8, 0), {.epochs = 1, .verbose = 0});
  ASSERT_FALSE(h2.ok());
  EXPECT_NE(h2.status().message().find("input_signature for input 'x': shape [?,9] has 9 at dimension 1"),
            std::string::npos)
      << h2.status().message();
}

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

TEST(GuardsTest, ProfileStepsWritesATraceOfStepsAToBInTheTensorBoardLayout) {
  const std::string dir = ::testing::TempDir() + "/strata_guards_profile_" + std::to_string(::getpid());
  auto model = Mlp();
  TrainerOptions to;
  to.profiler = std::make_shared<graph::Profiler>();
  to.optimize = false;
  auto t = Trainer::Create(model.get(), Compile(), to);
  ASSERT_TRUE(t.ok());
  auto cb = ProfileSteps({.profiler = to.profiler, .first = 3, .last = 4, .log_dir = dir, .path = dir + "/t.json"});
  ASSERT_TRUE(cb.ok()) << cb.status().ToString();
  auto h = (*t)->Fit(Data(80, 8, 0), {.epochs = 1, .verbose = 0, .callbacks = {*cb}});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  // The plain file and the TensorBoard one hold the same trace.
  auto read = ReadFile(dir + "/t.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::string plain = *read;
  auto trace = Json::Parse(plain, "trace");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  auto files = Glob(dir + "/plugins/profile/*/" + std::string(host) + ".trace.json.gz");
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ(Gunzip((*files)[0]), plain);
  // Steps 3 and 4 only, each one event; per step, one run of the training graph: one event per node of its plan.
  std::vector<std::string> steps;
  std::set<std::string> names;
  int runs_seen = 0, nodes = 0;
  const Json& evs = *trace->Find("traceEvents");
  for (size_t i = 0; i < evs.size(); ++i) {
    const std::string cat = evs[i].Find("cat") ? evs[i].Find("cat")->as_string() : "";
    if (cat == "strata.step") steps.push_back(evs[i].Find("name")->as_string());
    if (cat == "strata.run") ++runs_seen;
    if (evs[i].Find("ph")->as_string() == "X" && cat.rfind("strata", 0) != 0) {
      ++nodes;
      names.insert(evs[i].Find("name")->as_string());
      EXPECT_GE(evs[i].Find("dur")->as_double(), 0.0);
    }
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"train_step 3", "train_step 4"}));
  EXPECT_EQ(runs_seen, 2);
  const graph::Model* g = (*t)->training_graph();
  ASSERT_NE(g, nullptr);
  // Every event names a node of the training graph, and each node ran once per step.
  std::set<std::string> graph_nodes;
  for (const graph::Node& n : g->graph.nodes) graph_nodes.insert(n.name);
  for (const std::string& n : names) EXPECT_TRUE(graph_nodes.count(n)) << n;
  EXPECT_GT(nodes, 0);
  EXPECT_EQ(static_cast<size_t>(nodes), 2 * names.size());
}

TEST(GuardsTest, ProfileStepsParsesItsRange) {
  EXPECT_EQ(*ParseProfileSteps("3,5"), std::make_pair(int64_t{3}, int64_t{5}));
  EXPECT_EQ(*ParseProfileSteps("7"), std::make_pair(int64_t{7}, int64_t{7}));
  for (const char* bad : {"0,2", "5,3", "a", "", "2,", "-1"}) {
    auto r = ParseProfileSteps(bad, "--profile_steps");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--profile_steps"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace strata::train
