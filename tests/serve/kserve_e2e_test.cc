// The Open Inference Protocol (KServe v2) routes of the REST port, end to end on the E2eTest server: health, server
// and model metadata, model readiness, infer with JSON and with the binary tensor data extension, and every kind of
// bad request answered with {"error": ...} and the protocol's status while the server stays up.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <vector>

#include "e2e_fixture.h"
#include "json_compare.h"

namespace strata::serve {
namespace {

using testing::ExpectJsonEqImpl;

// An error in the protocol's shape: `status`, application/json, exactly {"error": "..."} containing `needle`.
void ExpectV2Error(const bench::HttpResult& r, int status, const std::string& needle, int line) {
  SCOPED_TRACE(::testing::Message() << "from line " << line);
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "application/json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view message;
  ASSERT_FALSE(parser.parse(r.body).get(doc)) << r.body;
  ASSERT_TRUE(doc.is_object()) << r.body;
  EXPECT_EQ(doc.get_object().value().size(), 1u) << r.body;
  ASSERT_FALSE(doc["error"].get(message)) << r.body;
  EXPECT_NE(message.find(needle), std::string_view::npos) << "error: " << message << "\nwant it to contain: " << needle;
}
#define EXPECT_V2_ERROR(r, status, needle) ExpectV2Error(r, status, needle, __LINE__)

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST_F(E2eTest, V2HealthAndServerMetadata) {
  auto r = Rest("GET", "/v2/health/live");
  EXPECT_EQ(r.status, 200);
  ExpectJsonEq(r.body, R"({"live": true})");
  r = Rest("GET", "/v2/health/ready");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"ready": true})");
  r = Rest("GET", "/v2");
  EXPECT_EQ(r.status, 200);
  ExpectJsonEq(r.body, R"({"name": "strata", "version": "0.1.0", "extensions": ["binary_tensor_data"]})");
  EXPECT_V2_ERROR(Rest("POST", "/v2/health/live"), 405, "use GET");
  EXPECT_V2_ERROR(Rest("GET", "/v2/nothing"), 404, "no Open Inference Protocol route GET /v2/nothing");
}

TEST_F(E2eTest, V2ModelMetadata) {
  const char* want = R"({"name": "iris", "versions": ["2", "1"], "platform": "onnx",
      "inputs": [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}],
      "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 3]},
                  {"name": "probabilities", "datatype": "FP32", "shape": [-1, 3]}]})";
  auto r = Rest("GET", "/v2/models/iris");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, want);
  r = Rest("GET", "/v2/models/iris/versions/1");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, want);
  r = Rest("GET", "/v2/models/tagger");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"datatype\":\"BYTES\""), std::string::npos) << r.body;
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/iris/versions/7"), 404, "iris");
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/nosuch"), 404, "nosuch");
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/iris/versions/x1"), 400, "must be a positive integer, found 'x1'");
}

TEST_F(E2eTest, V2ModelReady) {
  auto r = Rest("GET", "/v2/models/iris/ready");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"name": "iris", "ready": true})");
  EXPECT_EQ(Rest("GET", "/v2/models/iris/versions/1/ready").status, 200);
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/iris/versions/9/ready"), 404, "iris");
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/nosuch/ready"), 404, "nosuch");
  EXPECT_V2_ERROR(Rest("POST", "/v2/models/iris/ready"), 405, "use GET");
}

TEST_F(E2eTest, V2InferJson) {
  auto r = Rest("POST", "/v2/models/half/infer",
                R"({"id": "req-7", "inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2.0, 5]}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  ExpectJsonEq(r.body, R"({"model_name": "half", "model_version": "1", "id": "req-7",
      "outputs": [{"name": "y", "datatype": "FP32", "shape": [3], "data": [2.5, 3.0, 4.5]}]})");
  // Nested data, a version, and one output asked for.
  r = Rest("POST", "/v2/models/iris/versions/1/infer",
           R"({"inputs": [{"name": "features", "shape": [2, 4], "datatype": "FP32",
                           "data": [[1, 2, 3, 4], [0, 0, 0, 0]]}],
               "outputs": [{"name": "probabilities"}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"model_name": "iris", "model_version": "1",
      "outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [2, 3],
                   "data": [3.0, 3.0, 4.25, 0.0, 0.0, 0.25]}]})");
  // No version: the latest (2).
  r = Rest("POST", "/v2/models/iris/infer",
           R"({"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]}],
               "outputs": [{"name": "logits"}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"model_name": "iris", "model_version": "2",
      "outputs": [{"name": "logits", "datatype": "FP32", "shape": [1, 3], "data": [1.0, 0.0, 1.25]}]})");
  // Counted in the metrics as API "infer".
  const std::string metrics = Rest("GET", "/monitoring/prometheus/metrics").body;
  EXPECT_NE(metrics.find(":tensorflow:serving:request_latency_count{model_name=\"half\",API=\"infer\","
                         "entrypoint=\"REST\"}"),
            std::string::npos)
      << metrics;
}

