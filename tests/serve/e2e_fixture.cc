#include "e2e_fixture.h"

#include <simdjson.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "strata/graph.h"
#include "strata/nn.h"
#include "strata/train.h"

namespace strata::serve {

std::unique_ptr<Server> E2eTest::server_;
std::string E2eTest::base_;
std::string E2eTest::torch_input_;
std::string E2eTest::torch_expected_;
std::string E2eTest::fashion_input_;
std::vector<float> E2eTest::fashion_logits_;
std::unique_ptr<bench::HttpClient> E2eTest::client_;

JsonValue JsonField(const std::string& json, const std::string& key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc, v;
  JsonValue out;
  if (parser.parse(json).get(doc) || doc[key].get(v)) return out;
  out.raw = simdjson::minify(v);
  if (v.is_array()) out.count = simdjson::dom::array(v).size();
  if (v.is_object()) out.count = simdjson::dom::object(v).size();
  return out;
}

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Exports the PyTorch model with Debian's python3-torch, once per machine: the export is cached in the test temp
// dir (written to a private dir, then renamed into place, so parallel test processes do not race), then copied.
void ExportTorchModel(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string cache = ::testing::TempDir() + "/strata_serve_torch_mlp_v1";
  if (!fs::exists(cache + "/expected.json")) {
    const std::string tmp = testing::FreshDir("torch_export");
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    const std::string script = std::string(src ? src : STRATA_SERVE_SOURCE_DIR) + "/tests/serve/export_torch_mlp.py";
    const std::string cmd = "/usr/bin/python3 " + script + " " + tmp + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[512];
    std::string output;
    while (fgets(buf, sizeof(buf), p)) output += buf;
    ASSERT_EQ(pclose(p), 0) << "exporting the PyTorch model failed: " << output;
    std::error_code ec;
    fs::rename(tmp, cache, ec);  // loses the race harmlessly when another process got there first
  }
  fs::create_directories(dir + "/1");
  fs::copy_file(cache + "/1/model.onnx", dir + "/1/model.onnx", fs::copy_options::overwrite_existing);
  fs::copy_file(cache + "/input.json", dir + "/input.json", fs::copy_options::overwrite_existing);
  fs::copy_file(cache + "/expected.json", dir + "/expected.json", fs::copy_options::overwrite_existing);
  // Model files written long ago so they count as stable at once.
  const auto past = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir + "/1/model.onnx", past);
  fs::last_write_time(dir + "/1", past);
}

// The trainer's export of the (untrained, seeded) small CNN, plus what the model's own inference graph computes for
// two images: the server must give the same logits for raw pixels (the export bakes /255 in) and their softmax.
namespace fs = std::filesystem;

void ExportTrainerModel(const std::string& base, std::string* input_json, std::vector<float>* logits) {
  auto model = nn::ZooModel("cnn_small", {28, 28, 1}, 10);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE((*model)->Build(7).ok());
  train::ExportOptions options;
  options.input_scale = 1.0f / 255.0f;
  auto path = train::ExportModel(**model, base, "fashion", 1, options);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const auto past = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(*path, past);
  fs::last_write_time(fs::path(*path).parent_path(), past);

  Tensor scaled = *Tensor::Create(DType::kFloat32, Shape({2, 28, 28, 1}));
  std::string json = "{\"instances\": [";
  for (int n = 0; n < 2; ++n) {
    json += n ? ", [" : "[";
    for (int y = 0; y < 28; ++y) {
      json += y ? ", [" : "[";
      for (int x = 0; x < 28; ++x) {
        const int pixel = (n * 37 + y * 11 + x * 7 + (x * y) % 13) % 256;
        scaled.data<float>()[(n * 28 + y) * 28 + x] = static_cast<float>(pixel) / 255.0f;
        json += StrCat(x ? ", [" : "[", pixel, "]");
      }
      json += "]";
    }
    json += "]";
  }
  json += "]}";
  *input_json = json;
  auto inference = (*model)->InferenceModel();
  ASSERT_TRUE(inference.ok()) << inference.status().ToString();
  std::vector<Tensor> out;
  Status s = graph::RunReference(*inference, {{inference->graph.inputs[0].name, scaled}}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out.size(), inference->graph.outputs.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (inference->graph.outputs[i].name == "logits")
      logits->assign(out[i].data<float>(), out[i].data<float>() + out[i].num_elements());
  ASSERT_EQ(logits->size(), 20u) << "the zoo model has no [2,10] output named logits";
}

}  // namespace

