// Server-level limits through REST: the executor's memory limit (429), batching through the server (a full queue is
// 429, a deadline that passes in the queue is 504), warmup-less models, and a base path that points at a version
// directory (status explains the layout).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/file_util.h"
#include "http_client.h"
#include "serve_test_util.h"

namespace strata::serve {
namespace {

std::string PairBody(int rows) {
  std::string body = "{\"inputs\": {\"a\": [";
  for (int i = 0; i < rows; ++i) body += std::string(i ? "," : "") + "[1, 2]";
  body += "], \"b\": [";
  for (int i = 0; i < rows; ++i) body += std::string(i ? "," : "") + "[3, 4]";
  return body + "]}}";
}

TEST(LimitsTest, ExecutorMemoryLimitIs429) {
  const std::string base = testing::FreshDir("limits_memory") + "/pair";
  testing::WriteVersion(base, 1, testing::PairModel());
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_name = "pair";
  o.model_base_path = base;
  o.model_memory_limit_bytes = 64 << 10;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());
  bench::HttpClient client("127.0.0.1", (*server)->rest_port());
  auto small = client.Post("/v1/models/pair:predict", PairBody(2));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->status, 200) << small->body;
  auto big = client.Post("/v1/models/pair:predict", PairBody(20000));  // 160 KB per tensor
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->status, 429) << big->body;
  EXPECT_NE(big->body.find("model 'pair' version 1"), std::string::npos) << big->body;
}

TEST(LimitsTest, BatchingThroughTheServer) {
  const std::string dir = testing::FreshDir("limits_batching");
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/batching.config",
                                  "max_batch_size { value: 4 } batch_timeout_micros { value: 300000 } "
                                  "max_enqueued_batches { value: 1 } num_batch_threads { value: 1 }"));
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_name = "half";
  o.model_base_path = dir + "/half";
  o.enable_batching = true;
  o.batching_parameters_file = dir + "/batching.config";
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());
  const int port = (*server)->rest_port();
  // Request A opens the only batch (3 of 4 rows) and waits 300 ms for more; B (2 rows) does not fit → 429.
  StatusOr<bench::HttpResult> a = UnknownError("not sent");
  std::thread ta([&] { a = bench::HttpClient("127.0.0.1", port).Post("/v1/models/half:predict", R"({"instances": [1, 2, 3]})"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto b = bench::HttpClient("127.0.0.1", port).Post("/v1/models/half:predict", R"({"instances": [4, 5]})");
  ta.join();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, R"({"predictions": [2.5,3.0,3.5]})");
  EXPECT_EQ(b->status, 429) << b->body;
  EXPECT_NE(b->body.find("The batch scheduling queue to which this task was submitted is full"), std::string::npos);
  // A deadline that passes while the request waits in the queue: 504.
  auto late = bench::HttpClient("127.0.0.1", port)
                  .Request("POST", "/v1/models/half:predict", R"({"instances": [1]})", {{"X-Request-Timeout-Ms", "50"}});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->status, 504) << late->body;
  // Batching metrics.
  auto metrics = bench::HttpClient("127.0.0.1", port).Get("/monitoring/prometheus/metrics");
  EXPECT_NE(metrics->body.find(":tensorflow:serving:batching_session:processed_batch_size_count "), std::string::npos);
  EXPECT_NE(metrics->body.find(":tensorflow:serving:batching_session:queuing_latency_bucket{thread_pool_name=\"batch_threads\""),
            std::string::npos);
}

