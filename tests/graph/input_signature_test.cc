// SessionOptions::input_signature (tf.function's input_signature): shapes fixed up front. A run whose input does not
// fit is refused with INVALID_ARGUMENT naming the input, the expected and the found shape, and compiles no plan.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/graph.h"

namespace strata::graph {
namespace {

// y = Relu(x), x of any rank-2 shape.
std::shared_ptr<Model> ReluModel(PartialShape in_shape = PartialShape::Of({Dim(), Dim()})) {
  auto m = std::make_shared<Model>();
  m->opset_imports[""] = 17;
  m->graph.inputs.push_back({"x", DType::kFloat32, in_shape});
  m->graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Unknown()});
  m->graph.nodes = {Node{.name = "relu", .op_type = "Relu", .inputs = {"x"}, .outputs = {"y"}, .opset = 17}};
  return m;
}

Tensor Zeros(Shape s) {
  return Tensor::FromVector<float>(std::vector<float>(static_cast<size_t>(s.NumElements()), 0.0f), s);
}

TEST(InputSignatureTest, ParsesTheTextForms) {
  auto one = ParseInputSignature("x:[-1,28,28,1]:float32");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, "x");
  EXPECT_EQ((*one)[0].dtype, DType::kFloat32);
  EXPECT_EQ((*one)[0].shape, PartialShape::Of({Dim(), Dim(28), Dim(28), Dim(1)}));
  auto nameless = ParseInputSignature(" [None, 28,?,1] ");
  ASSERT_TRUE(nameless.ok()) << nameless.status().ToString();
  EXPECT_EQ((*nameless)[0].name, "");
  EXPECT_EQ((*nameless)[0].dtype, DType::kUndefined);
  EXPECT_EQ((*nameless)[0].shape, PartialShape::Of({Dim(), Dim(28), Dim(), Dim(1)}));
  auto two = ParseInputSignature("ids:[-1,16]:int64; mask:[-1,16]:bool");
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].name, "mask");
  EXPECT_EQ((*two)[1].dtype, DType::kBool);
  auto scalar = ParseInputSignature("t:[]");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ((*scalar)[0].shape.rank(), 0);
  // The printed form parses back to the same signature.
  auto again = ParseInputSignature(FormatInputSignature(*two));
  ASSERT_TRUE(again.ok()) << FormatInputSignature(*two);
  EXPECT_EQ((*again)[0].shape, (*two)[0].shape);
  EXPECT_EQ(FormatInputSignature(*one), "x:[?,28,28,1]:float32");
}

TEST(InputSignatureTest, ParsesTheJsonForms) {
  auto obj = ParseInputSignature(R"({"x": {"shape": [null, 28, 28, 1], "dtype": "float32"}, "y": [-1, 3]})");
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  ASSERT_EQ(obj->size(), 2u);
  EXPECT_EQ((*obj)[0].shape, PartialShape::Of({Dim(), Dim(28), Dim(28), Dim(1)}));
  EXPECT_EQ((*obj)[1].name, "y");
  EXPECT_EQ((*obj)[1].shape, PartialShape::Of({Dim(), Dim(3)}));
  auto list = ParseInputSignature(R"([{"name": "x", "shape": [-1, 4], "dtype": "int64"}])");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ((*list)[0].dtype, DType::kInt64);
}

TEST(InputSignatureTest, BadSignaturesSayWhatIsWrong) {
  auto expect = [](const std::string& text, const std::string& needle) {
    auto r = ParseInputSignature(text, "--input_signature");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << text << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("--input_signature"), std::string::npos) << r.status().message();
  };
  expect("x:[-1,abc]", "dimension 'abc'");
  expect("x:[-2,3]", "dimension '-2'");
  expect("x:[1,2]:float33", "unknown element type 'float33'");
  expect("x", "has no shape");
  expect("x[1]", "expected ':' between the name and the shape");
  expect("x:[1];x:[2]", "'x' is given twice");
  expect("[1];y:[2]", "every one needs a name");
  expect("x:[1,]", "trailing ','");
  expect(R"({"x": {"shape": [1.5]}})", "dimension 0 of 'shape' is 1.5");
  expect(R"({"x": {"shap": [1]}})", "unknown key 'shap'");
  expect(R"({"x": {"shape": [1], "dtype": 3}})", "'dtype' must be a string");
  expect("", "empty");
}