void E2eTest::SetUpTestSuite() {
  base_ = testing::FreshDir("e2e");
  testing::WriteVersion(base_ + "/iris", 1, testing::IrisModel(0));
  testing::WriteVersion(base_ + "/iris", 2, testing::IrisModel(1));
  testing::WriteVersion(base_ + "/half", 1, testing::HalfModel());
  testing::WriteVersion(base_ + "/tagger", 1, testing::TaggerModel());
  testing::WriteVersion(base_ + "/pair", 1, testing::PairModel());
  testing::WriteVersion(base_ + "/scorer", 1, testing::ScorerModel());
  ExportTorchModel(base_ + "/mlp");
  if (::testing::Test::HasFatalFailure()) return;
  ExportTrainerModel(base_, &fashion_input_, &fashion_logits_);
  if (::testing::Test::HasFatalFailure()) return;
  torch_input_ = Slurp(base_ + "/mlp/input.json");
  torch_expected_ = Slurp(base_ + "/mlp/expected.json");
  std::string config = "model_config_list {\n";
  config += "  config { name: \"iris\" base_path: \"" + base_ + "/iris\" model_platform: \"onnx\"\n"
            "    model_version_policy { all {} }\n"
            "    version_labels { key: \"stable\" value: 1 }\n    version_labels { key: \"canary\" value: 2 } }\n";
  for (const char* m : {"mlp", "fashion", "half", "tagger", "pair", "scorer"})
    config += StrCat("  config { name: \"", m, "\" base_path: \"", base_, "/", m, "\" model_platform: \"tensorflow\" }\n");
  config += "}\n";
  STRATA_CHECK_OK(WriteFileAtomic(base_ + "/models.config", config));
  ServerOptions o = testing::TestServerOptions();
  o.model_config_file = base_ + "/models.config";
  o.max_request_bytes = 1 << 20;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server_ = std::move(server).value();
  Status ready = server_->WaitUntilReady(std::chrono::seconds(60));
  ASSERT_TRUE(ready.ok()) << ready.ToString();
  client_ = std::make_unique<bench::HttpClient>("127.0.0.1", server_->rest_port());
}

void E2eTest::TearDownTestSuite() {
  client_.reset();
  if (server_) server_->Stop();
  server_.reset();
}

bench::HttpResult E2eTest::Rest(const std::string& method, const std::string& target, const std::string& body,
                                const std::map<std::string, std::string>& headers) {
  if (!client_) {
    ADD_FAILURE() << "no server";
    return {};
  }
  auto r = client_->Request(method, target, body, headers);
  if (!r.ok()) {
    ADD_FAILURE() << method << " " << target << ": " << r.status().ToString();
    return {};
  }
  return *r;
}

std::string E2eTest::ErrorOf(const bench::HttpResult& r) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view s;
  if (parser.parse(r.body).get(doc) || doc["error"].get(s)) return "<no error field in: " + r.body + ">";
  return std::string(s);
}

std::string E2eTest::IrisRow(const std::vector<float>& x, float shift, bool relu) {
  const float W[4][3] = {{1, 0, -1}, {0, 1, 0}, {0, 0, 1}, {0.5f, 0.5f, 0.5f}};
  const float b[3] = {shift, shift - 1, shift + 0.25f};
  std::string out = "[";
  for (int j = 0; j < 3; ++j) {
    float v = 0;
    for (int i = 0; i < 4; ++i) v += x[i] * W[i][j];
    v += b[j];
    if (relu && v < 0) v = 0;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
    std::string s = buf;
    if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
    out += (j ? "," : "") + s;
  }
  return out + "]";
}

std::string E2eTest::Gzip(const std::string& s) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(s.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  zs.avail_in = static_cast<uInt>(s.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace strata::serve
