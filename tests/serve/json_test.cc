// REST JSON bodies against specs/tf-serving.md §1.5-1.8: request formats into tensors, error messages verbatim,
// and response layouts and number formatting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "../address_space_limit.h"
#include "json_compare.h"
#include "serve/api/json_codec.h"
#include "serve/api/kserve_codec.h"
#include "serve/core/signature.h"

namespace strata::serve {
namespace {

SignatureDef Sig(std::vector<std::pair<std::string, DType>> inputs, std::vector<std::pair<std::string, DType>> outputs = {}) {
  SignatureDef s;
  for (auto& [n, d] : inputs) s.inputs.push_back({n, n, d, PartialShape::Unknown()});
  for (auto& [n, d] : outputs) s.outputs.push_back({n, n, d, PartialShape::Unknown()});
  return s;
}

struct Parsed {
  Status status;
  NamedTensors inputs;
  bool row = false;
};

Parsed ParsePredict(const std::string& body, const SignatureDef& sig) {
  Parsed p;
  JsonRequest req;
  p.status = req.Parse(body);
  if (p.status.ok()) p.status = req.PredictInputs(sig, &p.inputs, &p.row);
  return p;
}

// A body the parser has no memory for is RESOURCE_EXHAUSTED (HTTP 429: the server's state, retry), not a 400 that
// blames the request (the reliability battery saw "JSON Parse error: Error allocating memory" as 400). In a child
// process whose address space is limited to just above what it uses.
TEST(JsonRequestTest, OutOfMemoryIsResourceExhaustedNotBadRequest) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: an RLIMIT_AS test cannot run under it";
#endif
  std::string body = "{\"instances\": [";
  for (int i = 0; i < (1 << 22); ++i) body += i ? ",1.5" : "1.5";
  body += "]}";
  const int code = strata::testing::RunWithAddressSpaceHeadroom(8 << 20, [&] {
    JsonRequest req;
    const Status st = req.Parse(body);
    return st.code() == StatusCode::kResourceExhausted ? 0 : st.ok() ? 1 : 2;
  });
  EXPECT_EQ(code, 0) << "1: parsed anyway (limit too high), 2: another error, 3: no limit set, 4: threw, <0: signal";
}

TEST(JsonRequestTest, RowFormatStacksInstances) {
  Parsed p = ParsePredict(R"({"instances": [1.0, 2.0, 5.0]})", Sig({{"x", DType::kFloat32}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_TRUE(p.row);
  ASSERT_EQ(p.inputs.size(), 1u);
  EXPECT_EQ(p.inputs[0].first, "x");
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{3}));
  EXPECT_EQ(p.inputs[0].second.ToVector<float>(), (std::vector<float>{1, 2, 5}));
  // Nested instances: shape [len(instances)] + shape(element); integers are accepted for floats.
  p = ParsePredict(R"({"signature_name": "serving_default", "instances": [[5.1, 3.5, 1.4, 0.2], [6, 3, 5, 2]]})",
                   Sig({{"features", DType::kFloat32}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{2, 4}));
  EXPECT_FLOAT_EQ(p.inputs[0].second.ToVector<float>()[4], 6.0f);
  // Objects keyed by input name, even with a single input.
  p = ParsePredict(R"({"instances": [{"x": [1, 2]}, {"x": [3, 4]}]})", Sig({{"x", DType::kInt64}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{2, 2}));
  EXPECT_EQ(p.inputs[0].second.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(JsonRequestTest, RowFormatWithSeveralInputsAndBinary) {
  Parsed p = ParsePredict(R"({"instances": [{"text": "hello", "lang": "en"}, {"text": "hallo", "lang": "de"}]})",
                          Sig({{"text", DType::kString}, {"lang", DType::kString}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].second.ToVector<std::string>(), (std::vector<std::string>{"hello", "hallo"}));
  EXPECT_EQ(p.inputs[1].second.ToVector<std::string>(), (std::vector<std::string>{"en", "de"}));
  p = ParsePredict(R"({"instances": [{"b64": "iVBORw0KGgo="}, {"b64": "R0lGODlh"}]})", Sig({{"image", DType::kString}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.inputs[0].second.ToVector<std::string>()[0], std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(p.inputs[0].second.ToVector<std::string>()[1], "GIF89a");
}

TEST(JsonRequestTest, ColumnarFormat) {
  Parsed p = ParsePredict(R"({"inputs": [1.0, 2.0]})", Sig({{"x", DType::kFloat32}}));
  ASSERT_TRUE(p.status.ok());
  EXPECT_FALSE(p.row);
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{2}));
  p = ParsePredict(R"({"inputs": {"a": [[1, 2]], "b": 7, "extra": "ignored"}})",
                   Sig({{"a", DType::kFloat64}, {"b", DType::kInt32}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{1, 2}));
  EXPECT_EQ(p.inputs[1].second.shape(), (Shape{}));  // a bare scalar is rank 0
  EXPECT_EQ(p.inputs[1].second.ToVector<int32_t>()[0], 7);
  p = ParsePredict(R"({"inputs": []})", Sig({{"x", DType::kFloat32}}));
  ASSERT_TRUE(p.status.ok());
  EXPECT_EQ(p.inputs[0].second.shape(), (Shape{0}));
}

TEST(JsonRequestTest, NonFiniteTokensAndHalfPrecision) {
  Parsed p = ParsePredict(R"({"instances": [NaN, Infinity, -Infinity, 1]})", Sig({{"x", DType::kFloat32}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  auto v = p.inputs[0].second.ToVector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], INFINITY);
  EXPECT_EQ(v[2], -INFINITY);
  // float16/bfloat16 inputs (TF Serving rejects them, issue #1639).
  p = ParsePredict(R"({"inputs": [0.5, 2]})", Sig({{"h", DType::kFloat16}}));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(static_cast<float>(p.inputs[0].second.data<Float16>()[0]), 0.5f);
  // DT_FLOAT rounds to float32 (the spec's documented example).
  p = ParsePredict(R"({"inputs": [1435774380]})", Sig({{"x", DType::kFloat32}}));
  EXPECT_EQ(p.inputs[0].second.ToVector<float>()[0], 1435774336.0f);
}

void ExpectError(const std::string& body, const SignatureDef& sig, StatusCode code, const std::string& message) {
  Parsed p = ParsePredict(body, sig);
  EXPECT_EQ(p.status.code(), code) << body << " -> " << p.status.ToString();
  EXPECT_EQ(p.status.message().substr(0, message.size()), message) << body;
}

TEST(JsonRequestTest, ErrorsAsTfServingWordsThem) {
  const SignatureDef one = Sig({{"x", DType::kFloat32}});
  const SignatureDef two = Sig({{"a", DType::kFloat32}, {"b", DType::kFloat32}});
  ExpectError("", one, StatusCode::kInvalidArgument, "JSON Parse error: The document is empty");
  ExpectError("   ", one, StatusCode::kInvalidArgument, "JSON Parse error: The document is empty");
  ExpectError("{\"instances\": [1,", one, StatusCode::kInvalidArgument, "JSON Parse error: ");
  ExpectError("[1, 2]", one, StatusCode::kInvalidArgument, "JSON Parse error: ");
  ExpectError(R"({"instances": [1], "inputs": [1]})", one, StatusCode::kInvalidArgument,
              "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist");
  ExpectError(R"({"x": [1]})", one, StatusCode::kInvalidArgument, "Missing 'inputs' or 'instances' key");
  ExpectError(R"({"instances": [[1, 2], [3, 4]]})", two, StatusCode::kInvalidArgument,
              "instances is a plain list, but expecting list of objects as multiple input tensors required as per "
              "tensorinfo_map");
  ExpectError(R"({"inputs": [1, 2]})", two, StatusCode::kInvalidArgument,
              "inputs is a plain value/list, but expecting an object as multiple input tensors required as per "
              "tensorinfo_map");
  ExpectError(R"({"inputs": {"a": [1]}})", two, StatusCode::kInvalidArgument, "Missing named input: b in 'inputs' object.");
  ExpectError(R"({"inputs": ["a"]})", one, StatusCode::kInvalidArgument,
              "JSON Value: \"a\" Type: String is not of expected type: float (input 'x')");
  ExpectError(R"({"inputs": {"i": [1.0]}})", Sig({{"i", DType::kInt32}}), StatusCode::kInvalidArgument,
              "JSON Value: 1.0 Type: Number is not of expected type: int32 (input 'i')");
  ExpectError(R"({"inputs": [0, 1]})", Sig({{"flag", DType::kBool}}), StatusCode::kInvalidArgument,
              "JSON Value: 0 Type: Number is not of expected type: bool");
  ExpectError(R"({"inputs": [{"b64": "%%%"}]})", Sig({{"s", DType::kString}}), StatusCode::kInvalidArgument,
              "Unable to base64 decode");
  ExpectError(R"({"inputs": [[1, 2], [3]]})", one, StatusCode::kInvalidArgument, "Encountered list at unexpected size");
  ExpectError(R"({"instances": [[1, 2], [3]]})", one, StatusCode::kInvalidArgument,
              "Failed to process element: 1 of 'instances' list. Error: Expecting shape [2] but got: [1]");
  ExpectError(R"({"instances": [{"a": 1, "b": 2}, {"a": 1, "c": 2}]})", two, StatusCode::kInvalidArgument,
              "Failed to process element: 1 of 'instances' list. JSON object: {\"a\":1,\"c\":2} keys must be equal to: a,b");
  ExpectError(R"({"inputs": [300]})", Sig({{"u", DType::kUInt8}}), StatusCode::kInvalidArgument,
              "JSON Value: 300 is out of range for type: uint8 (input 'u')");
  JsonRequest req;
  ASSERT_TRUE(req.Parse(R"({"signature_name": 3, "instances": [1]})").ok());
  EXPECT_EQ(req.SignatureName().status().message(), "'signature_name' key must be a string value.");
}

TEST(JsonRequestTest, ExamplesTypedByJsonLexicalType) {
  JsonRequest req;
  ASSERT_TRUE(req.Parse(R"({"context": {"country": "FR"},
                            "examples": [{"age": 31, "spend": 12.5, "tags": ["a", {"b64": "Yg=="}], "ok": true}]})")
                  .ok());
  ExampleInput in;
  ASSERT_TRUE(req.Examples("regress", &in).ok());
  ASSERT_EQ(in.examples.size(), 1u);
  const Example& ex = in.examples[0];
  EXPECT_EQ(ex.at("age").kind, Feature::Kind::kInt64);
  EXPECT_EQ(ex.at("age").ints, (std::vector<int64_t>{31}));
  EXPECT_EQ(ex.at("spend").kind, Feature::Kind::kFloat);
  EXPECT_EQ(ex.at("tags").bytes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ex.at("ok").ints, (std::vector<int64_t>{1}));
  ASSERT_TRUE(in.context.has_value());
  EXPECT_EQ(in.context->at("country").bytes, (std::vector<std::string>{"FR"}));
  JsonRequest bad;
  ASSERT_TRUE(bad.Parse(R"({"examples": [{"f": [1, 1.5]}]})").ok());
  EXPECT_EQ(bad.Examples("classify", &in).message(), "Unexpected element type in feature: f expecting type: int64");
  JsonRequest missing;
  ASSERT_TRUE(missing.Parse(R"({"instances": []})").ok());
  EXPECT_EQ(missing.Examples("classify", &in).message(),
            "When method is classify, key 'examples' is expected and was not found");
  JsonRequest nul;
  ASSERT_TRUE(nul.Parse(R"({"examples": [{"f": null}]})").ok());
  EXPECT_EQ(nul.Examples("classify", &in).code(), StatusCode::kInvalidArgument);
}

std::string Float(float v) {
  std::string s;
  AppendJsonFloat(&s, v);
  return s;
}

// ---- NumericPredictBody: the one-pass reader for the common Predict body ----

// Both readers on one body: the one-pass reader must accept it and give JsonRequest's tensor, bit for bit.
void ExpectSameAsJsonRequest(const std::string& body, const SignatureDef& sig) {
  SCOPED_TRACE(body.substr(0, 200));
  Parsed dom = ParsePredict(body, sig);
  ASSERT_TRUE(dom.status.ok()) << dom.status.message();
  ASSERT_EQ(dom.inputs.size(), 1u);
  NumericPredictBody fast;
  ASSERT_TRUE(fast.Parse(body));
  NamedTensors inputs;
  ASSERT_TRUE(fast.Inputs(sig, &inputs));
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(fast.row_format(), dom.row);
  EXPECT_EQ(inputs[0].first, dom.inputs[0].first);
  const Tensor& a = inputs[0].second;
  const Tensor& b = dom.inputs[0].second;
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape()) << a.shape().ToString() << " vs " << b.shape().ToString();
  ASSERT_EQ(a.byte_size(), b.byte_size());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0);
}

TEST(NumericPredictBodyTest, GivesJsonRequestsTensor) {
  const std::vector<std::string> bodies = {
      R"({"instances": [[1.5, 2.25], [3, -4]]})",
      R"({"instances": [1, 2, 3]})",
      R"( { "signature_name" : "serving_default" , "instances" : [ [ [0.1 ] , [ 0.2 ] ] ] } )",
      R"({"instances": [[[0.5234,0.1]]], "signature_name": "serving_default"})",
      "{\n\t\"inputs\": [[1e3, -2.5E-3], [1E+2, 0.0]]\r\n}",
      R"({"inputs": 7.25})",
      R"({"inputs": [0]})",
      R"({"inputs": [123456789012345678, -987654321098765432, 9007199254740993]})",
      R"({"inputs": [0.1234567890123456789, 3.141592653589793238462643383279, 1e22, 1e23, 4.9e-300]})",
      R"({"inputs": [1.7976931348623157e308, 2.2250738585072014e-298, 123456.789e-3, 0.000001]})",
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const std::string& body : bodies) ExpectSameAsJsonRequest(body, Sig({{"x", dtype}}));
  NumericPredictBody fast;
  ASSERT_TRUE(fast.Parse(R"({"signature_name": "other", "inputs": [1]})"));
  EXPECT_EQ(fast.signature_name(), "other");
  EXPECT_FALSE(fast.row_format());
}

// Random numbers printed the ways clients print them (fixed, shortest, 17 digits, exponents, integers).
TEST(NumericPredictBodyTest, RandomNumbersMatchJsonRequest) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> scale(-40, 40), format(0, 6), precision(1, 17);
  for (int round = 0; round < 20; ++round) {
    std::string body = "{\"inputs\": [";
    for (int i = 0; i < 500; ++i) {
      const double v = unit(rng) * std::pow(10.0, scale(rng));
      char buf[64];
      switch (format(rng)) {
        case 0:
          std::snprintf(buf, sizeof(buf), "%.4f", v);
          break;
        case 1:
          std::snprintf(buf, sizeof(buf), "%.17g", v);
          break;
        case 2:
          std::snprintf(buf, sizeof(buf), "%.*g", precision(rng), v);
          break;
        case 3:
          std::snprintf(buf, sizeof(buf), "%.*e", precision(rng), v);
          break;
        case 4:
          std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(std::fmod(v, 1e15)));
          break;
        case 5:
          std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(static_cast<float>(v)));
          break;
        default:
          std::snprintf(buf, sizeof(buf), "%.6f", v / 1e6);
          break;
      }
      // Fixed notation of a large number is longer than the one-pass reader's 32 characters: printed shortest.
      if (std::strlen(buf) > 32) std::snprintf(buf, sizeof(buf), "%.17g", v);
      std::string token = buf;
      // JSON has no "-0" forms that print as zero the DOM reader keeps the sign of; leave those to other tests.
      const double printed = std::strtod(buf, nullptr);
      if (printed == 0) token = "0";
      if (!std::isfinite(printed)) token = "1.5";  // a float overflowed: not a JSON number
      if (i) body += ",";
      body += token;
    }
    body += "]}";
    ExpectSameAsJsonRequest(body, Sig({{"x", DType::kFloat64}}));
    ExpectSameAsJsonRequest(body, Sig({{"x", DType::kFloat32}}));
  }
}

// Everything else is declined, so that JsonRequest reads it (and words the error).
TEST(NumericPredictBodyTest, DeclinesOtherAndMalformedBodies) {
  const std::vector<std::string> declined = {
      "",
      "   ",
      "[1]",
      "{}",
      R"({"instances": []})",
      R"({"instances": [[]]})",
      R"({"instances": 5})",
      R"({"instances": [1, 2,]})",
      R"({"instances": [1 2]})",
      R"({"instances": [01]})",
      R"({"instances": [1.]})",
      R"({"instances": [.5]})",
      R"({"instances": [+1]})",
      R"({"instances": [1e]})",
      R"({"instances": [-]})",
      R"({"instances": [[1, 2], [3]]})",
      R"({"instances": [[1, 2], [3, 4, 5]]})",
      R"({"instances": [[1], 2]})",
      R"({"instances": [1, [2]]})",
      R"({"instances": [NaN]})",
      R"({"instances": [Infinity]})",
      R"({"instances": ["1"]})",
      R"({"instances": [{"x": 1}]})",
      R"({"instances": [{"b64": "AA=="}]})",
      R"({"instances": [true]})",
      R"({"instances": [null]})",
      R"({"instances": [-0]})",
      R"({"instances": [-0.0]})",
      R"({"instances": [1e400]})",
      R"({"instances": [1e-400]})",
      R"({"instances": [1234567890123456789]})",
      R"({"instances": [1], "inputs": [1]})",
      R"({"instances": [1], "instances": [2]})",
      R"({"instances": [1], "other": 1})",
      R"({"inst\u0061nces": [1]})",
      R"({"signature_name": 3, "instances": [1]})",
      R"({"signature_name": "a\"b", "instances": [1]})",
      R"({"signature_name": "x"})",
      R"({"instances": [1]} x)",
      R"({"instances": [1]}})",
      R"({"instances": [1])",
      R"({"instances": [1)",
      "{\"signature_name\": \"\xc3\xa9\", \"instances\": [1]}",
      std::string("{\"instances\": [1]}\0", 19),
      std::string(100, '[') + "1" + std::string(100, ']'),
  };
  for (const std::string& body : declined) {
    NumericPredictBody fast;
    EXPECT_FALSE(fast.Parse(body)) << body;
  }
  // Accepted text, but not a signature it serves: one float input only.
  NumericPredictBody fast;
  ASSERT_TRUE(fast.Parse(R"({"instances": [1, 2]})"));
  NamedTensors inputs;
  EXPECT_FALSE(fast.Inputs(Sig({{"x", DType::kInt64}}), &inputs));
  EXPECT_FALSE(fast.Inputs(Sig({{"x", DType::kFloat16}}), &inputs));
  EXPECT_FALSE(fast.Inputs(Sig({{"a", DType::kFloat32}, {"b", DType::kFloat32}}), &inputs));
  EXPECT_TRUE(inputs.empty());
}

TEST(JsonWriterTest, FloatsShortestRoundTrip) {
  EXPECT_EQ(Float(3.0f), "3.0");
  EXPECT_EQ(Float(2.5f), "2.5");
  EXPECT_EQ(Float(555557.5f), "555557.5");
  EXPECT_EQ(Float(1e-07f), "1e-07");
  EXPECT_EQ(Float(0.1f), "0.1");
  EXPECT_EQ(Float(NAN), "NaN");
  EXPECT_EQ(Float(-INFINITY), "-Infinity");
  std::string d;
  AppendJsonDouble(&d, 0.1);
  EXPECT_EQ(d, "0.1");
  // Every float printed reads back to itself.
  for (float v : {1.0f / 3, 123456789.0f, 1e-38f, 3.4e38f, -0.0f, 7.006492e-45f}) {
    EXPECT_EQ(std::strtof(Float(v).c_str(), nullptr), v) << Float(v);
  }
}

TEST(JsonWriterTest, PredictResponses) {
  Tensor y = Tensor::FromVector<float>({2.5f, 3.0f, 4.5f});
  EXPECT_EQ(*JsonPredictResponse({{"y", y}}, true), R"({"predictions": [2.5,3.0,4.5]})");
  EXPECT_EQ(*JsonPredictResponse({{"y", y}}, false), R"({"outputs": [2.5,3.0,4.5]})");
  Tensor probs = Tensor::FromVector<float>({0.97f, 0.02f, 0.01f, 0.01f, 0.1f, 0.89f}, Shape{2, 3});
  Tensor ids = Tensor::FromVector<int64_t>({0, 2}, Shape{2, 1});
  testing::ExpectJsonEq(*JsonPredictResponse({{"probabilities", probs}, {"class_ids", ids}}, true),
                        R"({"predictions": [
                             {"probabilities": [0.97, 0.02, 0.01], "class_ids": [0]},
                             {"probabilities": [0.01, 0.1, 0.89], "class_ids": [2]}]})");
  Tensor probs1 = Tensor::FromVector<float>({0.97f, 0.02f, 0.01f}, Shape{1, 3});
  Tensor ids1 = Tensor::FromVector<int64_t>({0}, Shape{1, 1});
  testing::ExpectJsonEq(*JsonPredictResponse({{"probabilities", probs1}, {"class_ids", ids1}}, false),
                        R"({"outputs": {"probabilities": [[0.97, 0.02, 0.01]], "class_ids": [[0]]}})");
  Tensor tags = Tensor::FromVector<std::string>({std::string("\x00\x01", 2), std::string("\x02\x03", 2)});
  EXPECT_EQ(*JsonPredictResponse({{"tags_bytes", tags}}, true), R"({"predictions": [{"b64": "AAE="},{"b64": "AgM="}]})");
  // Row format needs a batch dimension on every output (issue #1047): name the output, suggest the columnar form.
  auto bad = JsonPredictResponse({{"y", y}, {"count", Tensor::Scalar<int64_t>(3)}}, true);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("Tensor name: count has no shape information", 0), 0u);
  EXPECT_NE(bad.status().message().find("{\"inputs\": ...}"), std::string::npos);
  bad = JsonPredictResponse({{"y", y}, {"z", Tensor::FromVector<float>({1, 2})}}, true);
  EXPECT_EQ(bad.status().message().rfind("Tensor name: z has inconsistent batch size: 2 expecting: 3", 0), 0u);
}

