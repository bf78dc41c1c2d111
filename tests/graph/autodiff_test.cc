// Graph-level autodiff tests: gradients through chains of ops (Cast round trips, ties, unused optional outputs,
// axes from Constant nodes), and the Fashion-MNIST CNN end to end: BuildGradients + Session against finite
// differences in float64, and the time of one float32 training step with the fast kernels.
#include "graph/autodiff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/random.h"
#include "tests/ops/op_harness.h"

namespace strata::graph {
namespace {

using testing::AFloat;
using testing::AInt;
using testing::AInts;

// A graph under construction: nodes appended in order, with generated names.
struct GraphMaker {
  std::shared_ptr<Model> model = std::make_shared<Model>();
  int counter = 0;
  GraphMaker() {
    model->opset_imports[""] = 17;
    model->opset_imports["strata"] = 1;
  }
  Graph& g() { return model->graph; }
  std::string Add(const std::string& op, std::vector<std::string> inputs, AttributeMap attrs = {}, int outputs = 1) {
    Node n;
    n.name = StrCat(op, "_", counter++);
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    for (int i = 0; i < outputs; ++i) n.outputs.push_back(StrCat(n.name, ":", i));
    const std::string out = n.outputs[0];
    g().nodes.push_back(std::move(n));
    return out;
  }
  void Input(const std::string& name, DType t, const Shape& s) { g().inputs.push_back({name, t, PartialShape::Of(s)}); }
  // Scalar loss = sum(v * R) with a fixed random R of v's shape (float64).
  std::string WeightedSum(const std::string& v, const Shape& shape, uint64_t seed) {
    Tensor r = testing::Cast(testing::RandomF(shape.ToVector(), seed), DType::kFloat64);
    g().initializers["R"] = r;
    g().initializers["empty"] = Tensor::FromVector<int64_t>({}, Shape{0});
    Node n;
    n.name = "loss_sum";
    n.op_type = "ReduceSumTo";
    n.domain = "strata";
    n.opset = 1;
    n.inputs = {Add("Mul", {v, "R"}), "empty"};
    n.outputs = {"loss"};
    g().nodes.push_back(std::move(n));
    return "loss";
  }
};

// Gradients of `loss` wrt `wrt` (graph inputs), run through a Session; returns them in `wrt` order.
std::vector<Tensor> Gradients(const Model& m, const std::string& loss, const std::vector<std::string>& wrt,
                              const std::vector<std::pair<std::string, Tensor>>& feeds, SessionOptions opts = {}) {
  auto tm = std::make_shared<Model>(m);
  std::map<std::string, std::string> grads;
  Status s = BuildGradients(&tm->graph, loss, wrt, {}, &grads);
  EXPECT_TRUE(s.ok()) << s.ToString();
  tm->graph.outputs.clear();
  for (const std::string& w : wrt) tm->graph.outputs.push_back({grads[w], DType::kUndefined, PartialShape::Unknown()});
  auto session = Session::Create(tm, opts);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  std::vector<Tensor> out;
  s = (*session)->Run(feeds, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (Tensor& t : out) t = t.Clone();  // results hold memory of the session's allocator: copy before it goes
  return out;
}

double Loss(const Model& m, const std::string& loss, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  Model lm = m;
  lm.graph.outputs = {{loss, DType::kUndefined, PartialShape::Unknown()}};
  std::vector<Tensor> out;
  Status s = RunReference(lm, feeds, &out);
  STRATA_CHECK(s.ok(), s.ToString());
  return out[0].dtype() == DType::kFloat64 ? out[0].data<double>()[0] : out[0].data<float>()[0];
}

TEST(AutodiffTest, CastRoundTripPassesGradientBack) {
  GraphMaker gm;
  gm.Input("x", DType::kFloat64, Shape{3});
  AttributeMap to32, to64;
  to32["to"] = AInt(1);
  to64["to"] = AInt(11);
  const std::string y = gm.Add("Cast", {gm.Add("Cast", {"x"}, to32)}, to64);
  const std::string loss = gm.WeightedSum(y, Shape{3}, 7);
  const Tensor x = testing::D({0.5, -1, 2}, {3});
  const std::vector<Tensor> g = Gradients(*gm.model, loss, {"x"}, {{"x", x}});
  ASSERT_EQ(g.size(), 1u);
  const Tensor& r = gm.g().initializers["R"];
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[0].data<double>()[i], r.data<double>()[i], 1e-6);
}

TEST(AutodiffTest, MaxTiesShareTheGradient) {
  GraphMaker gm;
  gm.Input("a", DType::kFloat64, Shape{2});
  gm.Input("b", DType::kFloat64, Shape{2});
  const std::string loss = gm.WeightedSum(gm.Add("Max", {"a", "b"}), Shape{2}, 3);
  const std::vector<Tensor> g =
      Gradients(*gm.model, loss, {"a", "b"}, {{"a", testing::D({1, 2}, {2})}, {"b", testing::D({1, 3}, {2})}});
  const Tensor& r = gm.g().initializers["R"];
  EXPECT_DOUBLE_EQ(g[0].data<double>()[0], r.data<double>()[0] / 2);  // tie: half each
  EXPECT_DOUBLE_EQ(g[1].data<double>()[0], r.data<double>()[0] / 2);
  EXPECT_DOUBLE_EQ(g[0].data<double>()[1], 0.0);
  EXPECT_DOUBLE_EQ(g[1].data<double>()[1], r.data<double>()[1]);
}

TEST(AutodiffTest, UnusedOptionalOutputIsNamedForTheGradient) {
  GraphMaker gm;
  gm.Input("x", DType::kFloat64, Shape{50});
  gm.g().initializers["ratio"] = Tensor::Scalar<double>(0.5);
  gm.g().initializers["train"] = Tensor::Scalar<bool>(true);
  AttributeMap seed;
  seed["seed"] = AInt(9);
  const std::string y = gm.Add("Dropout", {"x", "ratio", "train"}, seed);  // the mask output is not used
  const std::string loss = gm.WeightedSum(y, Shape{50}, 5);
  Tensor x = testing::Cast(testing::RandomF({50}, 1), DType::kFloat64);
  const std::vector<Tensor> g = Gradients(*gm.model, loss, {"x"}, {{"x", x}});
  std::vector<Tensor> fwd;
  Model fm = *gm.model;
  fm.graph.outputs = {{y, DType::kUndefined, PartialShape::Unknown()}};
  ASSERT_TRUE(RunReference(fm, {{"x", x}}, &fwd).ok());
  const Tensor& r = gm.g().initializers["R"];
  int kept = 0;
  for (int i = 0; i < 50; ++i) {
    const bool k = fwd[0].data<double>()[i] != 0;
    kept += k;
    EXPECT_DOUBLE_EQ(g[0].data<double>()[i], k ? 2 * r.data<double>()[i] : 0.0) << i;
  }
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 40);
}

TEST(AutodiffTest, AxesFromConstantNodesAndTrainableInitializers) {
  GraphMaker gm;
  gm.Input("x", DType::kFloat64, Shape{2, 3});
  gm.g().initializers["w"] = testing::D({0.5, -1, 2}, {3});  // trainable: differentiated, not folded
  AttributeMap value;
  value["value"] = Attribute::TensorValue(Tensor::FromVector<int64_t>({1}));
  const std::string axes = gm.Add("Constant", {}, value);
  AttributeMap keep;
  keep["keepdims"] = AInt(0);
  const std::string y = gm.Add("ReduceSum", {gm.Add("Mul", {"x", "w"}), axes}, keep);
  const std::string loss = gm.WeightedSum(y, Shape{2}, 11);
  const Tensor x = testing::D({1, 2, 3, 4, 5, 6}, {2, 3});
  const std::vector<Tensor> g = Gradients(*gm.model, loss, {"w", "x"}, {{"x", x}});
  const double* r = gm.g().initializers["R"].data<double>();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(g[0].data<double>()[j], r[0] * (1 + j) + r[1] * (4 + j), 1e-12);
  const double w[3] = {0.5, -1, 2};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(g[1].data<double>()[i], r[i / 3] * w[i % 3], 1e-12);
}

// ---- the Fashion-MNIST models ----

// A model with its parameters as graph inputs (as a trainer feeds them): "x" [batch, 1, 28, 28], "labels" [batch].
struct Net {
  virtual ~Net() = default;
  GraphMaker gm;
  std::vector<std::pair<std::string, Shape>> params;
  std::string loss;

