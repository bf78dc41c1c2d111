// The end-to-end fixture: one server for the whole suite on 127.0.0.1 (ephemeral REST and gRPC ports) serving
//   iris    strata-exported (IR + onnx::SaveModel), versions 1 and 2, labels stable=1 canary=2, policy all
//   mlp     PyTorch-exported (tests/serve/export_torch_mlp.py)
//   fashion strata-exported by the trainer's ExportModel (the small CNN, input_image [-1,28,28,1] raw pixels)
//   half, tagger, pair, scorer  small IR models for floats, strings, several inputs and Classify/Regress
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "http_client.h"
#include "serve/api/json_codec.h"
#include "serve_test_util.h"
#include "strata/serve.h"

namespace strata::serve {

struct JsonValue {
  std::string raw;  // compact JSON of the value ("" when absent)
  size_t count = 0;  // elements of an array or keys of an object
  size_t size() const { return count; }
};

// The value under top-level `key` of a JSON object.
JsonValue JsonField(const std::string& json, const std::string& key);

class E2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();

  bench::HttpResult Rest(const std::string& method, const std::string& target, const std::string& body = "",
                         const std::map<std::string, std::string>& headers = {});
  // The "error" of an error body.
  static std::string ErrorOf(const bench::HttpResult& r);
  // One iris output row as JSON for input `x` (4 values) and version shift; Relu'd for probabilities.
  static std::string IrisRow(const std::vector<float>& x, float shift, bool relu);
  static std::string Gzip(const std::string& s);

  static std::unique_ptr<Server> server_;
  static std::string base_;
  static std::string torch_input_;     // {"instances": ...}
  static std::string torch_expected_;  // PyTorch's output rows
  static std::string fashion_input_;   // {"instances": ...} of two 28x28x1 raw-pixel images
  static std::vector<float> fashion_logits_;  // the nn::Model's own inference graph on the same images, /255
  static std::unique_ptr<bench::HttpClient> client_;
};

}  // namespace strata::serve
