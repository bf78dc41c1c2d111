// TFLite writer and reader (src/tf/tflite_*.cc): a Keras-style CNN exported and read back computes what the original
// graph computes; int8 exports carry TFLite's quantization parameters; TF Serving's half_plus_two .tflite files
// answer y = 0.5x + 2; damaged files and unsupported ops fail with errors that say what is wrong.
// TF's own interpreter on strata's files is tests/peer/tflite_export.py.
#include "tf/tflite.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "core/file_util.h"
#include "flatbuffers/flatbuffers.h"
#include "tflite_schema_generated.h"

namespace strata::tf {
namespace {

namespace fb = ::strata::tflite::fb;
using graph::Attribute;

Tensor Random(const Shape& s, uint32_t seed, float scale = 0.3f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t = Tensor::Empty(DType::kFloat32, s);
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

void AddNode(graph::Graph* g, std::string op, std::vector<std::string> in, std::string out,
             graph::AttributeMap attrs = {}) {
  graph::Node n;
  n.name = out;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  n.attrs = std::move(attrs);
  n.opset = 17;
  g->nodes.push_back(std::move(n));
}

// The layout of strata's exported Keras-style CNNs: NHWC input, NHWC->NCHW Transpose, convolutions (SAME, explicit
// asymmetric padding, depthwise), pools, NCHW->NHWC Transpose, Flatten, Dense layers, Softmax.
graph::Model SmallCnn() {
  graph::Model m;
  m.opset_imports[""] = 17;
  graph::Graph& g = m.graph;
  g.inputs.push_back({"image", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), 9, 9, 2}), ""});
  g.initializers["scale"] = Tensor::Scalar(0.5f);
  g.initializers["w1"] = Random({4, 2, 3, 3}, 1);
  g.initializers["b1"] = Random({4}, 2);
  g.initializers["w2"] = Random({4, 1, 3, 3}, 3);  // depthwise: group 4
  g.initializers["b2"] = Random({4}, 4);
  g.initializers["w3"] = Random({6, 4, 2, 2}, 5);
  g.initializers["shape"] = Tensor::FromVector<int64_t>({-1, 6 * 1 * 2});
  g.initializers["dense_w"] = Random({12, 5}, 6);
  g.initializers["dense_b"] = Random({5}, 7);
  g.initializers["out_w"] = Random({3, 5}, 8);
  g.initializers["out_b"] = Random({3}, 9);
  AddNode(&g, "Mul", {"image", "scale"}, "scaled");
  AddNode(&g, "Transpose", {"scaled"}, "nchw", {{"perm", Attribute::Ints({0, 3, 1, 2})}});
  AddNode(&g, "Conv", {"nchw", "w1", "b1"}, "c1",
          {{"pads", Attribute::Ints({1, 1, 1, 1})}, {"kernel_shape", Attribute::Ints({3, 3})}});
  AddNode(&g, "Relu", {"c1"}, "r1");
  AddNode(
      &g, "Conv", {"r1", "w2", "b2"}, "c2",
      {{"group", Attribute::Int(4)}, {"pads", Attribute::Ints({0, 1, 2, 0})}, {"strides", Attribute::Ints({2, 1})}});
  AddNode(&g, "MaxPool", {"c2"}, "p2",
          {{"kernel_shape", Attribute::Ints({2, 2})}, {"strides", Attribute::Ints({2, 2})}});
  AddNode(&g, "Conv", {"p2", "w3"}, "c3", {{"auto_pad", Attribute::String("SAME_UPPER")}});
  AddNode(&g, "AveragePool", {"c3"}, "p3",
          {{"kernel_shape", Attribute::Ints({2, 2})}, {"strides", Attribute::Ints({1, 2})}});
  AddNode(&g, "Transpose", {"p3"}, "nhwc", {{"perm", Attribute::Ints({0, 2, 3, 1})}});
  AddNode(&g, "Reshape", {"nhwc", "shape"}, "flat");
  AddNode(&g, "MatMul", {"flat", "dense_w"}, "mm");
  AddNode(&g, "Add", {"mm", "dense_b"}, "dense");
  AddNode(&g, "Relu", {"dense"}, "hidden");
  AddNode(&g, "Gemm", {"hidden", "out_w", "out_b"}, "logits", {{"transB", Attribute::Int(1)}});
  AddNode(&g, "Softmax", {"logits"}, "probabilities", {{"axis", Attribute::Int(-1)}});
  g.outputs.push_back({"logits", DType::kFloat32, {}, ""});
  g.outputs.push_back({"probabilities", DType::kFloat32, {}, ""});
  return m;
}