TEST(JsonWriterTest, StatusMetadataAndErrors) {
  testing::ExpectJsonEq(JsonModelStatus({{3, VersionState::kEnd, InvalidArgumentError("Could not parse model file")},
                                         {2, VersionState::kAvailable, Status::OK()}}),
                        R"({"model_version_status": [
                             {"version": "3", "state": "END",
                              "status": {"error_code": "INVALID_ARGUMENT", "error_message": "Could not parse model file"}},
                             {"version": "2", "state": "AVAILABLE",
                              "status": {"error_code": "OK", "error_message": ""}}]})");
  SignatureMap sigs;
  SignatureDef s;
  s.inputs.push_back({"features", "features", DType::kFloat32, PartialShape::Of({Dim(-1), Dim(4)})});
  s.outputs.push_back({"probabilities", "probabilities", DType::kFloat32, PartialShape::Of({Dim::Symbol("n"), Dim(3)})});
  sigs["serving_default"] = s;
  testing::ExpectJsonEq(JsonModelMetadata("iris", 2, sigs), R"(
    {"model_spec":{"name":"iris","signature_name":"","version":"2"},
     "metadata":{"signature_def":{"signature_def":{
       "serving_default":{
         "inputs":{"features":{"dtype":"DT_FLOAT","tensor_shape":{"dim":[{"size":"-1","name":""},{"size":"4","name":""}],"unknown_rank":false},"name":"features"}},
         "outputs":{"probabilities":{"dtype":"DT_FLOAT","tensor_shape":{"dim":[{"size":"-1","name":""},{"size":"3","name":""}],"unknown_rank":false},"name":"probabilities"}},
         "method_name":"tensorflow/serving/predict",
         "defaults":{}}}}}})");
  EXPECT_EQ(JsonError("say \"hi\"\n"), R"({"error": "say \"hi\"\n"})");
  ClassifyResponse c;
  c.classifications = {{{"a", 0.5f}, {"b", 0.25f}}};
  EXPECT_EQ(JsonClassifyResponse(c), R"({"results": [[["a", 0.5], ["b", 0.25]]]})");
  RegressResponse r;
  r.values = {0.173f};
  EXPECT_EQ(JsonRegressResponse(r), R"({"results": [0.173]})");
}

