// serve/core: version discovery and policies, config validation, signatures, the manager's lifecycle order and
// retries (with a fake loader), and metrics exposition.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "serve/core/config.h"
#include "serve/core/manager.h"
#include "serve/core/signature.h"
#include "serve/core/storage.h"
#include "serve/metrics.h"
#include "serve_test_util.h"
#include "strata/onnx.h"

namespace strata::serve {
namespace {

namespace fs = std::filesystem;
using testing::FreshDir;

void Touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

// User plus system CPU time of this process, all threads together.
std::chrono::microseconds ProcessCpuTime() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::chrono::seconds(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         std::chrono::microseconds(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

TEST(StorageTest, VersionNamesParseLikeTensorFlow) {
  int64_t v = 0;
  EXPECT_TRUE(ParseVersionNumber("1", &v) && v == 1);
  EXPECT_TRUE(ParseVersionNumber("007", &v) && v == 7);
  EXPECT_TRUE(ParseVersionNumber("-3", &v) && v == -3);
  EXPECT_TRUE(ParseVersionNumber("+4", &v) && v == 4);
  EXPECT_TRUE(ParseVersionNumber("9223372036854775807", &v) && v == INT64_MAX);
  for (const char* bad : {"", "v1", "1.0", "variables", "1a", "+", "9223372036854775808", " 1"})
    EXPECT_FALSE(ParseVersionNumber(bad, &v)) << bad;
}

TEST(StorageTest, ScanFindsNumericChildrenOnly) {
  const std::string base = FreshDir("scan");
  for (const char* d : {"1", "2", "v3", "0.1", "variables"}) fs::create_directories(base + "/" + d);
  BasePathScan scan = ScanBasePath(base, "m");
  ASSERT_TRUE(scan.problem.ok()) << scan.problem.ToString();
  ASSERT_EQ(scan.versions.size(), 2u);
  EXPECT_EQ(scan.versions.at(1), base + "/1");
  EXPECT_EQ(scan.versions.at(2), base + "/2");
}

TEST(StorageTest, WrongLayoutsAreExplained) {
  // base_path points at a version directory (it holds the model file).
  const std::string version_dir = FreshDir("layout_version");
  Touch(version_dir + "/model.onnx");
  BasePathScan scan = ScanBasePath(version_dir, "iris");
  EXPECT_EQ(scan.problem.code(), StatusCode::kNotFound);
  EXPECT_NE(scan.problem.message().find("No versions of servable iris found under base path"), std::string::npos);
  EXPECT_NE(scan.problem.message().find("looks like a model version directory"), std::string::npos);
  EXPECT_NE(scan.problem.message().find("/<version>/model.onnx"), std::string::npos);
  // base_path is the model file itself.
  scan = ScanBasePath(version_dir + "/model.onnx", "iris");
  EXPECT_NE(scan.problem.message().find("is a file, not a directory (it is the model file itself)"), std::string::npos)
      << scan.problem.message();
  // Non-numeric children are listed.
  const std::string named = FreshDir("layout_named");
  fs::create_directories(named + "/v1");
  scan = ScanBasePath(named, "iris");
  EXPECT_NE(scan.problem.message().find("Did you forget to name your leaf directory as a number"), std::string::npos);
  EXPECT_NE(scan.problem.message().find("found v1"), std::string::npos);
  // A SavedModel.
  const std::string saved = FreshDir("layout_saved");
  Touch(saved + "/saved_model.pb");
  scan = ScanBasePath(saved, "iris");
  EXPECT_NE(scan.problem.message().find("base_path looks like a model version directory (it holds a TensorFlow "
                                        "SavedModel"), std::string::npos)
      << scan.problem.message();
  // Missing.
  scan = ScanBasePath(saved + "/nope", "iris");
  EXPECT_EQ(scan.problem.message(), "Could not find base path " + saved + "/nope for servable iris");
}

TEST(StorageTest, VersionPolicies) {
  std::vector<std::string> warnings;
  VersionPolicy latest2{VersionPolicy::Kind::kLatest, 2, {}};
  EXPECT_EQ(ApplyVersionPolicy(latest2, {5, 1, 3}, &warnings), (std::vector<int64_t>{3, 5}));
  VersionPolicy latest0{VersionPolicy::Kind::kLatest, 0, {}};
  EXPECT_EQ(ApplyVersionPolicy(latest0, {5, 1, 3}, &warnings), (std::vector<int64_t>{5}));
  VersionPolicy all{VersionPolicy::Kind::kAll, 0, {}};
  EXPECT_EQ(ApplyVersionPolicy(all, {5, 1, 3}, &warnings), (std::vector<int64_t>{1, 3, 5}));
  VersionPolicy specific{VersionPolicy::Kind::kSpecific, 0, {3, 7}};
  EXPECT_EQ(ApplyVersionPolicy(specific, {5, 1, 3}, &warnings), (std::vector<int64_t>{3}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("version 7"), std::string::npos);
}

TEST(ConfigTest, ModelNamesCannotHoldPathCharacters) {
  for (const char* bad : {"", "a/b", "..", ".", "a:b", "a\\b", "a\nb"})
    EXPECT_EQ(ValidateModelName(bad).code(), StatusCode::kInvalidArgument) << bad;
  EXPECT_TRUE(ValidateModelName("resnet-50_v2.onnx").ok());
  EXPECT_NE(ValidateModelName("../etc").message().find("path or URL separator"), std::string::npos);
}

TEST(ConfigTest, ConfigListRules) {
  ModelConfig a{"a", "/models/a", "tensorflow", {}, {}};
  EXPECT_TRUE(ValidateModelConfigList({a}).ok());
  ModelConfig rel = a;
  rel.base_path = "models/a";
  EXPECT_EQ(ValidateModelConfigList({rel}).message(),
            "Expected model a to have an absolute path or URI; got base_path()=models/a");
  EXPECT_EQ(ValidateModelConfigList({a, a}).message(), "Illegal to list model a multiple times in config list");
  ModelConfig plat = a;
  plat.platform = "pytorch";
  EXPECT_NE(ValidateModelConfigList({plat}).message().find("Model a requests unsupported platform pytorch"),
            std::string::npos);
  plat.platform = "onnx";
  EXPECT_TRUE(ValidateModelConfigList({plat}).ok());
}

TEST(ConfigTest, BatchingRules) {
  BatchingOptions o;
  o.max_batch_size = 64;
  o.allowed_batch_sizes = {8, 32, 48};
  EXPECT_EQ(ValidateBatchingOptions(o).message(),
            "Last entry in allowed_batch_sizes must match max_batch_size; last entry was 48; expected 64");
  o.allowed_batch_sizes = {8, 8, 64};
  EXPECT_EQ(ValidateBatchingOptions(o).code(), StatusCode::kInvalidArgument);
  o.allowed_batch_sizes = {8, 32, 64};
  EXPECT_TRUE(ValidateBatchingOptions(o).ok());
}

TEST(SignatureTest, SynthesizedFromGraphInputsAndOutputs) {
  using graph::SignatureEntry;
  std::vector<SignatureEntry> in = {{"features", DType::kFloat32, PartialShape::Of({Dim::Symbol("n"), Dim(4)})}};
  std::vector<SignatureEntry> out = {{"scores", DType::kFloat32, PartialShape::Of({Dim(-1), Dim(3)})},
                                     {"classes", DType::kString, PartialShape::Of({Dim(-1), Dim(3)})}};
  SignatureMap sigs = SynthesizeSignatures(in, out);
  ASSERT_EQ(sigs.count("serving_default"), 1u);
  const SignatureDef& s = sigs.at("serving_default");
  EXPECT_EQ(s.method_name, "tensorflow/serving/predict");
  EXPECT_EQ(s.inputs[0].alias, "features");
  EXPECT_EQ(TfDataTypeName(TfDataTypeOf(s.inputs[0].dtype)), "DT_FLOAT");
  EXPECT_TRUE(s.examples.classify);
  EXPECT_EQ(s.examples.scores_output, "scores");
  EXPECT_EQ(s.examples.classes_output, "classes");
  EXPECT_FALSE(s.examples.regress);  // two outputs, none named "outputs"
  EXPECT_EQ(s.examples.feature_sizes, (std::vector<int64_t>{4}));
  // Appendix A dtype numbers.
  EXPECT_EQ(TfDataTypeOf(DType::kFloat16), 19);
  EXPECT_EQ(TfDataTypeOf(DType::kBFloat16), 14);
  EXPECT_EQ(TfDataTypeOf(DType::kUInt16), 17);
  EXPECT_EQ(TfDataTypeOf(DType::kInt64), 9);
  EXPECT_EQ(TfDataTypeOf(DType::kString), 7);
  EXPECT_EQ(TfDataTypeOf(DType::kUInt64), 23);
  // An input with a free trailing dim cannot be fed from examples.
  std::vector<SignatureEntry> free_in = {{"x", DType::kFloat32, PartialShape::Of({Dim(-1), Dim(-1)})}};
  SignatureMap free_sigs = SynthesizeSignatures(free_in, out);
  EXPECT_FALSE(free_sigs.at("serving_default").examples.classify);
  EXPECT_NE(free_sigs.at("serving_default").examples.classify_why_not.find("every dimension after the batch"),
            std::string::npos);
  EXPECT_EQ(ClosestName("featurs", {"labels", "features"}), "features");
}

// ---- manager, with a loader that records what happens ----

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = FreshDir("manager");
    options_.file_system_poll_wait_seconds = 1;
    options_.version_stability_ms = 0;
    options_.retry_initial_ms = 50;
    options_.loader = [this](const std::string& name, int64_t version,
                             const std::string& dir) -> StatusOr<std::shared_ptr<Servable>> {
      {
        std::lock_guard<std::mutex> lock(mu_);
        events_.push_back(StrCat("load ", version));
        if (fail_versions_.count(version)) return InvalidArgumentError("Could not parse model file");
      }
      auto session = graph::Session::Create(std::make_shared<graph::Model>(testing::HalfModel()));
      STRATA_CHECK_OK(session.status());
      return Servable::FromSession(name, version, dir, std::move(session).value());
    };
  }
  // Loads for real (Servable::Load reads <dir>/model.onnx), still recording each attempt.
  void UseServableLoad() {
    options_.loader = [this](const std::string& name, int64_t version, const std::string& dir) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        events_.push_back(StrCat("load ", version));
      }
      return Servable::Load(name, version, dir, LoadOptions{});
    };
  }
  size_t Attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }
  void Version(int64_t v) { testing::WriteVersion(base_, v, testing::HalfModel()); }
  ModelConfig Config(VersionPolicy policy = {}) { return ModelConfig{"half", base_, "onnx", policy, {}}; }
  // Waits until `pred` holds (bounded).
  template <typename Pred>
  bool Eventually(Pred pred, int ms = 8000) {
    for (int i = 0; i < ms / 5; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }
  std::string States(ModelManager& m) {
    auto st = m.GetStatus("half", std::nullopt);
    if (!st.ok()) return st.status().message();
    std::vector<std::string> parts;
    for (const auto& v : *st) parts.push_back(StrCat(v.version, ":", VersionStateName(v.state)));
    return StrJoin(parts, ",");
  }
  std::string base_;
  ManagerOptions options_;
  std::mutex mu_;
  std::vector<std::string> events_;
  std::set<int64_t> fail_versions_;
};

TEST_F(ManagerTest, UpgradeLoadsTheNewVersionBeforeUnloadingTheOld) {
  Version(1);
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
  auto held = m.Acquire("half", std::nullopt, "");  // an in-flight request holds v1
  ASSERT_TRUE(held.ok());
  Version(2);
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:AVAILABLE,1:UNLOADING"; })) << States(m);
  // The unload waits for the request that holds v1; v2 already serves new requests.
  EXPECT_EQ((*m.Acquire("half", std::nullopt, ""))->version(), 2);
  EXPECT_EQ(m.Acquire("half", 1, "").status().code(), StatusCode::kNotFound);
  held = InternalError("released");
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:AVAILABLE,1:END"; })) << States(m);
  // Removing the newest version makes the older one aspired again: it loads before v2 goes.
  std::filesystem::remove_all(base_ + "/2");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:END,1:AVAILABLE"; })) << States(m);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(StrJoin(events_, ","), "load 1,load 2,load 1");
}

TEST_F(ManagerTest, FailedLoadsAreRetriedWithBackoffAndReported) {
  Version(1);
  fail_versions_ = {1};
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size() >= 3;
  }));
  auto st = m.GetStatus("half", 1);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)[0].status.message(), "Could not parse model file");
  auto acq = m.Acquire("half", std::nullopt, "");
  EXPECT_EQ(acq.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(acq.status().message().rfind("Servable not found for request: Latest(half)", 0), 0u);
  EXPECT_NE(acq.status().message().find("Could not parse model file"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fail_versions_.clear();  // the storage recovers: the next retry succeeds
  }
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
}

TEST_F(ManagerTest, AFailedNewVersionKeepsTheOldOneServing) {
  Version(1);
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; }));
  {
    std::lock_guard<std::mutex> lock(mu_);
    fail_versions_ = {2};
  }
  Version(2);
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m).find("2:END") != std::string::npos; })) << States(m);
  EXPECT_NE(States(m).find("1:AVAILABLE"), std::string::npos);
  EXPECT_EQ((*m.Acquire("half", std::nullopt, ""))->version(), 1);
}