std::vector<Tensor> RunModel(const graph::Model& m, const std::string& input, const Tensor& x) {
  auto session = graph::Session::Create(std::make_shared<graph::Model>(m));
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  std::vector<Tensor> out;
  Status s = (*session)->Run({{input, x}}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float d = 0;
  for (size_t i = 0; i < a.values<float>().size(); ++i)
    d = std::max(d, std::abs(a.values<float>()[i] - b.values<float>()[i]));
  return d;
}

const fb::Model* Parse(const std::string& bytes) {
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_TRUE(fb::VerifyModelBuffer(v));
  return fb::GetModel(bytes.data());
}

std::vector<std::string> OpNames(const fb::Model* m) {
  std::vector<std::string> names;
  for (const fb::Operator* op : *m->subgraphs()->Get(0)->operators())
    names.push_back(TfliteOpName(static_cast<int>(m->operator_codes()->Get(op->opcode_index())->builtin_code())));
  return names;
}

TEST(TfliteTest, Float32RoundTripComputesTheOriginalGraph) {
  const graph::Model m = SmallCnn();
  auto bytes = ExportTflite(m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->substr(4, 4), "TFL3");
  const fb::Model* fm = Parse(*bytes);
  // The layout transposes disappear; the unusual padding becomes a PAD; Add and Relu fuse into the dense layer.
  EXPECT_EQ(OpNames(fm),
            (std::vector<std::string>{"MUL", "CONV_2D", "PAD", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "CONV_2D",
                                      "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "FULLY_CONNECTED", "SOFTMAX"}));
  ASSERT_EQ(fm->signature_defs()->size(), 1u);
  const fb::SignatureDef* sig = fm->signature_defs()->Get(0);
  EXPECT_EQ(sig->signature_key()->str(), "serving_default");
  EXPECT_EQ(sig->inputs()->Get(0)->name()->str(), "image");
  EXPECT_EQ(sig->outputs()->Get(1)->name()->str(), "probabilities");
  // The input keeps its free batch dimension.
  const fb::Tensor* in = fm->subgraphs()->Get(0)->tensors()->Get(fm->subgraphs()->Get(0)->inputs()->Get(0));
  EXPECT_EQ(std::vector<int>(in->shape_signature()->begin(), in->shape_signature()->end()),
            (std::vector<int>{-1, 9, 9, 2}));

  auto back = ImportTflite(*bytes, "cnn.tflite");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const Tensor x = Random({3, 9, 9, 2}, 42, 1.0f);
  std::vector<Tensor> want = RunModel(m, "image", x), got = RunModel(*back, "image", x);
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_LT(MaxAbsDiff(want[0], got[0]), 1e-5f);
  EXPECT_LT(MaxAbsDiff(want[1], got[1]), 1e-6f);
}

TEST(TfliteTest, Int8ExportFollowsTflitesQuantizationSpec) {
  graph::Model m = SmallCnn();
  ASSERT_TRUE(TflitePrepare(&m).ok());
  TfliteExportOptions o;
  o.int8 = true;
  for (const std::string& v : TfliteCalibrationValues(m)) o.ranges[v] = {-2.0f, 3.0f};
  auto bytes = ExportTflite(m, o);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const fb::Model* fm = Parse(*bytes);
  const fb::SubGraph* sg = fm->subgraphs()->Get(0);
  std::vector<std::string> ops = OpNames(fm);
  EXPECT_EQ(ops.front(), "QUANTIZE");
  EXPECT_EQ(ops.back(), "DEQUANTIZE");
  // The signature stays float32.
  EXPECT_EQ(sg->tensors()->Get(sg->inputs()->Get(0))->type(), fb::TensorType::FLOAT32);
  int convs = 0;
  for (const fb::Operator* op : *sg->operators()) {
    const std::string name =
        TfliteOpName(static_cast<int>(fm->operator_codes()->Get(op->opcode_index())->builtin_code()));
    if (name != "CONV_2D" && name != "DEPTHWISE_CONV_2D" && name != "FULLY_CONNECTED") continue;
    const fb::Tensor* x = sg->tensors()->Get(op->inputs()->Get(0));
    const fb::Tensor* w = sg->tensors()->Get(op->inputs()->Get(1));
    const fb::Tensor* b = sg->tensors()->Get(op->inputs()->Get(2));
    EXPECT_EQ(x->type(), fb::TensorType::INT8);
    EXPECT_EQ(x->quantization()->scale()->size(), 1u);
    EXPECT_EQ(w->type(), fb::TensorType::INT8) << name;
    EXPECT_EQ(b->type(), fb::TensorType::INT32) << name;
    const size_t channels =
        name == "FULLY_CONNECTED" ? 1u : static_cast<size_t>(w->shape()->Get(name == "CONV_2D" ? 0 : 3));
    ASSERT_EQ(w->quantization()->scale()->size(), channels) << name;
    EXPECT_EQ(w->quantization()->quantized_dimension(), name == "DEPTHWISE_CONV_2D" ? 3 : 0);
    for (size_t c = 0; c < channels; ++c) {
      EXPECT_EQ(w->quantization()->zero_point()->Get(c), 0);
      EXPECT_NEAR(b->quantization()->scale()->Get(c),
                  x->quantization()->scale()->Get(0) * w->quantization()->scale()->Get(c), 1e-12);
    }
    // Symmetric weights: -128 unused.
    const auto* data = fm->buffers()->Get(w->buffer())->data();
    for (uint8_t byte : *data) EXPECT_NE(static_cast<int8_t>(byte), -128);
    convs += name != "FULLY_CONNECTED";
  }
  EXPECT_EQ(convs, 3);
  // The activation range [-2, 3] -> scale 5/255, zero point round(-128 + 2 / (5/255)) = -26.
  const fb::Tensor* r1 = nullptr;
  for (const fb::Tensor* t : *sg->tensors())
    if (t->name()->str() == "r1") r1 = t;
  ASSERT_NE(r1, nullptr);
  EXPECT_NEAR(r1->quantization()->scale()->Get(0), 5.0f / 255.0f, 1e-7);
  EXPECT_EQ(r1->quantization()->zero_point()->Get(0), -26);
  // The reader serves float32 models only, and says so.
  auto back = ImportTflite(*bytes, "q.tflite");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("quantized int8 activation"), std::string::npos) << back.status().message();
}

TEST(TfliteTest, Int8ExportWithoutRangesFailsNamingTheValue) {
  TfliteExportOptions o;
  o.int8 = true;
  auto bytes = ExportTflite(SmallCnn(), o);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("no calibrated range for 'image'"), std::string::npos)
      << bytes.status().message();
}

TEST(TfliteTest, ExportOfAnUnmappedOpNamesTheNode) {
  graph::Model m = SmallCnn();
  m.graph.nodes.back().op_type = "LogSoftmax";
  auto bytes = ExportTflite(m);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bytes.status().message().find("no TFLite mapping for node 'probabilities' (LogSoftmax)"), std::string::npos)
      << bytes.status().message();
}

std::string TestData() {
  const char* src = std::getenv("STRATA_SOURCE_DIR");
  const std::string dir = std::string(src ? src : ".") + "/../shared/testdata/tf-serving";
  return std::filesystem::exists(dir) ? dir : "";
}

TEST(TfliteTest, TfServingsHalfPlusTwoAnswersLikeItsSavedModel) {
  const std::string data = TestData();
  if (data.empty()) GTEST_SKIP() << "../shared/testdata/tf-serving is not present";
  for (const char* name : {"saved_model_half_plus_two_tflite", "saved_model_half_plus_two_tflite_with_sigdef"}) {
    SCOPED_TRACE(name);
    auto m = LoadTflite(data + "/" + name + "/00000123/model.tflite");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_EQ(m->graph.inputs.size(), 1u);
    // The converter fixed the shape at [1,1] and wrote no shape_signature; TFLite resizes inputs per request.
    EXPECT_FALSE(m->graph.inputs[0].shape.rank_known);
    std::vector<Tensor> y = RunModel(*m, m->graph.inputs[0].name, Tensor::FromVector<float>({1, 2, 5}));
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].ToVector<float>(), (std::vector<float>{2.5f, 3.0f, 4.5f}));
    EXPECT_EQ(m->graph.outputs[0].name, "y");
    // The with_sigdef file names its input tensor "tflite_input"; its SignatureDef (TF Serving's
    // signature_defs_metadata) aliases it "x", as the SavedModel's signature does.
    EXPECT_EQ(m->graph.inputs[0].name, "x");
  }
}