TEST(JsonWriterTest, Base64RoundTrip) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  std::string out;
  EXPECT_TRUE(Base64Decode("Zm9vYg==", &out));
  EXPECT_EQ(out, "foob");
  EXPECT_TRUE(Base64Decode("Zm9vYg", &out));  // missing padding
  EXPECT_EQ(out, "foob");
  EXPECT_FALSE(Base64Decode("Z", &out));
  EXPECT_FALSE(Base64Decode("Zm9v!", &out));
}

}  // namespace
}  // namespace strata::serve

// ---- Open Inference Protocol (KServe v2) bodies (serve/api/kserve_codec.h) ----

namespace strata::serve {
namespace {

std::string LengthPrefixed(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += s;
  }
  return out;
}

TEST(KserveCodec, DatatypeNamesRoundTrip) {
  for (const char* name : {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
                           "FP32", "FP64", "BYTES", "BF16"}) {
    auto dtype = DTypeFromV2Datatype(name);
    ASSERT_TRUE(dtype.ok()) << name;
    EXPECT_EQ(V2DatatypeName(*dtype), name);
  }
  auto bad = DTypeFromV2Datatype("FLOAT32");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unknown datatype 'FLOAT32'; expected one of BOOL, UINT8"), std::string::npos)
      << bad.status().message();
}

TEST(KserveCodec, JsonDataOfEveryKind) {
  auto r = ParseV2InferRequest(
      R"({"inputs": [{"name": "i", "shape": [2, 2], "datatype": "INT64", "data": [[1, -2], [3, 4]]},
                     {"name": "b", "shape": [3], "datatype": "BOOL", "data": [true, false, true]},
                     {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["ab", {"b64": "AAE="}]},
                     {"name": "h", "shape": [1], "datatype": "FP16", "data": [1.5]},
                     {"name": "u", "shape": [], "datatype": "UINT8", "data": [7]}]})",
      "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->inputs.size(), 5u);
  EXPECT_EQ(r->inputs[0].second.shape(), (Shape{2, 2}));
  EXPECT_EQ(r->inputs[0].second.ToVector<int64_t>(), (std::vector<int64_t>{1, -2, 3, 4}));
  EXPECT_EQ(r->inputs[1].second.ToVector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(r->inputs[2].second.ToVector<std::string>(), (std::vector<std::string>{"ab", std::string("\0\1", 2)}));
  EXPECT_EQ(static_cast<float>(r->inputs[3].second.values<Float16>()[0]), 1.5f);
  EXPECT_EQ(r->inputs[4].second.rank(), 0);
  EXPECT_EQ(r->inputs[4].second.values<uint8_t>()[0], 7);
  EXPECT_TRUE(r->outputs.empty());
  EXPECT_FALSE(r->binary_data_output);

  auto range = ParseV2InferRequest(R"({"inputs": [{"name": "u", "shape": [1], "datatype": "UINT8", "data": [300]}]})",
                                   "");
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("input 'u' (UINT8): JSON Value: 300 is out of range"), std::string::npos)
      << range.status().message();
}