TEST_F(ManagerTest, LabelsPoliciesAndReload) {
  for (int v : {1, 2, 3}) Version(v);
  ModelConfig c = Config({VersionPolicy::Kind::kSpecific, 0, {1, 3}});
  c.labels = {{"stable", 1}, {"canary", 3}};
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({c}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "3:AVAILABLE,1:AVAILABLE"; })) << States(m);
  EXPECT_EQ((*m.Acquire("half", std::nullopt, "stable"))->version(), 1);
  EXPECT_EQ((*m.Acquire("half", std::nullopt, "canary"))->version(), 3);
  EXPECT_EQ(m.Acquire("half", std::nullopt, "beta").status().message(), "Unrecognized servable version label: beta");
  EXPECT_EQ(m.Acquire("half", 2, "").status().message().rfind("Servable not found for request: Specific(half, 2)", 0),
            0u);
  // Reload with policy all: version 2 joins.
  c.policy = {VersionPolicy::Kind::kAll, 0, {}};
  ASSERT_TRUE(m.ReloadConfig({c}, true, std::chrono::seconds(10)).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "3:AVAILABLE,2:AVAILABLE,1:AVAILABLE"; })) << States(m);
  // Reload without the model: everything unloads; requests get NOT_FOUND naming the known models.
  ASSERT_TRUE(m.ReloadConfig({}, true, std::chrono::seconds(10)).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "3:END,2:END,1:END"; })) << States(m);
  EXPECT_NE(m.Acquire("half", std::nullopt, "").status().message().find("no models are configured"),
            std::string::npos);
}