  void Inputs(DType t, int64_t batch) {
    gm.Input("x", t, Shape{batch, 1, 28, 28});
    gm.Input("labels", DType::kInt64, Shape{batch});
    for (const auto& [name, shape] : params) gm.Input(name, t, shape);
  }
  std::string Dense(const std::string& h, const std::string& w, const std::string& b) {
    AttributeMap tb;
    tb["transB"] = AInt(1);
    return gm.Add("Gemm", {h, w, b}, tb);
  }

  std::vector<std::pair<std::string, Tensor>> Feeds(DType t, int64_t batch, uint64_t seed) const {
    std::vector<std::pair<std::string, Tensor>> f;
    f.emplace_back("x", testing::Cast(testing::RandomF({batch, 1, 28, 28}, seed, 0, 1), t));
    std::vector<int64_t> labels(batch);
    for (int64_t i = 0; i < batch; ++i) labels[i] = (i * 7 + 3) % 10;
    f.emplace_back("labels", Tensor::FromVector<int64_t>(labels));
    uint64_t s = seed;
    for (const auto& [name, shape] : params) {
      const int64_t fan_in = shape.rank() > 1 ? shape.NumElements() / shape[0] : 16;
      const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
      f.emplace_back(name, testing::Cast(testing::RandomF(shape.ToVector(), ++s, -bound, bound), t));
    }
    return f;
  }
};

// Conv 3x3 32 -> Relu -> MaxPool 2 -> Conv 3x3 64 -> Relu -> MaxPool 2 -> Flatten -> Gemm 128 -> Relu -> Gemm 10 ->
// SoftmaxCrossEntropyLoss (mean).
struct Cnn : Net {
  Cnn(DType t, int64_t batch) {
    params = {{"w1", Shape{32, 1, 3, 3}}, {"b1", Shape{32}},  {"w2", Shape{64, 32, 3, 3}}, {"b2", Shape{64}},
              {"w3", Shape{128, 1600}},   {"b3", Shape{128}}, {"w4", Shape{10, 128}},      {"b4", Shape{10}}};
    Inputs(t, batch);
    AttributeMap pool;
    pool["kernel_shape"] = AInts({2, 2});
    pool["strides"] = AInts({2, 2});
    std::string h = gm.Add("MaxPool", {gm.Add("Relu", {gm.Add("Conv", {"x", "w1", "b1"})})}, pool);
    h = gm.Add("MaxPool", {gm.Add("Relu", {gm.Add("Conv", {h, "w2", "b2"})})}, pool);
    h = gm.Add("Relu", {Dense(gm.Add("Flatten", {h}), "w3", "b3")});
    loss = gm.Add("SoftmaxCrossEntropyLoss", {Dense(h, "w4", "b4"), "labels"});
  }
};

// Flatten -> Gemm 256 -> Relu -> Gemm 128 -> Relu -> Gemm 10 -> SoftmaxCrossEntropyLoss (mean).
struct Mlp : Net {
  Mlp(DType t, int64_t batch) {
    params = {{"w1", Shape{256, 784}}, {"b1", Shape{256}},     {"w2", Shape{128, 256}},
              {"b2", Shape{128}},      {"w3", Shape{10, 128}}, {"b3", Shape{10}}};
    Inputs(t, batch);
    std::string h = gm.Add("Relu", {Dense(gm.Add("Flatten", {"x"}), "w1", "b1")});
    h = gm.Add("Relu", {Dense(h, "w2", "b2")});
    loss = gm.Add("SoftmaxCrossEntropyLoss", {Dense(h, "w3", "b3"), "labels"});
  }
};

void CheckAgainstFiniteDifferences(const Net& net, uint64_t seed) {
  auto feeds = net.Feeds(DType::kFloat64, 2, seed);
  std::vector<std::string> wrt{"x"};
  for (const auto& p : net.params) wrt.push_back(p.first);
  const std::vector<Tensor> grads = Gradients(*net.gm.model, net.loss, wrt, feeds);
  ASSERT_EQ(grads.size(), wrt.size());
  Rng rng(5);
  for (size_t w = 0; w < wrt.size(); ++w) {
    SCOPED_TRACE(wrt[w]);
    auto it = std::find_if(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == wrt[w]; });
    ASSERT_EQ(grads[w].shape(), it->second.shape());
    const int64_t n = it->second.num_elements();
    for (int k = 0; k < 12; ++k) {
      const int64_t j = static_cast<int64_t>(rng.Below(n));
      const double eps = 1e-5;
      auto plus = feeds, minus = feeds;
      Tensor xp = it->second.Clone(), xm = it->second.Clone();
      xp.data<double>()[j] += eps;
      xm.data<double>()[j] -= eps;
      plus[it - feeds.begin()].second = xp;
      minus[it - feeds.begin()].second = xm;
      const double numeric = (Loss(*net.gm.model, net.loss, plus) - Loss(*net.gm.model, net.loss, minus)) / (2 * eps);
      EXPECT_NEAR(grads[w].data<double>()[j], numeric, 1e-7 + 1e-5 * std::fabs(numeric)) << "element " << j;
    }
  }
}

