// `strata serve` as a process: TF Serving flags, unknown flags warn, startup errors exit non-zero, and SIGTERM
// finishes the request in flight and exits 0.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "core/file_util.h"
#include "core/json.h"
#include "http_client.h"
#include "serve_test_util.h"

extern char** environ;

namespace strata::serve {
namespace {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct Process {
  pid_t pid = -1;
  std::string log;
};

Process Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  std::vector<std::string> all = {STRATA_BINARY, "serve"};
  all.insert(all.end(), args.begin(), args.end());
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  Process p;
  p.log = log;
  EXPECT_EQ(posix_spawn(&p.pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

// Waits (bounded) for the process to exit; returns its exit status, or -1 on timeout (then kills it).
int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Polls /readyz for up to 20 s; true once it answers 200.
bool WaitReadyz(bench::HttpClient& client) {
  for (int i = 0; i < 1000; ++i) {
    auto r = client.Get("/readyz");
    if (r.ok() && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(CliTest, StartupErrorsExitNonZero) {
  const std::string dir = testing::FreshDir("cli_errors");
  Process p = Spawn({"--port=0", "--rest_api_port=0"}, dir + "/a.log");
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(20)), 1);
  EXPECT_NE(testing::Slurp(p.log).find("Failed to start server. Error: INVALID_ARGUMENT: Both --model_base_path and "
                              "--model_config_file are empty"),
            std::string::npos)
      << testing::Slurp(p.log);
  p = Spawn({"--model_base_path=/x", "--batching_parameters_file=/b"}, dir + "/b.log");
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(20)), 1);
  EXPECT_NE(testing::Slurp(p.log).find("--batching_parameters_file is set without --enable_batching"), std::string::npos);
  p = Spawn({"--model_base_path=/x", "--adaptive_batch_timeout"}, dir + "/b2.log");
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(20)), 1);
  EXPECT_NE(testing::Slurp(p.log).find("--adaptive_batch_timeout is set without --enable_batching"), std::string::npos)
      << testing::Slurp(p.log);
  p = Spawn({"--model_name=a/b", "--model_base_path=/x"}, dir + "/c.log");
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(20)), 1);
  EXPECT_NE(testing::Slurp(p.log).find("model name 'a/b' contains a path or URL separator"), std::string::npos);
  p = Spawn({"--version"}, dir + "/d.log");
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(20)), 0);
  // --precision takes fp32 or bf16 only (the flag of issue 13's bf16 inference).
  p = Spawn({"--model_base_path=/x", "--precision=fp16"}, dir + "/e.log");
  EXPECT_NE(WaitExit(p.pid, std::chrono::seconds(20)), 0);
  EXPECT_NE(testing::Slurp(p.log).find("--precision: fp16 not in {fp32,bf16}"), std::string::npos) << testing::Slurp(p.log);
}