TEST_F(ManagerTest, UnstableVersionDirectoriesWaitAndModelsWithoutVersionsExplain) {
  options_.version_stability_ms = 400;
  ModelManager m(options_);
  std::string why;
  // The listeners open before the manager starts: until it has the model list, the server is not ready (an empty
  // list of problems must not read as "every model is ready").
  EXPECT_FALSE(m.AllReady(&why));
  EXPECT_NE(why.find("starting"), std::string::npos) << why;
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return !m.Summaries()[0].problem.ok(); }));
  EXPECT_NE(m.GetStatus("half", std::nullopt).status().message().find("Did you forget to name your leaf directory"),
            std::string::npos);
  EXPECT_FALSE(m.AllReady(&why));
  EXPECT_NE(why.find("half"), std::string::npos);
  // A version whose files were just written is loaded only once they stop changing.
  std::filesystem::create_directories(base_ + "/5");
  STRATA_CHECK_OK(onnx::SaveModel(testing::HalfModel(), base_ + "/5/model.onnx"));
  const auto written = std::chrono::steady_clock::now();
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "5:AVAILABLE"; })) << States(m);
  EXPECT_GE(std::chrono::steady_clock::now() - written, std::chrono::milliseconds(350));
  EXPECT_TRUE(m.AllReady(&why)) << why;
}

