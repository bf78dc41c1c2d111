// SessionOptions::check_numerics: the first step that produces NaN or infinity fails the run, naming the node, the
// output and its inputs' ranges; without it the same run succeeds with the NaN in its output.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/graph.h"

namespace strata::graph {
namespace {

// y = Relu(Log(x) * 2): Log of a negative element is NaN, of zero -inf.
std::shared_ptr<Model> LogModel() {
  auto m = std::make_shared<Model>();
  m->opset_imports[""] = 17;
  m->graph.name = "log";
  m->graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(4)})});
  m->graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim(4)})});
  m->graph.initializers["two"] = Tensor::FromVector<float>({2.0f}, Shape{1});
  Node log{.name = "log", .op_type = "Log", .inputs = {"x"}, .outputs = {"l"}, .opset = 17};
  Node mul{.name = "mul", .op_type = "Mul", .inputs = {"l", "two"}, .outputs = {"m"}, .opset = 17};
  Node relu{.name = "relu", .op_type = "Relu", .inputs = {"m"}, .outputs = {"y"}, .opset = 17};
  m->graph.nodes = {log, mul, relu};
  return m;
}

TEST(CheckNumericsTest, NamesTheFirstNodeThatProducesANaN) {
  const Tensor bad = Tensor::FromVector<float>({1.0f, 2.0f, -3.0f, 4.0f}, Shape{4});
  for (bool optimize : {false, true}) {
    SessionOptions o;
    o.check_numerics = true;
    o.optimize = optimize;
    auto s = Session::Create(LogModel(), o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{4})}}, &out).ok());
    const Status st = (*s)->Run({{"x", bad}}, &out);
    ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find("node 'log' (Log)"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("produced 1 non-finite values"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("first at flat index 2"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("'x' float32[4] [-3, 4]"), std::string::npos) << st.message();
  }
  // Without the check the same run succeeds, and gives the reference executor's answer for element 2.
  auto plain = Session::Create(LogModel(), {});
  ASSERT_TRUE(plain.ok());
  std::vector<Tensor> out, ref;
  ASSERT_TRUE((*plain)->Run({{"x", bad}}, &out).ok());
  ASSERT_TRUE(RunReference(*LogModel(), {{"x", bad}}, &ref).ok());
  EXPECT_EQ(std::isnan(out[0].data<float>()[2]), std::isnan(ref[0].data<float>()[2]))
      << out[0].data<float>()[2] << " vs reference " << ref[0].data<float>()[2];
}

TEST(CheckNumericsTest, InfinityIsCaughtToo) {
  SessionOptions o;
  o.check_numerics = true;
  o.optimize = false;
  auto s = Session::Create(LogModel(), o);
  ASSERT_TRUE(s.ok());
  std::vector<Tensor> out;
  const Status st = (*s)->Run({{"x", Tensor::FromVector<float>({1.0f, 0.0f, 0.0f, 4.0f}, Shape{4})}}, &out);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("node 'log' (Log) produced 2 non-finite values"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace strata::graph