TEST(AutodiffTest, FashionCnnGradientsMatchFiniteDifferences) {
  CheckAgainstFiniteDifferences(Cnn(DType::kFloat64, 2), 21);
}
TEST(AutodiffTest, FashionMlpGradientsMatchFiniteDifferences) {
  CheckAgainstFiniteDifferences(Mlp(DType::kFloat64, 2), 22);
}

// A graph whose batch dimension is symbolic (as exported models and the trainer declare it) gets the same gradients
// as the one with the batch size fixed: the gradient graph reads every shape it needs at run time.
TEST(AutodiffTest, SymbolicBatchDimensionGivesTheSameGradients) {
  for (bool cnn : {true, false}) {
    SCOPED_TRACE(cnn ? "cnn" : "mlp");
    std::unique_ptr<Net> fixed, symbolic;
    if (cnn) {
      fixed = std::make_unique<Cnn>(DType::kFloat64, 3);
      symbolic = std::make_unique<Cnn>(DType::kFloat64, 3);
    } else {
      fixed = std::make_unique<Mlp>(DType::kFloat64, 3);
      symbolic = std::make_unique<Mlp>(DType::kFloat64, 3);
    }
    for (ValueInfo& in : symbolic->gm.g().inputs)
      if (in.name == "x" || in.name == "labels") in.shape.dims[0] = Dim::Symbol("N");
    const auto feeds = fixed->Feeds(DType::kFloat64, 3, 9);
    std::vector<std::string> wrt{"x"};
    for (const auto& p : fixed->params) wrt.push_back(p.first);
    const std::vector<Tensor> a = Gradients(*fixed->gm.model, fixed->loss, wrt, feeds);
    const std::vector<Tensor> b = Gradients(*symbolic->gm.model, symbolic->loss, wrt, feeds);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(testing::CompareTensors(b[i], a[i], 1e-12, 1e-14), "") << wrt[i];
  }
}

