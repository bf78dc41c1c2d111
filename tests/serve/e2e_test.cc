// End to end on 127.0.0.1: a real server with a strata-exported model (iris, two versions and labels) and a
// PyTorch-exported one (mlp), plus small models for strings, several inputs and Classify/Regress. Every REST
// endpoint, errors included, checked field by field against specs/tf-serving.md.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "core/json.h"
#include "e2e_fixture.h"
#include "json_compare.h"
#include "serve/metrics.h"

namespace strata::serve {
namespace {

using testing::ExpectJsonEqImpl;

TEST_F(E2eTest, ModelStatus) {
  auto r = Rest("GET", "/v1/models/iris");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  ExpectJsonEq(r.body, R"({"model_version_status": [
      {"version": "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}},
      {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]})");
  r = Rest("GET", "/v1/models/iris/versions/1");
  ExpectJsonEq(r.body, R"({"model_version_status": [
      {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]})");
  // As TF Serving: the label is ignored by the status API.
  r = Rest("GET", "/v1/models/iris/labels/no_such_label");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(JsonField(r.body, "model_version_status").size(), 2u);
  r = Rest("GET", "/v1/models/nope");
  EXPECT_EQ(r.status, 404);
  ExpectJsonEq(r.body, R"({"error": "Could not find any versions of model nope"})");
  r = Rest("GET", "/v1/models/iris/versions/9");
  EXPECT_EQ(r.status, 404);
  ExpectJsonEq(r.body, R"({"error": "Could not find version 9 of model iris"})");
}

TEST_F(E2eTest, ModelMetadata) {
  auto r = Rest("GET", "/v1/models/iris/metadata");
  EXPECT_EQ(r.status, 200);
  const std::string sig = R"("serving_default": {
      "inputs": {"features": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""},
                 {"size": "4", "name": ""}], "unknown_rank": false}, "name": "features"}},
      "outputs": {
        "logits": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""}, {"size": "3", "name": ""}],
                   "unknown_rank": false}, "name": "logits"},
        "probabilities": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""},
                          {"size": "3", "name": ""}], "unknown_rank": false}, "name": "probabilities"}},
      "method_name": "tensorflow/serving/predict", "defaults": {}})";
  ExpectJsonEq(r.body, R"({"model_spec": {"name": "iris", "signature_name": "", "version": "2"},
                           "metadata": {"signature_def": {"signature_def": {)" + sig + "}}}}");
  r = Rest("GET", "/v1/models/iris/versions/1/metadata");
  ExpectJsonEq(JsonField(r.body, "model_spec").raw, R"({"name": "iris", "signature_name": "", "version": "1"})");
  r = Rest("GET", "/v1/models/iris/labels/stable/metadata");
  ExpectJsonEq(JsonField(r.body, "model_spec").raw, R"({"name": "iris", "signature_name": "", "version": "1"})");
  r = Rest("GET", "/v1/models/iris/labels/canary/metadata");
  ExpectJsonEq(JsonField(r.body, "model_spec").raw, R"({"name": "iris", "signature_name": "", "version": "2"})");
  r = Rest("GET", "/v1/models/iris/labels/beta/metadata");
  EXPECT_EQ(r.status, 400);
  ExpectJsonEq(r.body, R"({"error": "Unrecognized servable version label: beta"})");
  r = Rest("GET", "/v1/models/iris/versions/9/metadata");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorOf(r).rfind("Servable not found for request: Specific(iris, 9)", 0), 0u) << r.body;
  // The PyTorch export's signature: symbolic batch dim → -1.
  r = Rest("GET", "/v1/models/mlp/metadata");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find(R"("input": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""}, {"size": "8", "name": ""}])"),
            std::string::npos)
      << r.body;
}