TEST_F(ManagerTest, FailingVersionsBackOffInsteadOfSpinning) {
  // 20 empty version directories under an 'all' policy: every load fails, and keeps failing.
  for (int v = 1; v <= 20; ++v) fs::create_directories(StrCat(base_, "/", v));
  options_.retry_initial_ms = 1000;  // the server's default
  UseServableLoad();
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config({VersionPolicy::Kind::kAll, 0, {}})}).ok());
  ASSERT_TRUE(Eventually([&] { return Attempts() >= 20; })) << States(m);
  auto st = m.GetStatus("half", 7);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ((*st)[0].state, VersionState::kEnd);
  EXPECT_NE((*st)[0].status.message().find("(the directory is empty)"), std::string::npos)
      << (*st)[0].status.ToString();
  // Over the next 3 s each version is retried at most twice (1 s, then 2 s after a failure), and in between the
  // manager sleeps: it used to spin on the due retries, one core at 100%, while another one loaded.
  const size_t attempts0 = Attempts();
  const auto cpu0 = ProcessCpuTime();
  const auto wall0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto cpu = ProcessCpuTime() - cpu0;
  const auto wall = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - wall0);
  EXPECT_LT(cpu.count(), wall.count() / 10) << "the manager used " << cpu.count() << " us of CPU in " << wall.count()
                                            << " us with 20 failing versions";
  EXPECT_GE(Attempts() - attempts0, 20u) << "the retries after 1 s did not happen";
  EXPECT_LE(Attempts() - attempts0, 40u) << "retries came faster than the backoff allows";
}