// The float32 CNN training graph on the fast path (passes: channels-last regions that the backward ops join, the
// channels-last MaxPoolGrad and convolution backward kernels) against the reference executor (no passes, reference
// kernels): every gradient, the input's included.
TEST(AutodiffTest, FashionCnnFloat32FastPathMatchesReference) {
  Cnn net(DType::kFloat32, 8);
  auto tm = std::make_shared<Model>(*net.gm.model);
  std::vector<std::string> wrt{"x"};
  for (const auto& p : net.params) wrt.push_back(p.first);
  std::map<std::string, std::string> grads;
  ASSERT_TRUE(BuildGradients(&tm->graph, net.loss, wrt, {}, &grads).ok());
  tm->graph.outputs.clear();
  for (const std::string& w : wrt) tm->graph.outputs.push_back({grads[w], DType::kUndefined, PartialShape::Unknown()});
  const auto feeds = net.Feeds(DType::kFloat32, 8, 4);
  std::vector<Tensor> got[2];
  for (int fast = 0; fast < 2; ++fast) {
    SessionOptions o;
    o.use_fast_kernels = fast == 1;
    o.optimize = fast == 1;
    auto session = Session::Create(tm, o);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    ASSERT_TRUE((*session)->Run(feeds, &got[fast]).ok());
  }
  for (size_t w = 0; w < wrt.size(); ++w)
    EXPECT_EQ(testing::CompareTensors(got[1][w], got[0][w], 1e-3, 1e-5), "") << "gradient of " << wrt[w];
}