TEST_F(E2eTest, PredictRowAndColumnar) {
  // iris v2 (shift 1): logits = x @ W + b.
  auto r = Rest("POST", "/v1/models/iris:predict",
                R"({"signature_name": "serving_default", "instances": [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, "{\"predictions\": [{\"logits\": " + IrisRow({5.1f, 3.5f, 1.4f, 0.2f}, 1, false) +
                           ", \"probabilities\": " + IrisRow({5.1f, 3.5f, 1.4f, 0.2f}, 1, true) +
                           "}, {\"logits\": " + IrisRow({6.7f, 3.0f, 5.2f, 2.3f}, 1, false) +
                           ", \"probabilities\": " + IrisRow({6.7f, 3.0f, 5.2f, 2.3f}, 1, true) + "}]}");
  // Version and label routing.
  r = Rest("POST", "/v1/models/iris/versions/1:predict", R"({"inputs": {"features": [[5.1, 3.5, 1.4, 0.2]]}})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, "{\"outputs\": {\"logits\": [" + IrisRow({5.1f, 3.5f, 1.4f, 0.2f}, 0, false) +
                           "], \"probabilities\": [" + IrisRow({5.1f, 3.5f, 1.4f, 0.2f}, 0, true) + "]}}");
  r = Rest("POST", "/v1/models/iris/labels/stable:predict", R"({"inputs": [[0, 0, 0, 0]]})");
  ExpectJsonEq(r.body, R"({"outputs": {"logits": [[0.0, -1.0, 0.25]], "probabilities": [[0.0, 0.0, 0.25]]}})");
  r = Rest("POST", "/v1/models/iris/labels/canary:predict", R"({"inputs": [[0, 0, 0, 0]]})");
  ExpectJsonEq(r.body, R"({"outputs": {"logits": [[1.0, 0.0, 1.25]], "probabilities": [[1.0, 0.0, 1.25]]}})");
  // One output: the name is dropped; floats are printed shortest round-trip with ".0".
  r = Rest("POST", "/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})");
  EXPECT_EQ(r.body, R"({"predictions": [2.5,3.0,4.5]})");
  r = Rest("POST", "/v1/models/half:predict", R"({"inputs": [1.0, 2.0]})");
  EXPECT_EQ(r.body, R"({"outputs": [2.5,3.0]})");
}

TEST_F(E2eTest, PredictPyTorchExport) {
  auto r = Rest("POST", "/v1/models/mlp:predict", torch_input_);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string predictions = JsonField(r.body, "predictions").raw;
  // PyTorch's own output for the same input, within float tolerance.
  EXPECT_EQ(testing::JsonDiff(predictions, torch_expected_), "");
}

TEST_F(E2eTest, StringsAndSeveralInputs) {
  const std::string hello = Base64Encode("hello"), hallo = Base64Encode("hallo");
  auto r = Rest("POST", "/v1/models/tagger:predict", R"({"instances": ["hello", {"b64": "aGFsbG8="}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, "{\"predictions\": [{\"b64\": \"" + hello + "\"}, {\"b64\": \"" + hallo + "\"}]}");
  r = Rest("POST", "/v1/models/pair:predict", R"({"instances": [{"a": [1, 2], "b": [10, 20]}, {"a": [3, 4], "b": [30, 40]}]})");
  ExpectJsonEq(r.body, R"({"predictions": [[11.0, 22.0], [33.0, 44.0]]})");
  r = Rest("POST", "/v1/models/pair:predict", R"({"inputs": {"a": [[1, 2]], "b": [[0.5, 0.5]]}})");
  ExpectJsonEq(r.body, R"({"outputs": [[1.5, 2.5]]})");
}

TEST_F(E2eTest, ClassifyAndRegress) {
  // scorer: scores = [0.5 age + 0.25 spend, -0.5 age + spend]; no classes output → labels "".
  auto r = Rest("POST", "/v1/models/scorer:classify", R"({"examples": [{"age": 2.0, "spend": 4.0}, {"age": 1, "spend": 0}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"results": [[["", 2.0], ["", 3.0]], [["", 0.5], ["", -0.5]]]})");
  // Context features fill every example.
  r = Rest("POST", "/v1/models/scorer:classify", R"({"context": {"spend": 4.0}, "examples": [{"age": 2.0}]})");
  ExpectJsonEq(r.body, R"({"results": [[["", 2.0], ["", 3.0]]]})");
  r = Rest("POST", "/v1/models/half:regress", R"({"examples": [{"x": 1.5}, {"x": 3}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectJsonEq(r.body, R"({"results": [2.75, 3.5]})");
  // Signatures that do not fit: UNIMPLEMENTED with the reason.
  r = Rest("POST", "/v1/models/scorer:regress", R"({"examples": [{"age": 2.0, "spend": 4.0}]})");
  EXPECT_EQ(r.status, 501);
  EXPECT_NE(ErrorOf(r).find("Regress is not available for model 'scorer'"), std::string::npos) << r.body;
  r = Rest("POST", "/v1/models/iris:classify", R"({"examples": [{"features": [1, 2, 3, 4]}]})");
  EXPECT_EQ(r.status, 501);
  EXPECT_NE(ErrorOf(r).find("output named 'scores'"), std::string::npos) << r.body;
  r = Rest("POST", "/v1/models/scorer:classify", R"({"examples": [{"age": 2.0}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find("example 0 has no feature 'spend'"), std::string::npos) << r.body;
  r = Rest("POST", "/v1/models/scorer:classify", R"({"instances": [1]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorOf(r), "When method is classify, key 'examples' is expected and was not found");
}

TEST_F(E2eTest, PredictErrors) {
  // Wrong input name: the expected inputs and the closest one.
  auto r = Rest("POST", "/v1/models/iris:predict", R"({"inputs": {"featurs": [[1, 2, 3, 4]]}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorOf(r).rfind("Missing named input: features in 'inputs' object.", 0), 0u);
  EXPECT_NE(ErrorOf(r).find("Did you mean 'features' instead of 'featurs'?"), std::string::npos) << r.body;
  // Shape mismatch: model, version, input, expected and actual.
  r = Rest("POST", "/v1/models/iris/versions/1:predict", R"({"instances": [[1, 2, 3]]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorOf(r), "input 'features' of model 'iris' version 1 (signature 'serving_default') expects shape "
                        "[batch,4] and dtype float32 (DT_FLOAT), got shape [1,3] and dtype float32 (DT_FLOAT)");
  r = Rest("POST", "/v1/models/iris:predict", R"({"signature_name": "foo", "instances": [[1, 2, 3, 4]]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorOf(r), "Serving signature name: \"foo\" not found in signature def");
  r = Rest("POST", "/v1/models/nope:predict", R"({"instances": [1]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorOf(r).rfind("Servable not found for request: Latest(nope)", 0), 0u);
  EXPECT_NE(ErrorOf(r).find("known models: fashion, half, iris, mlp, pair, scorer, tagger"), std::string::npos) << r.body;
  r = Rest("POST", "/v1/models/iris/versions/7:predict", R"({"instances": [[1, 2, 3, 4]]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorOf(r).rfind("Servable not found for request: Specific(iris, 7)", 0), 0u);
  r = Rest("POST", "/v1/models/iris:predict", "");
  EXPECT_EQ(r.status, 400);
  ExpectJsonEq(r.body, R"({"error": "JSON Parse error: The document is empty"})");
  r = Rest("POST", "/v1/models/iris:predict", R"({"instances": [[1, 2, 3, 4]], "inputs": [[1, 2, 3, 4]]})");
  EXPECT_EQ(ErrorOf(r), "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist");
  r = Rest("POST", "/v1/models/iris:predict", R"({"instances": [["a", 2, 3, 4]]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(ErrorOf(r).find("JSON Value: \"a\" Type: String is not of expected type: float"), std::string::npos);
  // gzip request bodies are decompressed.
  const std::string body = R"({"instances": [1.0]})";
  auto gz = Rest("POST", "/v1/models/half:predict", Gzip(body), {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(gz.body, R"({"predictions": [2.5]})");
  // Request-size limit: 413 with a JSON error.
  std::string big = "{\"instances\": [" + std::string(2 << 20, ' ') + "1.0]}";
  auto too_big = Rest("POST", "/v1/models/half:predict", big);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_NE(ErrorOf(too_big).find("request body is larger than the limit of 1048576 bytes"), std::string::npos);
}

TEST_F(E2eTest, UrlGrammar) {
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/v1/models/iris/metadata"},
           {"GET", "/v1/models/iris:predict"},
           {"POST", "/v1/models/iris:PREDICT"},
           {"GET", "/v1/models/iris/versions/abc"},
           {"GET", "/v1/models/iris/version/1"},
           {"GET", "/v1/models/iris/versions/1/labels/x"},
           {"GET", "/v1/models/iris/"},
           {"POST", "/v1/models/iris:explain"}}) {
    auto r = Rest(method, path, method == "POST" ? "{}" : "");
    EXPECT_EQ(r.status, 400) << method << " " << path;
    EXPECT_EQ(ErrorOf(r).rfind("Malformed request: " + method + " " + path, 0), 0u) << r.body;
    EXPECT_NE(ErrorOf(r).find("valid forms are"), std::string::npos);
  }
  auto r = Rest("GET", "/v1/models/iris/versions/99999999999999999999");
  EXPECT_EQ(ErrorOf(r), "Failed to convert version: 99999999999999999999 to numeric.");
  // Outside /v1 and the Open Inference Protocol's /v2 (kserve_e2e_test.cc): TF Serving's HTML 404.
  r = Rest("GET", "/v3/models/iris");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.headers["content-type"], "text/html");
  // URL-escaped model names.
  r = Rest("GET", "/v1/models/%69ris/versions/1");
  EXPECT_EQ(r.status, 200) << r.body;
}

// The OpenAPI description is served and names every route family (tests/peer/openapi_check.py validates the live
// answers against it with jsonschema).
TEST_F(E2eTest, OpenApiDescriptionIsServed) {
  auto r = Rest("GET", "/v1/openapi.json");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = Json::Parse(r.body, "/v1/openapi.json");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const Json* version = doc->Find("openapi");
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->as_string().rfind("3.0", 0), 0u) << version->as_string();
  const Json* paths = doc->Find("paths");
  ASSERT_NE(paths, nullptr);
  for (const char* p : {"/v1/models/{model_name}", "/v1/models/{model_name}/metadata", "/v1/models/{model_name}:predict",
                        "/v1/models/{model_name}:classify", "/v1/models/{model_name}:regress",
                        "/v1/models/{model_name}/labels/{label}:predict", "/healthz", "/readyz", "/v1/openapi.json", "/monitoring/profile",
                        "/v2", "/v2/health/live", "/v2/health/ready", "/v2/models/{model_name}",
                        "/v2/models/{model_name}/ready", "/v2/models/{model_name}/infer",
                        "/v2/models/{model_name}/versions/{version}/infer"})
    EXPECT_NE(paths->Find(p), nullptr) << p;
  EXPECT_EQ(Rest("POST", "/v1/openapi.json", "{}").status, 405);
}

TEST_F(E2eTest, ExtensionsHealthMetricsAndCors) {
  auto r = Rest("GET", "/v1/models");
  EXPECT_EQ(r.status, 200);
  const auto models = JsonField(r.body, "models");
  EXPECT_EQ(models.size(), 7u);
  EXPECT_NE(r.body.find(R"("name": "iris")"), std::string::npos);
  EXPECT_NE(r.body.find(R"("labels": {"canary": "2", "stable": "1"})"), std::string::npos) << r.body;
  r = Rest("GET", "/healthz");
  EXPECT_EQ(r.status, 200);
  r = Rest("GET", "/readyz");
  EXPECT_EQ(r.status, 200);
  ExpectJsonEq(r.body, R"({"ready": true})");
  r = Rest("OPTIONS", "/v1/models/iris:predict", "", {{"Origin", "https://example.com"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  r = Rest("OPTIONS", "/v1/models/iris:predict");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "");
  Rest("POST", "/v1/models/half:predict", R"({"instances": [1.0]})");
  Rest("GET", "/v1/models/nope");
  r = Rest("GET", "/monitoring/prometheus/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"].rfind("text/plain", 0), 0u);
  const std::string& m = r.body;
  EXPECT_NE(m.find("# TYPE :tensorflow:serving:request_count counter"), std::string::npos);
  EXPECT_NE(m.find(":tensorflow:serving:request_count{model_name=\"half\",status=\"OK\"}"), std::string::npos);
  // A model that is not configured is counted under one label value, whatever name the client sent.
  EXPECT_NE(m.find(":tensorflow:serving:request_count{model_name=\"<unknown>\",status=\"NOT_FOUND\"}"),
            std::string::npos);
  EXPECT_EQ(m.find("model_name=\"nope\""), std::string::npos);
  EXPECT_NE(m.find(":tensorflow:serving:request_latency_bucket{model_name=\"half\",API=\"predict\",entrypoint=\"REST\",le=\"10\"}"),
            std::string::npos);
  EXPECT_NE(m.find(":tensorflow:cc:saved_model:load_attempt_count{model_path=\"" + base_ + "/iris/1\",status=\"success\"} 1"),
            std::string::npos);
  EXPECT_NE(m.find(":strata:serving:process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(m.find(":strata:serving:model_memory_bytes{model_name=\"iris\",version=\"2\"} 60"), std::string::npos) << m;
  EXPECT_NE(m.find(":strata:serving:plan_cache_misses{model_name=\"iris\",version=\"2\"}"), std::string::npos);
  EXPECT_NE(m.find(":strata:serving:plan_cache_evictions{model_name=\"iris\",version=\"2\"} 0"), std::string::npos);
  EXPECT_NE(m.find(":strata:serving:plan_cache_bytes{model_name=\"iris\",version=\"2\"} "), std::string::npos);
  EXPECT_NE(m.find(":strata:serving:model_version_state{model_name=\"iris\",version=\"1\",state=\"AVAILABLE\"} 1"),
            std::string::npos);
}

// Checks every line of a Prometheus text page: "# TYPE name type", or name{label="value",...} value with label values
// escaped as the format requires (\\, \", \n), UTF-8, and no control characters.
void ExpectValidExposition(const std::string& page) {
  EXPECT_EQ(SafeLabelValue(page), page) << "the page is not UTF-8 or holds control characters";
  const auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  std::istringstream lines(page);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (line.rfind("# TYPE ", 0) == 0) continue;
    size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0)) ++i;
    bool ok = i > 0;
    if (ok && i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const size_t start = i;
        while (i < line.size() && name_char(line[i], i == start)) ++i;
        ok = i > start && line.compare(i, 2, "=\"") == 0;
        i += 2;
        while (ok && i < line.size() && line[i] != '"') {
          if (line[i] == '\\')
            ok = i + 1 < line.size() && std::string_view("\\\"n").find(line[++i]) != std::string::npos;
          ++i;
        }
        ok = ok && i < line.size();
        ++i;  // the closing quote
        if (ok && i < line.size() && line[i] == ',') ++i;
      }
      ok = ok && i < line.size() && line[i] == '}';
      ++i;
    }
    ok = ok && i + 1 < line.size() && line[i] == ' ' && line.find(' ', i + 1) == std::string::npos;
    EXPECT_TRUE(ok) << "line " << n << " is not a valid sample: " << line;
  }
}

// Made-up model names (thousands, with bytes that are not UTF-8, NUL and quotes) do not grow or break the page.
TEST_F(E2eTest, MetricsStayValidAndSmallUnderMadeUpModelNames) {
  const std::string path = "/monitoring/prometheus/metrics";
  Rest("POST", "/v1/models/made_up:predict", "{}");  // the <unknown> series exists from here on
  const size_t before = Rest("GET", path).body.size();
  for (int i = 0; i < 2000; ++i) {
    auto r = Rest("POST", StrCat("/v1/models/made_up_", i, ":predict"), "{}");
    ASSERT_EQ(r.status, 404) << r.body;
  }
  for (const char* odd : {"%FF%FE", "a%00b", "q%22%5C%0Ax", "%1F"}) {
    Rest("GET", StrCat("/v1/models/", odd));
    Rest("POST", StrCat("/v1/models/", odd, ":predict"), "{}");
  }
  const std::string page = Rest("GET", path).body;
  EXPECT_LT(page.size(), before + 4096);
  EXPECT_EQ(page.find("made_up_"), std::string::npos);
  EXPECT_EQ(page.find('\0'), std::string::npos);
  EXPECT_NE(page.find(":tensorflow:serving:request_count{model_name=\"<unknown>\",status=\"NOT_FOUND\"} "),
            std::string::npos);
  ExpectValidExposition(page);
}

// The replies' bytes, exactly: start line, Server, Content-Type, the handler's headers, "Connection: close" only on
// the last reply, Content-Length. (The REST server writes the head by hand; these are the bytes Beast's serializer
// gave for the same replies.)
TEST_F(E2eTest, ReplyHeadsAreExact) {
  testing::RawConnection c(server_->rest_port());
  const std::string body = R"({"instances": [1.0]})";
  ASSERT_TRUE(
      c.Send(StrCat("POST /v1/models/half:predict HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: req-1\r\n"
                    "Content-Length: ",
                    body.size(), "\r\n\r\n", body,
                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: req-2\r\n\r\n"
                    "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: req-3\r\n"
                    "Connection: close\r\n\r\n")));
  const std::string not_found =
      "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL was not found on "
      "this server. The model API is under /v1/models.</p></body></html>";
  EXPECT_EQ(c.ReadToEnd(),
            StrCat("HTTP/1.1 200 OK\r\nServer: strata\r\nContent-Type: application/json\r\nX-Request-Id: req-1\r\n"
                   "Content-Length: 22\r\n\r\n{\"predictions\": [2.5]}",
                   "HTTP/1.1 200 OK\r\nServer: strata\r\nContent-Type: application/json\r\nX-Request-Id: req-2\r\n"
                   "Content-Length: 16\r\n\r\n{\"status\": \"ok\"}",
                   "HTTP/1.1 404 Not Found\r\nServer: strata\r\nContent-Type: text/html\r\nX-Request-Id: req-3\r\n"
                   "Connection: close\r\nContent-Length: ",
                   not_found.size(), "\r\n\r\n", not_found));
}

// RFC 9112: a transfer coding the server does not understand is 501 (only chunked is; identity is ignored), and
// chunked must be the final coding (400 otherwise).
TEST_F(E2eTest, TransferCodingsOtherThanChunkedAre501) {
  const auto chunked = [](const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof(size), "%zx", data.size());
    return StrCat(size, "\r\n", data, "\r\n0\r\n\r\n");
  };
  const auto exchange = [&](const std::string& coding, const std::string& payload) {
    testing::RawConnection c(server_->rest_port());
    EXPECT_TRUE(
        c.Send("POST /v1/models/half:predict HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
               "Transfer-Encoding: " +
               coding + "\r\n\r\n" + payload));
    return c.ReadToEnd();
  };
  const std::string body = R"({"instances": [1.0]})";
  std::string r = exchange("gzip, chunked", chunked(Gzip(body)));
  EXPECT_EQ(r.rfind("HTTP/1.1 501 ", 0), 0u) << r;
  EXPECT_NE(r.find(R"({"error": "Transfer-Encoding 'gzip' is not implemented: this server understands only 'chunked')"),
            std::string::npos)
      << r;
  r = exchange("Chunked, x-custom", chunked(body));
  EXPECT_EQ(r.rfind("HTTP/1.1 501 ", 0), 0u) << r;
  EXPECT_NE(r.find("Transfer-Encoding 'x-custom' is not implemented"), std::string::npos) << r;
  r = exchange("chunked, identity", chunked(body));
  EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << r;
  EXPECT_NE(r.find("does not end with a single 'chunked'"), std::string::npos) << r;
  r = exchange("chunked", chunked(body));
  EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
  EXPECT_NE(r.find(R"({"predictions": [2.5]})"), std::string::npos) << r;
  r = exchange("identity, chunked", chunked(body));
  EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
}

// The trainer's export served as-is: its signature, and raw-pixel predictions equal to the model's own inference
// graph on the scaled pixels (logits) and to their softmax (probabilities).
TEST_F(E2eTest, PredictTrainerExport) {
  auto r = Rest("GET", "/v1/models/fashion/metadata");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("input_image": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""}, )"
                        R"({"size": "28", "name": ""}, {"size": "28", "name": ""}, {"size": "1", "name": ""}])"),
            std::string::npos)
      << r.body;
  for (const char* out : {"logits", "probabilities"})
    EXPECT_NE(r.body.find(StrCat("\"", out, R"(": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", )",
                                 R"("name": ""}, {"size": "10", "name": ""}])")),
              std::string::npos)
        << out << " in " << r.body;

  r = Rest("POST", "/v1/models/fashion:predict", fashion_input_);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(r.body).get(doc));
  simdjson::dom::array rows;
  ASSERT_FALSE(doc["predictions"].get(rows)) << r.body;
  ASSERT_EQ(rows.size(), 2u);
  double scale = 0;
  for (float v : fashion_logits_) scale = std::max(scale, std::fabs(double(v)));
  int n = 0;
  for (simdjson::dom::element row : rows) {
    simdjson::dom::array logits, probs;
    ASSERT_FALSE(row["logits"].get(logits)) << r.body;
    ASSERT_FALSE(row["probabilities"].get(probs)) << r.body;
    ASSERT_EQ(logits.size(), 10u);
    ASSERT_EQ(probs.size(), 10u);
    std::vector<double> got, p;
    for (double v : logits) got.push_back(v);
    for (double v : probs) p.push_back(v);
    double max_logit = -1e30, denom = 0;
    for (int j = 0; j < 10; ++j) max_logit = std::max(max_logit, double(fashion_logits_[n * 10 + j]));
    for (int j = 0; j < 10; ++j) denom += std::exp(fashion_logits_[n * 10 + j] - max_logit);
    for (int j = 0; j < 10; ++j) {
      EXPECT_NEAR(got[j], fashion_logits_[n * 10 + j], 1e-4 * std::max(1.0, scale)) << "row " << n << " logit " << j;
      EXPECT_NEAR(p[j], std::exp(fashion_logits_[n * 10 + j] - max_logit) / denom, 1e-5) << "row " << n << " p " << j;
    }
    ++n;
  }
  // The export's input is float32 [-1,28,28,1]: a flat row is refused with the expected shape named.
  r = Rest("POST", "/v1/models/fashion:predict", R"({"instances": [[1, 2, 3]]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(ErrorOf(r).find("input_image"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace strata::serve