TEST_F(ManagerTest, AFailedVersionLoadsSoonAfterItsFilesChangeDespiteTheBackoff) {
  fs::create_directories(base_ + "/1");
  options_.retry_initial_ms = 600000;  // the backoff alone would not retry within this test
  options_.version_stability_ms = 200;
  UseServableLoad();
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:END"; })) << States(m);
  // The model file arrives; no rescan is requested: the file-system poll finds the change and retries at once.
  STRATA_CHECK_OK(onnx::SaveModel(testing::HalfModel(), base_ + "/1/model.onnx"));
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(StrJoin(events_, ","), "load 1,load 1");
}

TEST_F(ManagerTest, AVersionThatGoesAwayBeforeItLoadsLeavesTheStatusList) {
  options_.version_stability_ms = 600000;  // files written here are never stable: new versions stay START
  Version(1);                              // (WriteVersion's files are an hour old)
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
  Touch(base_ + "/2/model.onnx");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:START,1:AVAILABLE"; })) << States(m);
  // Its directory is removed before it loaded: version 2 leaves the status list (it used to stay START for ever).
  fs::remove_all(base_ + "/2");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
  EXPECT_EQ(m.GetStatus("half", 2).status().message(), "Could not find version 2 of model half");
  // A version that the policy stops aspiring before it loads (a newer one arrived) leaves the list too.
  Touch(base_ + "/3/model.onnx");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "3:START,1:AVAILABLE"; })) << States(m);
  Touch(base_ + "/4/model.onnx");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "4:START,1:AVAILABLE"; })) << States(m);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(StrJoin(events_, ","), "load 1");
}

TEST_F(ManagerTest, AnUnloadedVersionAspiredAgainAndDroppedBeforeItLoadsReturnsToEnd) {
  options_.version_stability_ms = 600000;
  Version(1);
  ModelManager m(options_);
  ASSERT_TRUE(m.Start({Config()}).ok());
  ASSERT_TRUE(Eventually([&] { return States(m) == "1:AVAILABLE"; })) << States(m);
  Version(2);
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:AVAILABLE,1:END"; })) << States(m);
  // Version 2 goes away while version 1 changes: version 1 is aspired again and waits to become stable.
  Touch(base_ + "/1/extra.txt");
  fs::remove_all(base_ + "/2");
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:AVAILABLE,1:START"; })) << States(m);
  // Version 2 comes back before version 1 loaded: version 1 is back where it was, END (unloaded).
  Version(2);
  m.RequestRescan();
  ASSERT_TRUE(Eventually([&] { return States(m) == "2:AVAILABLE,1:END"; })) << States(m);
  auto st = m.GetStatus("half", 1);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE((*st)[0].status.ok()) << (*st)[0].status.ToString();
}

// ---- metrics ----

