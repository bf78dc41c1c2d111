// The model manager: discovers versions under each model's base path, applies the version policy, loads and
// unloads versions with TF Serving's availability-preserving order, retries failed loads with backoff, and answers
// the request path's "which servable serves this ModelSpec" question.
//
// Lifecycle contract of one version (the states of ModelVersionStatus):
//   START      seen on disk and aspired by the policy; waits until its directory is stable. A version that stops
//              being aspired in START (directory removed, policy prefers others) leaves the status list, or goes
//              back to END if it was loaded before
//   LOADING    the model is being read, compiled and warmed up; not yet served
//   AVAILABLE  served; an unversioned request goes to the highest AVAILABLE version
//   UNLOADING  no new request gets it; requests that already hold it finish
//   END        unloaded (status OK) or failed to load (status = the error). A failed version is retried while
//              aspired, after retry_initial_ms doubling per failure up to retry_max_ms, and at once (with the
//              backoff and retry count reset) when the files in its directory change
// Within one model one action runs at a time. A version that is no longer aspired is unloaded only when no version
// is aspired, an aspired version is AVAILABLE, or several unaspired versions are AVAILABLE; so an upgrade loads the
// new version before the old one goes, and a model never loses its last AVAILABLE version to a failed load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/core/config.h"
#include "serve/core/servable.h"
#include "serve/core/storage.h"

namespace strata::serve {

enum class VersionState : int { kStart = 10, kLoading = 20, kAvailable = 30, kUnloading = 40, kEnd = 50 };
std::string_view VersionStateName(VersionState s);  // "START", "LOADING", ...

struct VersionStatus {
  int64_t version = 0;
  VersionState state = VersionState::kStart;
  Status status;
};

struct ManagerOptions {
  int file_system_poll_wait_seconds = 1;  // 0 = scan once (plus on reloads and while versions settle)
  int64_t version_stability_ms = 1000;
  int max_num_load_retries = -1;          // -1 = while aspired
  int64_t retry_initial_ms = 1000;        // doubles per failure
  int64_t retry_max_ms = 300000;
  int num_load_threads = 2;
  int max_status_history = 8;             // END versions kept per model
  int64_t unload_drain_ms = 30000;        // how long an unload waits for in-flight requests
  // Loads one version (default: Servable::Load with default options). Warmup runs inside it.
  std::function<StatusOr<std::shared_ptr<Servable>>(const std::string& name, int64_t version, const std::string& dir)>
      loader;
  // Observers for metrics and logs (may be empty).
  std::function<void(const std::string& dir, const Status& result, int64_t micros)> on_load;
};

struct ModelSummary {
  std::string name;
  std::string base_path;
  std::string platform;
  VersionPolicy policy;
  std::map<std::string, int64_t> labels;
  std::vector<VersionStatus> versions;  // descending
  Status problem;                       // base path problem (missing, no versions, wrong layout)
  bool in_config = true;
  bool ready = false;                   // has an AVAILABLE version
};

class ModelManager {
 public:
  explicit ModelManager(ManagerOptions options);
  ~ModelManager();
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // Starts the manager thread with `configs`; returns at once (models load in the background).
  Status Start(const std::vector<ModelConfig>& configs);
  // Replaces the model list: new models are added, missing ones unloaded, policy/label changes applied, and the
  // file system rescanned at once. With `wait`, blocks (at most `timeout`) until every added or changed model has
  // settled: an AVAILABLE version, or every aspired version failed, or a base-path problem.
  Status ReloadConfig(const std::vector<ModelConfig>& configs, bool wait, std::chrono::milliseconds timeout);
  std::vector<ModelConfig> config() const;
  void RequestRescan();
  // Stops the thread and unloads every version (waiting for in-flight requests, bounded by unload_drain_ms).
  void Stop();

  // The servable for a request: `version` set → that version; `label` non-empty → the labelled version; neither →
  // the highest AVAILABLE version. Errors carry TF Serving's messages (NOT_FOUND "Servable not found for request:
  // Latest(name)" / "Specific(name, v)", INVALID_ARGUMENT "Unrecognized servable version label: l") followed by
  // what strata knows about why.
  StatusOr<std::shared_ptr<const Servable>> Acquire(const std::string& name, std::optional<int64_t> version,
                                                    const std::string& label) const;
  // Versions in descending order; NOT_FOUND as TF Serving when the model or version was never seen.
  StatusOr<std::vector<VersionStatus>> GetStatus(const std::string& name, std::optional<int64_t> version) const;
  std::vector<ModelSummary> Summaries() const;
  // True when every configured model has an AVAILABLE version; otherwise `why` says which are not and why.
  bool AllReady(std::string* why) const;
  std::vector<std::shared_ptr<const Servable>> AvailableServables() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct VersionEntry {
    int64_t version = 0;
    std::string dir;
    VersionState state = VersionState::kStart;
    Status status;
    std::shared_ptr<const Servable> servable;
    bool aspired = false;
    bool on_disk = false;
    bool failed = false;   // END because a load failed (retried with backoff)
    int failures = 0;      // since the last success or change of the directory's files
    Clock::time_point next_attempt{};
    bool loaded_before = false;
    DirFingerprint fingerprint;
    bool stable = false;   // nothing changed in the dir for version_stability_ms
  };

  struct ModelEntry {
    ModelConfig config;
    bool in_config = true;
    std::map<int64_t, VersionEntry> versions;
    Status problem;
    std::string logged_problem;  // a base-path problem is logged once, not every poll
    bool busy = false;           // one load/unload at a time
    bool scanned = false;
  };

  void Loop();
  void ScanAll();
  void ApplyScan(ModelEntry& m, const BasePathScan& scan, const std::map<int64_t, DirFingerprint>& fps);
  void Step(ModelEntry& m, Clock::time_point now);
  void ForgetUnloadedUnaspired(ModelEntry& m);
  bool RetriesLeft(const VersionEntry& v) const;
  int64_t RetryDelayMs(int failures) const;
  void StartLoad(ModelEntry& m, VersionEntry& v);
  void StartUnload(ModelEntry& m, VersionEntry& v);
  void FinishLoad(const std::string& model, int64_t version, StatusOr<std::shared_ptr<Servable>> result);
  void FinishUnload(const std::string& model, int64_t version);
  void TrimHistory(ModelEntry& m);
  bool Settled(const ModelEntry& m) const;
  void RunJobs();
  void Enqueue(std::function<void()> job);
  ModelSummary Summarize(const ModelEntry& m) const;

  ManagerOptions options_;
  mutable std::mutex mu_;
  bool started_ = false;  // Start has registered the configured models (until then AllReady is false)
  std::condition_variable cv_;          // wakes the manager loop
  std::condition_variable settled_cv_;  // ReloadConfig waiters
  std::map<std::string, std::unique_ptr<ModelEntry>> models_;
  bool stop_ = false;
  bool rescan_ = true;
  Clock::time_point next_scan_{};
  std::thread loop_;
  // Load/unload workers.
  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<std::function<void()>> jobs_;
  bool jobs_stop_ = false;
  int jobs_running_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace strata::serve