TEST(CliTest, SigtermFinishesTheRequestInFlightAndExitsZero) {
  const std::string dir = testing::FreshDir("cli_sigterm");
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  // A batch timeout of 1.5 s keeps the request in flight while SIGTERM arrives.
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/batching.config",
                                  "max_batch_size { value: 32 } batch_timeout_micros { value: 1500000 }"));
  const int port = FreePort();
  Process p = Spawn({"--port=0", StrCat("--rest_api_port=", port), "--host=127.0.0.1", "--model_name=half",
                     "--model_base_path=" + dir + "/half", "--enable_batching",
                     "--batching_parameters_file=" + dir + "/batching.config", "--saved_model_tags=serve",
                     "--frobnicate=1"},
                    dir + "/serve.log");
  bench::HttpClient client("127.0.0.1", port, std::chrono::seconds(20));
  ASSERT_TRUE(WaitReadyz(client)) << testing::Slurp(p.log);
  StatusOr<bench::HttpResult> in_flight = UnknownError("not sent");
  std::thread request([&] {
    bench::HttpClient c("127.0.0.1", port, std::chrono::seconds(20));
    in_flight = c.Post("/v1/models/half:predict", R"({"instances": [1.0, 2.0]})");
  });
  // SIGTERM once the request waits in the batch queue (the gauge, read at scrape time), not after a fixed sleep: on a
  // loaded machine the request can take longer than any sleep to arrive, and then it is not in flight.
  bool queued = false;
  for (int i = 0; i < 500 && !queued; ++i) {
    auto m = client.Get("/monitoring/prometheus/metrics");
    queued = m.ok() && m->body.find(":strata:serving:batch_queue_tasks 1") != std::string::npos;
    if (!queued) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(queued) << "the request never reached the batch queue\n" << testing::Slurp(p.log);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  request.join();
  const int code = WaitExit(p.pid, std::chrono::seconds(15));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, 0) << testing::Slurp(p.log);
  EXPECT_LT(seconds, 10.0);
  ASSERT_TRUE(in_flight.ok()) << in_flight.status().ToString();
  EXPECT_EQ(in_flight->status, 200);
  EXPECT_EQ(in_flight->body, R"({"predictions": [2.5,3.0]})");
  const std::string log = testing::Slurp(p.log);
  EXPECT_NE(log.find("unknown argument: --frobnicate=1"), std::string::npos) << log;
  EXPECT_NE(log.find("flag --saved_model_tags is accepted for compatibility and ignored"), std::string::npos);
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos);
  // After exit nothing listens any more.
  bench::HttpClient after("127.0.0.1", port, std::chrono::seconds(2));
  EXPECT_FALSE(after.Get("/healthz").ok());
}

// --log_format json --log_requests: every stderr line is one JSON object (so a log collector can parse the whole
// stream), requests get access log lines with the client's X-Request-Id (or a made-up one, echoed in the response),
// and a request path with bytes that are not UTF-8 still gives valid JSON.
TEST(CliTest, JsonLogsCarryRequestIds) {
  const std::string dir = testing::FreshDir("cli_json_logs");
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  const int port = FreePort();
  Process p = Spawn({"--port=0", StrCat("--rest_api_port=", port), "--host=127.0.0.1", "--model_name=half",
                     "--model_base_path=" + dir + "/half", "--log_format=json", "--log_requests"},
                    dir + "/serve.log");
  bench::HttpClient client("127.0.0.1", port, std::chrono::seconds(20));
  ASSERT_TRUE(WaitReadyz(client)) << testing::Slurp(p.log);
  auto given = client.Request("POST", "/v1/models/half:predict", R"({"instances": [1.0]})",
                              {{"X-Request-Id", "trace-42.a"}});
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->status, 200);
  EXPECT_EQ(given->headers["x-request-id"], "trace-42.a");
  auto made = client.Get("/v1/models/nosuch");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->status, 404);
  const std::string made_id = made->headers["x-request-id"];
  EXPECT_EQ(made_id.size(), 16u) << made_id;
  // An id with a space is not echoed: the server makes its own.
  auto refused = client.Request("GET", "/v1/models/half", "", {{"X-Request-Id", "a b"}});
  ASSERT_TRUE(refused.ok());
  EXPECT_NE(refused->headers["x-request-id"], "a b");
  auto bad_utf8 = client.Get("/v1/models/%ff%fe");
  ASSERT_TRUE(bad_utf8.ok());
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(15)), 0);

  const std::string log = testing::Slurp(p.log);
  int lines = 0, access = 0;
  bool saw_given = false, saw_made = false;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    ++lines;
    auto json = Json::Parse(line, "log line");
    ASSERT_TRUE(json.ok()) << "not JSON: " << line << "\n" << json.status().ToString();
    ASSERT_TRUE(json->Find("time") && json->Find("level") && json->Find("msg")) << line;
    if (json->Find("msg")->as_string() != "request") continue;
    ++access;
    const std::string id = json->Find("request_id")->as_string();
    if (id == "trace-42.a") {
      saw_given = true;
      EXPECT_EQ(json->Find("method")->as_string(), "POST") << line;
      EXPECT_EQ(json->Find("path")->as_string(), "/v1/models/half:predict") << line;
      EXPECT_EQ(json->Find("status")->as_double(), 200) << line;
      EXPECT_GE(json->Find("duration_ms")->as_double(), 0) << line;
    }
    if (id == made_id) {
      saw_made = true;
      EXPECT_EQ(json->Find("status")->as_double(), 404) << line;
    }
  }
  EXPECT_GE(lines, 5) << log;  // startup lines are JSON too
  EXPECT_GE(access, 4) << log;
  EXPECT_TRUE(saw_given) << log;
  EXPECT_TRUE(saw_made) << log;
}

