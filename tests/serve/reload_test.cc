// Hot reload under load: while 32 connections send predict requests, versions are added and removed 10 times;
// no request may fail (the availability-preserving policy keeps a version serving throughout).
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "http_client.h"
#include "load_gen.h"
#include "serve_test_util.h"

namespace strata::serve {
namespace {

// Polls the status API until version `want` is the only version that is not END, and it is AVAILABLE (bounded).
bool WaitForOnlyAvailable(bench::HttpClient& client, int want, std::string* last) {
  for (int i = 0; i < 3000; ++i) {
    auto r = client.Get("/v1/models/iris");
    if (r.ok()) {
      // Compact "v:STATE,..." from the JSON without a parser: versions come in descending order.
      std::string states;
      size_t pos = 0;
      while ((pos = r->body.find("\"version\": \"", pos)) != std::string::npos) {
        pos += 12;
        const std::string v = r->body.substr(pos, r->body.find('"', pos) - pos);
        const size_t s = r->body.find("\"state\": \"", pos) + 10;
        states += (states.empty() ? "" : ",") + v + ":" + r->body.substr(s, r->body.find('"', s) - s);
      }
      *last = states;
      std::string expected = StrCat(want, ":AVAILABLE");
      bool only = states.find(expected) != std::string::npos;
      for (const char* busy : {"START", "LOADING", "UNLOADING"})
        if (states.find(busy) != std::string::npos) only = false;
      size_t count = 0;
      for (size_t p = states.find("AVAILABLE"); p != std::string::npos; p = states.find("AVAILABLE", p + 1)) ++count;
      if (only && count == 1) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(HotReloadTest, VersionsComeAndGoUnderLoadWithoutAFailedRequest) {
  const std::string base = testing::FreshDir("reload") + "/iris";
  testing::WriteVersion(base, 1, testing::IrisModel(0));
  ServerOptions o = testing::TestServerOptions();
  o.grpc_port = 0;
  o.model_name = "iris";
  o.model_base_path = base;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());

  bench::LoadOptions load;
  load.port = (*server)->rest_port();
  load.target = "/v1/models/iris:predict";
  load.body = R"({"instances": [[1, 2, 3, 4]]})";
  load.connections = 32;
  load.duration = std::chrono::minutes(5);  // bounded; stopped by the flag below
  load.check = [](int status, const std::string& body) {
    return status == 200 && body.rfind("{\"predictions\": [{\"logits\": [", 0) == 0;
  };
  std::atomic<bool> stop{false};
  bench::LoadResult result;
  std::thread generator([&] { result = bench::RunLoad(load, &stop); });

  bench::HttpClient client("127.0.0.1", (*server)->rest_port());
  std::string last;
  bool ok = true;
  for (int cycle = 0; cycle < 10 && ok; ++cycle) {
    const int v = cycle + 2;
    testing::WriteVersion(base, v, testing::IrisModel(static_cast<float>(v)));
    ok = WaitForOnlyAvailable(client, v, &last);
    EXPECT_TRUE(ok) << "cycle " << cycle << ": version " << v << " did not replace version 1; states " << last;
    std::filesystem::remove_all(StrCat(base, "/", v));
    ok = ok && WaitForOnlyAvailable(client, 1, &last);
    EXPECT_TRUE(ok) << "cycle " << cycle << ": version 1 did not come back after removing " << v << "; states " << last;
  }
  stop = true;
  generator.join();
  (*server)->Stop();
  EXPECT_EQ(result.failed, 0) << (result.errors.empty() ? "" : result.errors[0]);
  EXPECT_GT(result.ok, 1000);
  std::printf("hot reload under load: %lld requests, %lld failed, %.0f req/s, p50 %.2f ms, p99 %.2f ms\n",
              static_cast<long long>(result.requests), static_cast<long long>(result.failed),
              result.requests_per_second, result.p50_ms, result.p99_ms);
}

}  // namespace
}  // namespace strata::serve