TEST(MetricsTest, PrometheusExpositionAsTfServingWritesIt) {
  ServingMetrics m;
  m.request_count.Add({"iris", "OK"}, 2);
  m.request_count.Add({"iris", "NOT_FOUND"});
  m.request_latency.Observe({"iris", "predict", "REST"}, 20);
  m.request_latency.Observe({"iris", "predict", "REST"}, 1e12);
  const std::string text = m.Expose();
  EXPECT_NE(text.find("# TYPE :tensorflow:serving:request_count counter\n"), std::string::npos);
  EXPECT_NE(text.find(":tensorflow:serving:request_count{model_name=\"iris\",status=\"OK\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(":tensorflow:serving:request_count{model_name=\"iris\",status=\"NOT_FOUND\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE :tensorflow:serving:request_latency histogram\n"), std::string::npos);
  const std::string series = ":tensorflow:serving:request_latency_bucket{model_name=\"iris\",API=\"predict\",entrypoint=\"REST\",";
  EXPECT_NE(text.find(series + "le=\"10\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find(series + "le=\"18\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find(series + "le=\"32.4\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find(series + "le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(":tensorflow:serving:request_latency_count{model_name=\"iris\",API=\"predict\",entrypoint=\"REST\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(text.find("# HELP"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

// Label values as the text format requires: backslash, double quote and newline escaped; bytes that are not UTF-8
// and control characters (NUL, the key separator 0x1F) replaced by U+FFFD, so one odd name cannot break the page.
TEST(MetricsTest, LabelValuesAreEscapedAndValidUtf8) {
  const std::string kFffd = "\xEF\xBF\xBD";
  ServingMetrics m;
  m.request_count.Add({"a\"b\\c\nd", "OK"});
  m.request_count.Add({std::string("\xFF\xFE", 2), "NOT_FOUND"});
  m.request_count.Add({std::string("x\0y\x1Fz", 5), "NOT_FOUND"});
  m.request_count.Add({"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "OK"});
  const std::string text = m.Expose();
  EXPECT_NE(text.find(":tensorflow:serving:request_count{model_name=\"a\\\"b\\\\c\\nd\",status=\"OK\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{model_name=\"" + kFffd + kFffd + "\",status=\"NOT_FOUND\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("{model_name=\"x" + kFffd + "y" + kFffd + "z\",status=\"NOT_FOUND\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("{model_name=\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\",status=\"OK\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(text.find('\0'), std::string::npos);
  EXPECT_EQ(SafeLabelValue(text), text);  // the whole page is UTF-8 without control characters but newlines
  EXPECT_EQ(m.request_count.Get({std::string("x\0y\x1Fz", 5), "NOT_FOUND"}), 1);
  // Overlong forms, surrogates, truncated and out-of-range sequences: one U+FFFD per byte.
  EXPECT_EQ(SafeLabelValue("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(SafeLabelValue("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(SafeLabelValue("\xE2\x82"), kFffd + kFffd);
  EXPECT_EQ(SafeLabelValue("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(EscapeLabelValue("q\"\\\n\t"), "q\\\"\\\\\\n" + kFffd);
}

// Failed requests for names that are not configured share one label value, so made-up names cannot grow the page.
TEST(MetricsTest, UnknownModelNamesShareOneLabel) {
  ServingMetrics m;
  m.SetKnownModelFilter([](const std::string& name) { return name == "iris"; });
  const auto start = std::chrono::steady_clock::now();
  const size_t before = m.Expose().size();
  for (int i = 0; i < 5000; ++i)
    m.CountRequest(StrCat("made_up_", i), NotFoundError("Servable not found"), "predict", "REST", start);
  m.CountRequest("iris", NotFoundError("Servable not found for request: Specific(iris, 7)"), "predict", "REST", start);
  m.CountRequest("iris", Status::OK(), "predict", "REST", start);
  m.CountRequest("", InvalidArgumentError("Malformed request"), "", "REST", start);
  EXPECT_EQ(m.request_count.Get({std::string(kUnknownModelLabel), "NOT_FOUND"}), 5000);
  EXPECT_EQ(m.request_count.Get({"iris", "NOT_FOUND"}), 1);
  EXPECT_EQ(m.request_count.Get({"iris", "OK"}), 1);
  EXPECT_EQ(m.request_count.Get({"", "INVALID_ARGUMENT"}), 1);
  EXPECT_EQ(m.request_latency.Count({"iris", "predict", "REST"}), 1);
  const std::string text = m.Expose();
  EXPECT_LT(text.size(), before + 8192);
  EXPECT_EQ(text.find("made_up_"), std::string::npos);
  EXPECT_NE(text.find(":tensorflow:serving:request_count{model_name=\"<unknown>\",status=\"NOT_FOUND\"} 5000\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace strata::serve