// Times float32 training steps (forward, gradients of every parameter, SGD update) at batch 64 with the fast kernels
// and prints ms/step. STRATA_TRAIN_STEPS sets the number of timed steps (default 5).
void TimeTrainingStep(const Net& net, const char* name) {
  const int64_t batch = 64;
  auto tm = std::make_shared<Model>(*net.gm.model);
  std::vector<std::string> wrt;
  for (const auto& p : net.params) wrt.push_back(p.first);
  std::map<std::string, std::string> grads;
  ASSERT_TRUE(BuildGradients(&tm->graph, net.loss, wrt, {}, &grads).ok());
  tm->graph.initializers["lr"] = Tensor::Scalar<float>(0.01f);
  tm->graph.outputs = {{net.loss, DType::kUndefined, PartialShape::Unknown()}};
  for (const std::string& w : wrt) {
    Node m{.name = StrCat("scale_", w),
           .op_type = "Mul",
           .inputs = {grads[w], "lr"},
           .outputs = {StrCat("scaled_", w)},
           .opset = 17};
    Node n{.name = StrCat("update_", w),
           .op_type = "Sub",
           .inputs = {w, StrCat("scaled_", w)},
           .outputs = {StrCat("new_", w)},
           .opset = 17};
    tm->graph.nodes.push_back(std::move(m));
    tm->graph.nodes.push_back(std::move(n));
    tm->graph.outputs.push_back({StrCat("new_", w), DType::kUndefined, PartialShape::Unknown()});
  }
  auto session = Session::Create(tm);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto feeds = net.Feeds(DType::kFloat32, batch, 3);
  std::vector<Tensor> out;
  float first_loss = 0;
  for (int i = 0; i < 2; ++i) {  // warm up: plans, primitives
    ASSERT_TRUE((*session)->Run(feeds, &out).ok());
    if (i == 0) first_loss = out[0].data<float>()[0];
  }
  const char* env = std::getenv("STRATA_TRAIN_STEPS");
  const int steps = env ? std::atoi(env) : 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    ASSERT_TRUE((*session)->Run(feeds, &out).ok());
    for (size_t w = 0; w < wrt.size(); ++w) feeds[2 + w].second = out[1 + w];  // SGD: feed the updated weights
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
  const float last_loss = out[0].data<float>()[0];
  std::printf("[ %s ] float32 batch %lld: %.2f ms/step (%.0f examples/s); loss %.4f -> %.4f\n", name,
              static_cast<long long>(batch), ms, 1000.0 * batch / ms, first_loss, last_loss);
  EXPECT_LT(last_loss, first_loss);  // a few steps on one batch lower its loss
}

TEST(AutodiffTest, FashionCnnTrainingStepTime) { TimeTrainingStep(Cnn(DType::kFloat32, 64), "FashionCnn"); }
TEST(AutodiffTest, FashionMlpTrainingStepTime) { TimeTrainingStep(Mlp(DType::kFloat32, 64), "FashionMlp"); }

}  // namespace
}  // namespace strata::graph