TEST(KserveCodec, BinaryDataOfEveryKind) {
  const int32_t ints[3] = {5, -6, 7};
  const std::string binary = std::string(reinterpret_cast<const char*>(ints), 12) + std::string("\1\0", 2) +
                             LengthPrefixed({"hello", ""});
  auto r = ParseV2InferRequest(
      R"({"inputs": [{"name": "i", "shape": [3], "datatype": "INT32", "parameters": {"binary_data_size": 12}},
                     {"name": "b", "shape": [2], "datatype": "BOOL", "parameters": {"binary_data_size": 2}},
                     {"name": "s", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": 13}}],
          "outputs": [{"name": "o1"}, {"name": "o2", "parameters": {"binary_data": false}}],
          "parameters": {"binary_data_output": true}})",
      binary);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].second.ToVector<int32_t>(), (std::vector<int32_t>{5, -6, 7}));
  EXPECT_EQ(r->inputs[1].second.ToVector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(r->inputs[2].second.ToVector<std::string>(), (std::vector<std::string>{"hello", ""}));
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_TRUE(r->outputs[0].binary);
  EXPECT_FALSE(r->outputs[1].binary);

  // BYTES: a length prefix cut short, a length past the end, and a count that does not fit the shape.
  auto bytes = [](const std::string& data, int shape) {
    return ParseV2InferRequest(StrCat(R"({"inputs": [{"name": "s", "shape": [)", shape,
                                      R"(], "datatype": "BYTES", "parameters": {"binary_data_size": )", data.size(),
                                      "}}]}"),
                               data);
  };
  auto cut = bytes(LengthPrefixed({"a"}) + std::string("\3\0", 2), 1);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("element 1 has a truncated 4-byte length prefix"), std::string::npos)
      << cut.status().message();
  auto small = bytes(std::string("\3\0", 2), 1);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("needs at least 4 bytes of binary data, its binary_data_size is 2"),
            std::string::npos)
      << small.status().message();
  // A huge shape is refused before anything is allocated.
  auto huge = ParseV2InferRequest(
      R"({"inputs": [{"name": "x", "shape": [1000000000, 1000000000], "datatype": "FP32", "data": [1]}]})", "");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("has more than 2^48 elements"), std::string::npos) << huge.status().message();
  huge = ParseV2InferRequest(R"({"inputs": [{"name": "x", "shape": [100000000000], "datatype": "FP32", "data": [1]}]})",
                             "");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("needs 100000000000 elements, 'data' holds 1"), std::string::npos)
      << huge.status().message();
  auto past = bytes(std::string("\x09\0\0\0ab", 6), 1);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("element 0 declares 9 bytes but only 2 remain"), std::string::npos)
      << past.status().message();
  auto count = bytes(LengthPrefixed({"a", "b", "c"}), 2);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("shape [2] needs 2 elements, the binary data holds 3"), std::string::npos)
      << count.status().message();
  auto both = ParseV2InferRequest(
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1],
                      "parameters": {"binary_data_size": 4}}]})",
      "abcd");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("has both 'data' and parameters.binary_data_size"), std::string::npos);
}