TEST(InputSignatureTest, AMismatchedShapeIsRefusedBeforeAnyPlanIsCompiled) {
  SessionOptions o;
  auto sig = ParseInputSignature("x:[-1,16]:float32");
  ASSERT_TRUE(sig.ok());
  o.input_signature = *sig;
  auto s = Session::Create(ReluModel(), o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->inputs()[0].shape, PartialShape::Of({Dim(), Dim(16)}));
  std::vector<Tensor> out;
  for (int64_t batch : {1, 5, 9}) ASSERT_TRUE((*s)->Run({{"x", Zeros(Shape{batch, 16})}}, &out).ok());
  EXPECT_EQ((*s)->stats().plan_cache_misses, 3);
  for (int64_t cols : {15, 17, 32}) {
    const Status st = (*s)->Run({{"x", Zeros(Shape{2, cols})}}, &out);
    ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find("input 'x' expects shape [?,16] float32 (input signature), got [2," +
                                std::to_string(cols) + "] float32"),
              std::string::npos)
        << st.message();
  }
  const RunStats st = (*s)->stats();
  EXPECT_EQ(st.plan_cache_misses, 3);  // no plan for the refused shapes
  EXPECT_EQ(st.plans_cached, 3);
  // Without the signature the same model compiles a plan for every one of those shapes.
  auto open = Session::Create(ReluModel(), {});
  ASSERT_TRUE(open.ok());
  for (int64_t cols : {15, 17, 32}) ASSERT_TRUE((*open)->Run({{"x", Zeros(Shape{2, cols})}}, &out).ok());
  EXPECT_EQ((*open)->stats().plan_cache_misses, 3);
}

TEST(InputSignatureTest, AFixedBatchAllowsOnePlanOnly) {
  SessionOptions o;
  o.input_signature = *ParseInputSignature("[8,4]");
  auto s = Session::Create(ReluModel(), o);
  ASSERT_TRUE(s.ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->Run({{"x", Zeros(Shape{8, 4})}}, &out).ok());
  const Status partial = (*s)->Run({{"x", Zeros(Shape{3, 4})}}, &out);
  EXPECT_EQ(partial.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(partial.message().find("expects shape [8,4] float32 (input signature), got [3,4]"), std::string::npos)
      << partial.message();
  EXPECT_EQ((*s)->stats().plan_cache_misses, 1);
}

TEST(InputSignatureTest, ASignatureThatContradictsTheModelIsRefusedAtCreate) {
  auto expect = [](std::shared_ptr<Model> m, const std::string& sig, const std::string& needle) {
    SessionOptions o;
    auto parsed = ParseInputSignature(sig);
    ASSERT_TRUE(parsed.ok()) << sig;
    o.input_signature = *parsed;
    auto s = Session::Create(std::move(m), o);
    ASSERT_FALSE(s.ok()) << sig;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << sig << ": " << s.status().message();
  };
  const PartialShape fixed = PartialShape::Of({Dim::Symbol("batch"), Dim(16)});
  expect(ReluModel(fixed), "x:[-1,17]", "has 17 at dimension 1, but the model declares [batch,16]");
  expect(ReluModel(fixed), "x:[-1,16,1]", "has rank 3, but the model declares [batch,16]");
  expect(ReluModel(fixed), "x:[-1,16]:int64", "dtype int64, but the model declares float32");
  expect(ReluModel(fixed), "image:[-1,16]", "names input 'image', which the model does not have");
  // A symbolic dimension of the model takes the signature's size.
  SessionOptions o;
  o.input_signature = *ParseInputSignature("x:[4,-1]");
  auto s = Session::Create(ReluModel(fixed), o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->inputs()[0].shape, PartialShape::Of({Dim(4), Dim(16)}));
}

}  // namespace
}  // namespace strata::graph