void ExpectError(const std::string& bytes, const std::string& want) {
  auto m = ImportTflite(bytes, "bad.tflite");
  ASSERT_FALSE(m.ok()) << "accepted: " << want;
  EXPECT_NE(m.status().message().find("bad.tflite"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find(want), std::string::npos) << m.status().message();
}

TEST(TfliteTest, DamagedFilesFailClearly) {
  auto bytes = ExportTflite(SmallCnn());
  ASSERT_TRUE(bytes.ok());
  ExpectError("", "shorter than a flatbuffer header");
  std::string wrong = *bytes;
  wrong.replace(4, 4, "TFL2");
  ExpectError(wrong, "expected the file identifier \"TFL3\" at bytes 4-7, found \"TFL2\"");
  // Every truncation is caught by the verifier (or the header check), never read past the end.
  for (size_t n = 8; n < bytes->size(); n += std::max<size_t>(1, bytes->size() / 997)) {
    auto m = ImportTflite(std::string_view(*bytes).substr(0, n), "bad.tflite");
    ASSERT_FALSE(m.ok()) << n;
    EXPECT_NE(m.status().message().find("corrupt or truncated"), std::string::npos) << m.status().message();
  }
  // Flipped bytes: verified or refused, never a crash.
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string b = *bytes;
    for (int k = 0; k < 4; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    (void)ImportTflite(b, "bad.tflite");
  }
}

// A one-op model built with the flatbuffers builder: `code` applied to a float32 [2,3] input.
std::string OneOpModel(fb::BuiltinOperator code, const char* custom = nullptr, int input_index = 0) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<int32_t> shape = {2, 3};
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors = {
      fb::CreateTensorDirect(b, &shape, fb::TensorType::FLOAT32, 0, "x"),
      fb::CreateTensorDirect(b, &shape, fb::TensorType::FLOAT32, 0, "y")};
  std::vector<int32_t> ins = {input_index}, outs = {1};
  std::vector<flatbuffers::Offset<fb::Operator>> ops = {fb::CreateOperatorDirect(b, 0, &ins, &outs)};
  std::vector<int32_t> sg_in = {0}, sg_out = {1};
  std::vector<flatbuffers::Offset<fb::SubGraph>> subgraphs = {
      fb::CreateSubGraphDirect(b, &tensors, &sg_in, &sg_out, &ops, "main")};
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes = {
      fb::CreateOperatorCodeDirect(b, static_cast<int8_t>(std::min(static_cast<int>(code), 127)), custom, 1, code)};
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {fb::CreateBuffer(b)};
  fb::FinishModelBuffer(b, fb::CreateModelDirect(b, 3, &codes, &subgraphs, "test", &buffers));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TEST(TfliteTest, UnsupportedOpsAndBadIndicesAreNamed) {
  // Sanity: the same model with RELU reads and runs.
  auto ok = ImportTflite(OneOpModel(fb::BuiltinOperator::RELU), "ok.tflite");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  std::vector<Tensor> y = RunModel(*ok, "x", Tensor::FromVector<float>({-1, 2, -3, 4, 0, 6}, Shape{2, 3}));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].ToVector<float>(), (std::vector<float>{0, 2, 0, 4, 0, 6}));

  ExpectError(OneOpModel(fb::BuiltinOperator::TRANSPOSE_CONV), "operator 0 (TRANSPOSE_CONV) has no strata mapping");
  ExpectError(OneOpModel(fb::BuiltinOperator::GELU), "(GELU) has no strata mapping");
  ExpectError(OneOpModel(static_cast<fb::BuiltinOperator>(200)), "(builtin operator 200) has no strata mapping");
  ExpectError(OneOpModel(static_cast<fb::BuiltinOperator>(32), "MyOp"), "custom operator 'MyOp'");
  ExpectError(OneOpModel(fb::BuiltinOperator::RELU, nullptr, 9), "refers to tensor 9, but the subgraph has 2 tensors");
}

}  // namespace
}  // namespace strata::tf