TEST(KserveCodec, ResponseJsonAndBinary) {
  NamedTensors outputs;
  outputs.emplace_back("scores", Tensor::FromVector<float>({0.5f, 2.0f}, Shape{1, 2}));
  outputs.emplace_back("labels", Tensor::FromVector<std::string>({"cat", "dog"}));
  size_t json_size = 0;
  std::string body = V2InferResponse("m", 3, "id\"1", outputs, {false, false}, &json_size);
  EXPECT_EQ(json_size, body.size());
  testing::ExpectJsonEq(body, R"({"model_name": "m", "model_version": "3", "id": "id\"1", "outputs": [
      {"name": "scores", "datatype": "FP32", "shape": [1, 2], "data": [0.5, 2.0]},
      {"name": "labels", "datatype": "BYTES", "shape": [2], "data": ["cat", "dog"]}]})");
  body = V2InferResponse("m", 3, "", outputs, {true, true}, &json_size);
  testing::ExpectJsonEq(body.substr(0, json_size), R"({"model_name": "m", "model_version": "3", "outputs": [
      {"name": "scores", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 8}},
      {"name": "labels", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 14}}]})");
  const float floats[2] = {0.5f, 2.0f};
  EXPECT_EQ(body.substr(json_size),
            std::string(reinterpret_cast<const char*>(floats), 8) + LengthPrefixed({"cat", "dog"}));
}

TEST(KserveCodec, ModelMetadataMarksUnknownDims) {
  SignatureDef sig;
  sig.inputs.push_back({"img", "img", DType::kUInt8, PartialShape::Of({Dim::Symbol("batch"), Dim(28), Dim()})});
  sig.outputs.push_back({"any", "any", DType::kBFloat16, PartialShape::Unknown()});
  testing::ExpectJsonEq(V2ModelMetadata("mnist", {2, 1}, "onnx", sig),
               R"({"name": "mnist", "versions": ["2", "1"], "platform": "onnx",
                   "inputs": [{"name": "img", "datatype": "UINT8", "shape": [-1, 28, -1]}],
                   "outputs": [{"name": "any", "datatype": "BF16", "shape": [-1]}]})");
}

}  // namespace
}  // namespace strata::serve