TEST_F(E2eTest, V2InferBinary) {
  const std::string header = R"({"inputs": [{"name": "x", "shape": [3], "datatype": "FP32",
                                             "parameters": {"binary_data_size": 12}}],
                                  "parameters": {"binary_data_output": true}})";
  auto r = Rest("POST", "/v2/models/half/infer", header + FloatBytes({1, 2, 5}),
                {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/octet-stream");
  ASSERT_TRUE(r.headers.count("inference-header-content-length"));
  const size_t json_size = std::stoul(r.headers["inference-header-content-length"]);
  ASSERT_EQ(json_size + 12, r.body.size());
  ExpectJsonEq(r.body.substr(0, json_size), R"({"model_name": "half", "model_version": "1",
      "outputs": [{"name": "y", "datatype": "FP32", "shape": [3], "parameters": {"binary_data_size": 12}}]})");
  EXPECT_EQ(r.body.substr(json_size), FloatBytes({2.5f, 3.0f, 4.5f}));
  // Binary input, JSON output (the output's binary_data false overrides the request's default).
  const std::string h2 = R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 8}}],
                              "outputs": [{"name": "y", "parameters": {"binary_data": false}}],
                              "parameters": {"binary_data_output": true}})";
  r = Rest("POST", "/v2/models/half/infer", h2 + FloatBytes({4, 6}),
           {{"Inference-Header-Content-Length", std::to_string(h2.size())}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.count("inference-header-content-length"), 0u);
  ExpectJsonEq(r.body, R"({"model_name": "half", "model_version": "1",
      "outputs": [{"name": "y", "datatype": "FP32", "shape": [2], "data": [4.0, 5.0]}]})");
}

TEST_F(E2eTest, V2InferBadRequests) {
  auto infer = [&](const std::string& body, const std::map<std::string, std::string>& headers = {}) {
    return Rest("POST", "/v2/models/half/infer", body, headers);
  };
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2, 3]}]})"), 400,
                  "input 'x': shape [2] needs 2 elements, 'data' holds 3");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[1], [2]]}]})"),
                  400, "shape [2,2] needs 4 elements, 'data' holds 2");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP33", "data": [1]}]})"), 400,
                  "input 'x': unknown datatype 'FP33'; expected one of BOOL,");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "z", "shape": [1], "datatype": "FP32", "data": [1]}]})"), 400,
                  "Did you mean 'x' instead of 'z'?");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT64", "data": [1]}]})"), 400,
                  "expects shape [batch] and dtype float32");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": ["a"]}]})"), 400,
                  "input 'x' (FP32): JSON Value: \"a\"");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})"), 400,
                  "'shape' must be an array of non-negative integers");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32"}]})"), 400,
                  "has neither 'data' nor parameters.binary_data_size");
  EXPECT_V2_ERROR(infer(R"({"inputs": []})"), 400, "needs a non-empty 'inputs' array");
  EXPECT_V2_ERROR(infer("{not json"), 400, "JSON parse error");
  EXPECT_V2_ERROR(infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
                            "outputs": [{"name": "nope"}]})"),
                  400, "output tensor alias not found in signature: nope");
  // Binary extension: a binary_data_size that does not fit the shape, more bytes than declared, a header length
  // past the body.
  std::string h =
      R"({"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "parameters": {"binary_data_size": 8}}]})";
  EXPECT_V2_ERROR(infer(h + FloatBytes({1, 2}), {{"Inference-Header-Content-Length", std::to_string(h.size())}}), 400,
                  "input 'x' (FP32, shape [3]) needs 12 bytes of binary data, its binary_data_size is 8");
  h = R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}]})";
  EXPECT_V2_ERROR(infer(h + FloatBytes({1, 2, 3}), {{"Inference-Header-Content-Length", std::to_string(h.size())}}),
                  400, "12 bytes of binary data follow the JSON (Inference-Header-Content-Length) but the inputs' "
                       "binary_data_size add up to 8");
  EXPECT_V2_ERROR(infer(h + FloatBytes({1}), {{"Inference-Header-Content-Length", std::to_string(h.size())}}), 400,
                  "binary_data_size is 8 but only 4 bytes of binary data follow");
  EXPECT_V2_ERROR(infer(h, {{"Inference-Header-Content-Length", "100000"}}), 400,
                  "Inference-Header-Content-Length must be a byte count of at most the body's");
  // Unknown model or version: 404; a wrong method: 405.
  EXPECT_V2_ERROR(Rest("POST", "/v2/models/nosuch/infer", "{}"), 404, "nosuch");
  EXPECT_V2_ERROR(Rest("POST", "/v2/models/half/versions/3/infer", "{}"), 404, "half");
  EXPECT_V2_ERROR(Rest("GET", "/v2/models/half/infer"), 405, "use POST");
  // The server is still up and serving.
  EXPECT_EQ(Rest("GET", "/v2/health/live").status, 200);
  auto r = infer(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [8]}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"data\":[6.0]"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace strata::serve