// The address space of a process, in bytes (VmSize in /proc/<pid>/status); -1 when unknown.
int64_t VmSizeBytes(pid_t pid) {
  std::ifstream f(StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::atoll(line.c_str() + 7) * 1024;  // "VmSize:   123456 kB"
  return -1;
}

// Connections that declare a huge Content-Length and send a few bytes must not make the server reserve the declared
// size: before, each reserved it on the header (40 x 256 MiB = 10 GiB of address space; under a 4 GiB limit the
// server died of std::bad_alloc). Bodies now grow as bytes arrive, and a normal predict still succeeds meanwhile.
TEST(CliTest, HugeDeclaredContentLengthsReserveNothing) {
  const std::string dir = testing::FreshDir("cli_declared");
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  const int port = FreePort();
  Process p = Spawn({"--port=0", StrCat("--rest_api_port=", port), "--host=127.0.0.1", "--model_name=half",
                     "--model_base_path=" + dir + "/half", "--rest_api_num_threads=2"},
                    dir + "/serve.log");
  bench::HttpClient client("127.0.0.1", port, std::chrono::seconds(20));
  ASSERT_TRUE(WaitReadyz(client)) << testing::Slurp(p.log);
  const int64_t before = VmSizeBytes(p.pid);
  ASSERT_GT(before, 0);
  constexpr int kConnections = 40;
  const std::string head = "{\"instances\": [" + std::string(200, ' ');  // past std::string's inline capacity
  std::vector<std::unique_ptr<testing::RawConnection>> liars;
  for (int i = 0; i < kConnections; ++i) {
    liars.push_back(std::make_unique<testing::RawConnection>(port));
    ASSERT_TRUE(liars.back()->Send(StrCat("POST /v1/models/half:predict HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                          "Content-Length: ", int64_t{256} << 20, "\r\n\r\n", head)));
  }
  // Wait (bounded) until the server holds the first bytes of every body.
  const auto body_bytes = [&]() -> int64_t {
    auto r = client.Get("/monitoring/prometheus/metrics");
    const std::string name = "\n:strata:serving:rest_request_body_bytes_in_flight ";  // the sample, not # TYPE
    const size_t at = r.ok() ? r->body.find(name) : std::string::npos;
    return at == std::string::npos ? -1 : std::atoll(r->body.c_str() + at + name.size());
  };
  bool received = false;
  for (int i = 0; i < 500 && !received; ++i) {
    received = body_bytes() >= static_cast<int64_t>(kConnections * head.size());
    if (!received) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(received) << body_bytes();
  const int64_t during = VmSizeBytes(p.pid);
  EXPECT_LT(during - before, int64_t{256} << 20) << "address space grew from " << before << " to " << during
                                                 << " bytes for " << kConnections << " bodies of a few bytes each";
  EXPECT_LT(body_bytes(), int64_t{4} << 20);
  auto r = client.Post("/v1/models/half:predict", R"({"instances": [1.0]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << testing::Slurp(p.log);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"predictions": [2.5]})");
  liars.clear();
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(p.pid, std::chrono::seconds(15)), 0) << testing::Slurp(p.log);
}

}  // namespace
}  // namespace strata::serve
