// Hostile files where a model belongs: a FIFO, a symlink to /dev/zero or a directory as model.onnx (or as its
// external data, or as the warmup file) must fail the load at once with an error that says what the path is — in the
// model manager (the version ends up END, not LOADING, and good versions still load and the manager stops promptly) and
// in `strata inspect` (the process exits non-zero, promptly).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <onnx/onnx_pb.h>

#include "core/file_util.h"
#include "serve/core/manager.h"
#include "serve/warmup.h"
#include "serve_test_util.h"
#include "strata/onnx.h"

extern char** environ;

namespace strata::serve {
namespace {

using testing::FreshDir;

// Opens the FIFO for writing without blocking (this succeeds only while a reader waits in open()) and closes it at
// once, so that the reader sees an empty file. Cleanup for a failing run, so that it ends instead of hanging.
void ReleaseFifoReaders(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
}

// <dir>/model.onnx as a FIFO, a symlink to /dev/zero, or a directory.
void MakeSpecialModel(const std::string& dir, const std::string& kind) {
  STRATA_CHECK_OK(MakeDirs(dir));
  const std::string path = dir + "/model.onnx";
  if (kind == "fifo") STRATA_CHECK(::mkfifo(path.c_str(), 0644) == 0, "mkfifo failed");
  if (kind == "zero") STRATA_CHECK(::symlink("/dev/zero", path.c_str()) == 0, "symlink failed");
  if (kind == "dir") STRATA_CHECK_OK(MakeDirs(path));
}

// Writes the half model to <dir>/model.onnx with its initializer "two" stored as external data at `location`.
void WriteModelWithExternalData(const std::string& dir, const std::string& location) {
  STRATA_CHECK_OK(MakeDirs(dir));
  auto bytes = onnx::SerializeModel(testing::HalfModel());
  STRATA_CHECK_OK(bytes.status());
  ::onnx::ModelProto mp;
  STRATA_CHECK(mp.ParseFromString(*bytes), "cannot parse the serialised half model");
  for (auto& tp : *mp.mutable_graph()->mutable_initializer()) {
    if (tp.name() != "two") continue;
    tp.clear_raw_data();
    tp.set_data_location(::onnx::TensorProto_DataLocation_EXTERNAL);
    auto* kv = tp.add_external_data();
    kv->set_key("location");
    kv->set_value(location);
  }
  std::ofstream(dir + "/model.onnx", std::ios::binary) << mp.SerializeAsString();
}

std::string States(const ModelManager& m, const std::string& name) {
  auto st = m.GetStatus(name, std::nullopt);
  if (!st.ok()) return st.status().message();
  std::vector<std::string> parts;
  for (const auto& v : *st) parts.push_back(StrCat(v.version, ":", VersionStateName(v.state)));
  return StrJoin(parts, ",");
}

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

TEST(SpecialFileLoadTest, VersionsWithSpecialModelFilesFailAndGoodVersionsStillLoad) {
  const std::string base = FreshDir("special_versions") + "/half";
  testing::WriteVersion(base, 1, testing::HalfModel());
  MakeSpecialModel(base + "/2", "fifo");
  MakeSpecialModel(base + "/3", "zero");
  MakeSpecialModel(base + "/4", "dir");
  MakeSpecialModel(base + "/5", "fifo");
  STRATA_CHECK_OK(MakeDirs(base + "/6/weights_dir"));
  WriteModelWithExternalData(base + "/6", "weights_dir");
  STRATA_CHECK_OK(MakeDirs(base + "/7"));
  STRATA_CHECK(::mkfifo((base + "/7/weights.bin").c_str(), 0644) == 0, "mkfifo failed");
  WriteModelWithExternalData(base + "/7", "weights.bin");
  const std::vector<std::string> fifos = {base + "/2/model.onnx", base + "/5/model.onnx", base + "/7/weights.bin"};

  ManagerOptions options;
  options.file_system_poll_wait_seconds = 1;
  options.version_stability_ms = 0;
  options.max_num_load_retries = 0;  // each bad version fails once and stays END
  ModelManager m(options);           // the default loader: Servable::Load
  ASSERT_TRUE(m.Start({ModelConfig{"half", base, "onnx", {VersionPolicy::Kind::kAll, 0, {}}, {}}}).ok());
  // Versions load highest first, one at a time: 7..2 must each fail promptly for version 1 to load.
  const std::string want = "7:END,6:END,5:END,4:END,3:END,2:END,1:AVAILABLE";
  EXPECT_TRUE(Eventually([&] { return States(m, "half") == want; })) << States(m, "half");
  auto st = m.GetStatus("half", std::nullopt);
  ASSERT_TRUE(st.ok());
  std::map<int64_t, std::string> messages;
  for (const auto& v : *st) messages[v.version] = v.status.message();
  EXPECT_NE(messages[2].find(StrCat("'", base, "/2/model.onnx' is a FIFO, not a regular file")), std::string::npos)
      << messages[2];
  EXPECT_NE(messages[3].find(StrCat("'", base, "/3/model.onnx' is a character device, not a regular file")),
            std::string::npos)
      << messages[3];
  EXPECT_NE(messages[4].find(StrCat("'", base, "/4/model.onnx' is a directory, not a regular file")), std::string::npos)
      << messages[4];
  EXPECT_NE(messages[6].find(StrCat("'", base, "/6/weights_dir' is a directory, not a regular file")),
            std::string::npos)
      << messages[6];
  EXPECT_NE(messages[7].find(StrCat("'", base, "/7/weights.bin' is a FIFO, not a regular file")), std::string::npos)
      << messages[7];

  // A good new version still loads after all of that.
  testing::WriteVersion(base, 8, testing::HalfModel());
  m.RequestRescan();
  EXPECT_TRUE(Eventually([&] { return States(m, "half").rfind("8:AVAILABLE,", 0) == 0; })) << States(m, "half");

  // Stopping (what SIGTERM does) returns promptly: no load thread is stuck.
  auto stopped = std::async(std::launch::async, [&] { m.Stop(); });
  const bool prompt = stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!prompt)
    for (const auto& f : fifos) ReleaseFifoReaders(f);
  EXPECT_TRUE(prompt) << "ModelManager::Stop did not return within 20 s";
}

TEST(SpecialFileLoadTest, WarmupFilesThatAreNotRegularFilesFailTheLoadPromptly) {
  const std::string base = FreshDir("special_warmup") + "/half";
  testing::WriteVersion(base, 1, testing::HalfModel());
  STRATA_CHECK_OK(MakeDirs(base + "/1/assets.extra"));
  const std::string warmup = StrCat(base, "/1/", kWarmupFile);
  auto servable = Servable::Load("half", 1, base + "/1", LoadOptions{});
  ASSERT_TRUE(servable.ok()) << servable.status().ToString();
  for (const std::string kind : {"FIFO", "character device"}) {
    ::unlink(warmup.c_str());
    const int made = kind == "FIFO" ? ::mkfifo(warmup.c_str(), 0644) : ::symlink("/dev/zero", warmup.c_str());
    ASSERT_EQ(made, 0) << kind;
    auto done = std::async(std::launch::async, [&] { return RunWarmup(**servable, WarmupOptions{}, nullptr); });
    const bool prompt = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    if (!prompt) ReleaseFifoReaders(warmup);
    ASSERT_TRUE(prompt) << "RunWarmup on a " << kind << " did not return within 20 s";
    const Status s = done.get();
    EXPECT_FALSE(s.ok()) << kind;
    EXPECT_NE(s.message().find(
                  StrCat("cannot open warmup file ", warmup, ": '", warmup, "' is a ", kind, ", not a regular file")),
              std::string::npos)
        << s.message();
  }
}

// Runs `strata inspect <model>` with stdout and stderr in `log`; returns the exit code, 128 + signal, or -1 when it
// did not finish within 30 s (it is then killed).
int RunInspect(const std::string& model, const std::string& log, const std::vector<std::string>& fifos) {
  std::vector<std::string> all = {STRATA_BINARY, "inspect", model};
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -2;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  for (const auto& f : fifos) ReleaseFifoReaders(f);
  return -1;
}

TEST(SpecialFileLoadTest, InspectRefusesSpecialFilesPromptly) {
  const std::string dir = FreshDir("special_inspect");
  MakeSpecialModel(dir + "/fifo", "fifo");
  MakeSpecialModel(dir + "/zero", "zero");
  MakeSpecialModel(dir + "/dir", "dir");
  STRATA_CHECK_OK(MakeDirs(dir + "/ext_dir/weights_dir"));
  WriteModelWithExternalData(dir + "/ext_dir", "weights_dir");
  STRATA_CHECK_OK(MakeDirs(dir + "/ext_fifo"));
  STRATA_CHECK(::mkfifo((dir + "/ext_fifo/weights.bin").c_str(), 0644) == 0, "mkfifo failed");
  WriteModelWithExternalData(dir + "/ext_fifo", "weights.bin");
  const std::vector<std::string> fifos = {dir + "/fifo/model.onnx", dir + "/ext_fifo/weights.bin"};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fifo", StrCat("'", dir, "/fifo/model.onnx' is a FIFO, not a regular file")},
      {"zero", StrCat("'", dir, "/zero/model.onnx' is a character device, not a regular file")},
      {"dir", StrCat("'", dir, "/dir/model.onnx' is a directory, not a regular file")},
      {"ext_dir", StrCat("'", dir, "/ext_dir/weights_dir' is a directory, not a regular file")},
      {"ext_fifo", StrCat("'", dir, "/ext_fifo/weights.bin' is a FIFO, not a regular file")},
  };
  for (const auto& [name, want] : cases) {
    const std::string log = StrCat(dir, "/", name, ".log");
    const int code = RunInspect(StrCat(dir, "/", name, "/model.onnx"), log, fifos);
    const std::string out = testing::Slurp(log);
    EXPECT_EQ(code, 1) << name << " (-1: timed out, 128+n: killed by signal n): " << out;
    EXPECT_NE(out.find("strata: error: "), std::string::npos) << name << ": " << out;
    EXPECT_NE(out.find(want), std::string::npos) << name << ": " << out;
  }
}

}  // namespace
}  // namespace strata::serve
