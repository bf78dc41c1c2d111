// RunHooks (installed by ScopedRunHooks): on_fetch_ready reports each fetched value as soon as the step producing it
// has run (before later steps), with the value the run returns; after_step runs after every step; a hook's error ends
// the run with it.
#include "graph/run_hooks.h"

#include <gtest/gtest.h>

#include <cmath>

#include "strata/graph.h"

namespace strata::graph {
namespace {

// a = x * 2 (an output), b = Exp(a), c = Relu(b) (an output): three steps without optimisation.
std::shared_ptr<Model> ChainModel() {
  auto m = std::make_shared<Model>();
  m->opset_imports[""] = 17;
  m->graph.name = "chain";
  m->graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(3)})});
  m->graph.outputs.push_back({"a", DType::kFloat32, PartialShape::Of({Dim(3)})});
  m->graph.outputs.push_back({"c", DType::kFloat32, PartialShape::Of({Dim(3)})});
  m->graph.initializers["two"] = Tensor::FromVector<float>({2.0f}, Shape{1});
  Node mul{.name = "mul", .op_type = "Mul", .inputs = {"x", "two"}, .outputs = {"a"}, .opset = 17};
  Node exp{.name = "exp", .op_type = "Exp", .inputs = {"a"}, .outputs = {"b"}, .opset = 17};
  Node relu{.name = "relu", .op_type = "Relu", .inputs = {"b"}, .outputs = {"c"}, .opset = 17};
  m->graph.nodes = {mul, exp, relu};
  return m;
}

SessionOptions Unoptimized() {
  SessionOptions o;
  o.optimize = false;  // three steps, one per node
  return o;
}

TEST(RunHooksTest, EachFetchIsReportedRightAfterItsStepWithTheReturnedValue) {
  auto s = Session::Create(ChainModel(), Unoptimized());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int steps = 0;
  std::vector<std::pair<size_t, int>> seen;  // (fetch index, steps run before the call)
  std::vector<std::vector<float>> copies(3);
  RunHooks hooks;
  hooks.after_step = [&] {
    ++steps;
    return Status::OK();
  };
  hooks.on_fetch_ready = [&](size_t fetch, const Tensor& v) {
    seen.emplace_back(fetch, steps);
    copies.at(fetch).assign(v.data<float>(), v.data<float>() + v.num_elements());
    return Status::OK();
  };
  const Tensor x = Tensor::FromVector<float>({-1.0f, 0.0f, 0.5f}, Shape{3});
  std::vector<Tensor> out;
  // "c" first, "a" second and again third: each fetch is reported, in the order its producer runs.
  {
    ScopedRunHooks scope(&hooks);
    ASSERT_TRUE((*s)->Run({{"x", x}}, {"c", "a", "a"}, &out).ok());
  }
  EXPECT_EQ(steps, 3);
  ASSERT_EQ(seen.size(), 3u);
  // "a" is produced by the first step: reported after it, before the other two steps ran.
  EXPECT_EQ(seen[0], (std::pair<size_t, int>(1, 0)));
  EXPECT_EQ(seen[1], (std::pair<size_t, int>(2, 0)));
  // "c" by the third.
  EXPECT_EQ(seen[2], (std::pair<size_t, int>(0, 2)));
  const float expected_a[] = {-2.0f, 0.0f, 1.0f};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(copies[1][i], expected_a[i]);
    EXPECT_EQ(copies[2][i], expected_a[i]);
    EXPECT_FLOAT_EQ(copies[0][i], std::exp(expected_a[i]));
    EXPECT_EQ(copies[0][i], out[0].data<float>()[i]);  // what the hook saw is what the run returned
    EXPECT_EQ(copies[1][i], out[1].data<float>()[i]);
  }
}

TEST(RunHooksTest, AnInputFetchedAsIsReportedBeforeTheFirstStep) {
  auto m = ChainModel();
  m->graph.outputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(3)})});
  auto s = Session::Create(m, Unoptimized());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int steps = 0;
  int steps_when_x = -1;
  RunHooks hooks;
  hooks.after_step = [&] {
    ++steps;
    return Status::OK();
  };
  hooks.on_fetch_ready = [&](size_t fetch, const Tensor&) {
    if (fetch == 0) steps_when_x = steps;
    return Status::OK();
  };
  std::vector<Tensor> out;
  ScopedRunHooks scope(&hooks);
  ASSERT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({1.0f, 2.0f, 3.0f}, Shape{3})}}, {"x", "c"}, &out).ok());
  EXPECT_EQ(steps_when_x, 0);
}

TEST(RunHooksTest, ATakenFetchIsReportedButNotReturned) {
  auto s = Session::Create(ChainModel(), Unoptimized());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<float> seen_a;
  RunHooks hooks;
  hooks.on_fetch_ready = [&](size_t fetch, const Tensor& v) {
    if (fetch == 1) seen_a.assign(v.data<float>(), v.data<float>() + v.num_elements());
    return Status::OK();
  };
  hooks.taken_fetches = {0, 1};  // "a" (fetch 1) is the caller's through the hook
  std::vector<Tensor> out;
  {
    ScopedRunHooks scope(&hooks);
    ASSERT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({-1.0f, 0.0f, 0.5f}, Shape{3})}}, {"c", "a"}, &out).ok());
  }
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[1].defined());  // taken: an empty tensor in its place
  ASSERT_TRUE(out[0].defined());
  EXPECT_FLOAT_EQ(out[0].data<float>()[2], std::exp(1.0f));
  EXPECT_EQ(seen_a, (std::vector<float>{-2.0f, 0.0f, 1.0f}));
  // Without the hooks, the same run returns both.
  ASSERT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({-1.0f, 0.0f, 0.5f}, Shape{3})}}, {"c", "a"}, &out).ok());
  ASSERT_TRUE(out[1].defined());
  EXPECT_EQ(out[1].data<float>()[0], -2.0f);
}

TEST(RunHooksTest, AHookErrorEndsTheRun) {
  auto s = Session::Create(ChainModel(), Unoptimized());
  ASSERT_TRUE(s.ok());
  int steps = 0;
  RunHooks hooks;
  hooks.after_step = [&] {
    ++steps;
    return Status::OK();
  };
  hooks.on_fetch_ready = [&](size_t fetch, const Tensor&) {
    return fetch == 1 ? UnavailableError("peer gone") : Status::OK();
  };
  std::vector<Tensor> out;
  Status st;
  {
    ScopedRunHooks scope(&hooks);
    st = (*s)->Run({{"x", Tensor::FromVector<float>({1.0f, 2.0f, 3.0f}, Shape{3})}}, {"c", "a"}, &out);
  }
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("peer gone"), std::string::npos) << st.message();
  EXPECT_EQ(steps, 0);  // stopped after the first step, before its after_step hook
  // Out of the scope the hooks are gone: the session runs without them.
  EXPECT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({1.0f, 2.0f, 3.0f}, Shape{3})}}, &out).ok());
  EXPECT_EQ(steps, 0);
}

}  // namespace
}  // namespace strata::graph