// The server-wide budget of request-body bytes being received (--rest_api_max_inflight_body_bytes): a body that would
// exceed it gets 503 with a JSON error and Retry-After; once the bytes held by other connections are gone, the same
// request succeeds. The gauge :strata:serving:rest_request_body_bytes_in_flight shows the bytes held.
TEST(LimitsTest, InflightBodyBudgetIs503) {
  const std::string base = testing::FreshDir("limits_inflight") + "/half";
  testing::WriteVersion(base, 1, testing::HalfModel());
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_name = "half";
  o.model_base_path = base;
  o.max_request_bytes = 4 << 20;
  o.rest_max_inflight_body_bytes = 1 << 20;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());
  const int port = (*server)->rest_port();
  bench::HttpClient metrics_client("127.0.0.1", port);
  const auto in_flight = [&]() -> int64_t {
    auto r = metrics_client.Get("/monitoring/prometheus/metrics");
    const std::string name = "\n:strata:serving:rest_request_body_bytes_in_flight ";  // the sample, not # TYPE
    const size_t at = r.ok() ? r->body.find(name) : std::string::npos;
    return at == std::string::npos ? -1 : std::atoll(r->body.c_str() + at + name.size());
  };
  const auto wait_for = [&](const std::function<bool(int64_t)>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done(in_flight())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  EXPECT_EQ(in_flight(), 0);
  // Connection A sends 700 KB of a 1 MiB body and stops.
  testing::RawConnection a(port);
  ASSERT_TRUE(a.Send(StrCat("POST /v1/models/half:predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ", 1 << 20,
                            "\r\n\r\n", std::string(700000, ' '))));
  ASSERT_TRUE(wait_for([](int64_t n) { return n >= 700000; })) << in_flight();
  EXPECT_LE(in_flight(), 1 << 20);
  // B's 400 KB body does not fit next to A's.
  const std::string body = R"({"instances": [1.0])" + std::string(400000, ' ') + "}";
  auto b = bench::HttpClient("127.0.0.1", port).Post("/v1/models/half:predict", body);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->status, 503) << b->body;
  EXPECT_EQ(b->headers["retry-after"], "1");
  EXPECT_EQ(b->body.rfind("{\"error\": \"the server is receiving too many request bodies at once (", 0), 0u) << b->body;
  EXPECT_NE(b->body.find("limit 1048576 bytes, --rest_api_max_inflight_body_bytes); retry later\"}"), std::string::npos)
      << b->body;
  // A gives up: its bytes are released, and B goes through.
  a.Close();
  ASSERT_TRUE(wait_for([](int64_t n) { return n == 0; })) << in_flight();
  b = bench::HttpClient("127.0.0.1", port).Post("/v1/models/half:predict", body);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->status, 200) << b->body;
  EXPECT_EQ(b->body, R"({"predictions": [2.5]})");
  EXPECT_EQ(in_flight(), 0);
}

TEST(LimitsTest, BasePathAtAVersionDirectoryIsExplained) {
  const std::string base = testing::FreshDir("limits_layout");
  testing::WriteVersion(base, 1, testing::HalfModel());
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_name = "half";
  o.model_base_path = base + "/1";  // the version directory, not the directory above it
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();  // the ports open anyway
  bench::HttpClient client("127.0.0.1", (*server)->rest_port());
  std::string body;
  for (int i = 0; i < 500; ++i) {
    auto r = client.Get("/v1/models/half");
    body = r.ok() ? r->body : "";
    if (body.find("looks like") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(body.find("Could not find any versions of model half: No versions of servable half found under base path " +
                      base + "/1: base_path looks like a model version directory"),
            std::string::npos)
      << body;
  auto ready = client.Get("/readyz");
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("expected " + base + "/1/<version>/model.onnx"), std::string::npos) << ready->body;
  auto list = client.Get("/v1/models");
  EXPECT_NE(list->body.find("\"problem\": "), std::string::npos);
}

}  // namespace
}  // namespace strata::serve

namespace strata::serve {
namespace {

TEST(ConfigPollingTest, ModelsFollowTheConfigFile) {
  const std::string dir = testing::FreshDir("config_poll");
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  testing::WriteVersion(dir + "/pair", 1, testing::PairModel());
  auto config = [&](std::vector<std::string> models) {
    std::string text = "model_config_list {\n";
    for (const auto& m : models)
      text += "  config { name: \"" + m + "\" base_path: \"" + dir + "/" + m + "\" model_platform: \"onnx\" }\n";
    STRATA_CHECK_OK(WriteFileAtomic(dir + "/models.config", text + "}\n"));
  };
  config({"half"});
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_config_file = dir + "/models.config";
  o.model_config_file_poll_wait_seconds = 1;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());
  bench::HttpClient client("127.0.0.1", (*server)->rest_port());
  auto until = [&](const std::string& target, int status) {
    for (int i = 0; i < 1000; ++i) {
      auto r = client.Get(target);
      if (r.ok() && r->status == status) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  EXPECT_EQ(client.Get("/v1/models/pair/metadata")->status, 404);
  config({"half", "pair"});  // picked up by the next poll
  EXPECT_TRUE(until("/v1/models/pair/metadata", 200));
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/models.config", "model_config_list { config { nonsense: 1 } }"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a bad file keeps the current config
  EXPECT_EQ(client.Get("/v1/models/pair/metadata")->status, 200);
  config({"pair"});  // half is removed and unloads
  EXPECT_TRUE(until("/v1/models/half/metadata", 404));
  EXPECT_EQ(client.Get("/v1/models/pair/metadata")->status, 200);
}

}  // namespace
}  // namespace strata::serve
