#include "serve/core/manager.h"

#include <algorithm>
#include <set>

#include "core/logging.h"

namespace strata::serve {

std::string_view VersionStateName(VersionState s) {
  switch (s) {
    case VersionState::kStart: return "START";
    case VersionState::kLoading: return "LOADING";
    case VersionState::kAvailable: return "AVAILABLE";
    case VersionState::kUnloading: return "UNLOADING";
    case VersionState::kEnd: return "END";
  }
  return "UNKNOWN";
}

ModelManager::ModelManager(ManagerOptions options) : options_(std::move(options)) {
  if (!options_.loader) {
    options_.loader = [](const std::string& name, int64_t version, const std::string& dir) {
      return Servable::Load(name, version, dir, LoadOptions{});
    };
  }
  if (options_.num_load_threads < 1) options_.num_load_threads = 2;
}

ModelManager::~ModelManager() { Stop(); }

Status ModelManager::Start(const std::vector<ModelConfig>& configs) {
  STRATA_RETURN_IF_ERROR(ValidateModelConfigList(configs));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const ModelConfig& c : configs) {
      auto m = std::make_unique<ModelEntry>();
      m->config = c;
      models_[c.name] = std::move(m);
    }
    started_ = true;
  }
  for (int i = 0; i < options_.num_load_threads; ++i) workers_.emplace_back([this] { RunJobs(); });
  loop_ = std::thread([this] { Loop(); });
  return Status::OK();
}

std::vector<ModelConfig> ModelManager::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelConfig> out;
  for (const auto& [name, m] : models_)
    if (m->in_config) out.push_back(m->config);
  return out;
}

Status ModelManager::ReloadConfig(const std::vector<ModelConfig>& configs, bool wait,
                                  std::chrono::milliseconds timeout) {
  STRATA_RETURN_IF_ERROR(ValidateModelConfigList(configs));
  std::set<std::string> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> listed;
    for (const ModelConfig& c : configs) {
      listed.insert(c.name);
      auto it = models_.find(c.name);
      if (it == models_.end()) {
        auto m = std::make_unique<ModelEntry>();
        m->config = c;
        models_[c.name] = std::move(m);
        changed.insert(c.name);
        LogInfo("adding model ", c.name, " (base path ", c.base_path, ", policy ", c.policy.ToString(), ")");
      } else if (!(it->second->config == c) || !it->second->in_config) {
        if (it->second->config.base_path != c.base_path) it->second->versions.clear();
        it->second->config = c;
        it->second->in_config = true;
        it->second->scanned = false;
        changed.insert(c.name);
        LogInfo("updating model ", c.name, " (base path ", c.base_path, ", policy ", c.policy.ToString(), ")");
      }
    }
    for (auto& [name, m] : models_) {
      if (!listed.count(name) && m->in_config) {
        LogInfo("removing model ", name, ": it is no longer in the config");
        m->in_config = false;
      }
    }
    rescan_ = true;
  }
  cv_.notify_all();
  if (!wait || changed.empty()) return Status::OK();
  std::unique_lock<std::mutex> lock(mu_);
  const bool done = settled_cv_.wait_for(lock, timeout, [&] {
    if (stop_) return true;
    for (const auto& name : changed) {
      auto it = models_.find(name);
      if (it != models_.end() && !Settled(*it->second)) return false;
    }
    return true;
  });
  if (!done) return DeadlineExceededError("config reloaded, but models are still loading after ", timeout.count(), " ms");
  return Status::OK();
}

bool ModelManager::Settled(const ModelEntry& m) const {
  if (!m.scanned) return false;
  if (!m.problem.ok()) return true;
  bool any_aspired = false;
  for (const auto& [v, e] : m.versions) {
    if (e.state == VersionState::kAvailable && e.aspired) return true;
    if (e.aspired) {
      any_aspired = true;
      if (!(e.state == VersionState::kEnd && e.failed)) return false;
    }
  }
  return any_aspired || m.versions.empty();
}

void ModelManager::RequestRescan() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    rescan_ = true;
  }
  cv_.notify_all();
}

void ModelManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !loop_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  settled_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_stop_ = true;
  }
  jobs_cv_.notify_all();
  for (auto& w : workers_)
    if (w.joinable()) w.join();
  workers_.clear();
  // Unload everything: wait (bounded) for in-flight requests, then release.
  std::vector<std::shared_ptr<const Servable>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, m] : models_) {
      for (auto& [v, e] : m->versions) {
        if (e.servable) held.push_back(std::move(e.servable));
        if (e.state != VersionState::kEnd) {
          e.state = VersionState::kEnd;
          e.status = Status::OK();
        }
      }
    }
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.unload_drain_ms);
  for (auto& s : held) {
    while (s.use_count() > 1 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s.reset();
  }
}

// ---- the manager loop ----

void ModelManager::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (rescan_ || Clock::now() >= next_scan_) {
      rescan_ = false;
      lock.unlock();
      ScanAll();
      lock.lock();
      if (stop_) break;
      const int poll = options_.file_system_poll_wait_seconds;
      next_scan_ = poll > 0 ? Clock::now() + std::chrono::seconds(poll) : Clock::time_point::max();
    }
    // Sleep until the next poll, the next due retry or the next stability check; a finished load or unload, a
    // reload and Stop wake the loop through cv_. A retry that is due but cannot start (its model is busy, its files
    // are still changing) is no reason to wake: waking for it spun this loop with mu_ held.
    const auto now = Clock::now();
    const auto settle_delay =
        std::chrono::milliseconds(std::clamp<int64_t>(options_.version_stability_ms / 2, 20, 1000));
    Clock::time_point retry_at = Clock::time_point::max(), settle_at = Clock::time_point::max();
    for (auto& [name, m] : models_) {
      ForgetUnloadedUnaspired(*m);
      if (!m->busy) Step(*m, now);
      if (m->busy) continue;
      for (const auto& [v, e] : m->versions) {
        if (!e.aspired) continue;
        const bool failed = e.state == VersionState::kEnd && e.failed;
        if (!e.stable && (e.state == VersionState::kStart || failed)) {
          settle_at = std::min(settle_at, now + settle_delay);  // rechecked by a rescan
        } else if (failed && RetriesLeft(e)) {
          retry_at = std::min(retry_at, e.next_attempt);
        }
      }
    }
    settled_cv_.notify_all();
    // Step started every load that was due, so retry_at lies ahead; the 5 s cap only bounds a lost wakeup.
    cv_.wait_until(lock, std::min({next_scan_, retry_at, settle_at, Clock::now() + std::chrono::seconds(5)}));
    if (Clock::now() >= settle_at) rescan_ = true;
  }
}

bool ModelManager::RetriesLeft(const VersionEntry& v) const {
  return options_.max_num_load_retries < 0 || v.failures <= options_.max_num_load_retries;
}

int64_t ModelManager::RetryDelayMs(int failures) const {
  // Doubles per failure from retry_initial_ms up to retry_max_ms, without overflowing for any option values.
  const int64_t max_ms = std::max<int64_t>(1, options_.retry_max_ms);
  int64_t delay = std::clamp<int64_t>(options_.retry_initial_ms, 1, max_ms);
  for (int i = 1; i < failures && delay < max_ms; ++i) delay = delay > max_ms / 2 ? max_ms : delay * 2;
  return delay;
}

void ModelManager::ForgetUnloadedUnaspired(ModelEntry& m) {
  // A version that stops being aspired before it started loading (its directory was removed, or the policy now
  // prefers another version) never loads: it leaves the status list, as in TF Serving, instead of staying START.
  // One that was loaded before goes back to END, its state before it was aspired again.
  for (auto it = m.versions.begin(); it != m.versions.end();) {
    VersionEntry& e = it->second;
    if (e.aspired || e.state != VersionState::kStart) {
      ++it;
      continue;
    }
    if (e.loaded_before) {
      e.state = VersionState::kEnd;
      e.status = Status::OK();
      ++it;
      continue;
    }
    LogInfo("model ", m.config.name, ": version ", e.version, " at ", e.dir, " is no longer aspired (",
            e.on_disk ? "the version policy prefers other versions" : "its directory was removed",
            ") before it loaded; dropping it from the status list");
    it = m.versions.erase(it);
  }
}

void ModelManager::Step(ModelEntry& m, Clock::time_point now) {
  // 1. Unload the lowest unaspired AVAILABLE version when that keeps the model available.
  bool any_aspired = false, aspired_ready = false;
  int unaspired_ready = 0;
  VersionEntry* unload = nullptr;
  for (auto& [v, e] : m.versions) {
    if (e.aspired) any_aspired = true;
    if (e.state != VersionState::kAvailable) continue;
    if (e.aspired) {
      aspired_ready = true;
    } else {
      ++unaspired_ready;
      if (!unload) unload = &e;
    }
  }
  if (unload && (!any_aspired || aspired_ready || unaspired_ready > 1)) {
    StartUnload(m, *unload);
    return;
  }
  // 2. Load the highest aspired version that is new (or whose retry is due), once its directory is stable.
  for (auto it = m.versions.rbegin(); it != m.versions.rend(); ++it) {
    VersionEntry& e = it->second;
    if (!e.aspired || !e.stable) continue;
    const bool fresh = e.state == VersionState::kStart;
    const bool retry = e.state == VersionState::kEnd && e.failed && now >= e.next_attempt && RetriesLeft(e);
    if (fresh || retry) {
      StartLoad(m, e);
      return;
    }
  }
}

void ModelManager::StartLoad(ModelEntry& m, VersionEntry& v) {
  m.busy = true;
  v.state = VersionState::kLoading;
  const std::string name = m.config.name, dir = v.dir;
  const int64_t version = v.version;
  LogInfo("loading model ", name, " version ", version, " from ", dir,
          v.failures ? StrCat(" (attempt ", v.failures + 1, ")") : std::string());
  Enqueue([this, name, version, dir] {
    const auto t0 = Clock::now();
    auto result = options_.loader(name, version, dir);
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    if (options_.on_load) options_.on_load(dir, result.status(), us);
    if (result.ok())
      LogInfo("model ", name, " version ", version, " is AVAILABLE (loaded in ", us / 1000, " ms)");
    FinishLoad(name, version, std::move(result));
  });
}

void ModelManager::FinishLoad(const std::string& model, int64_t version, StatusOr<std::shared_ptr<Servable>> result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it == models_.end()) return;
    ModelEntry& m = *it->second;
    m.busy = false;
    auto vit = m.versions.find(version);
    if (vit == m.versions.end()) return;
    VersionEntry& v = vit->second;
    if (result.ok()) {
      v.servable = std::move(result).value();
      v.state = VersionState::kAvailable;
      v.status = Status::OK();
      v.failed = false;
      v.failures = 0;
      v.loaded_before = true;
    } else {
      ++v.failures;
      v.state = VersionState::kEnd;
      v.status = result.status();
      v.failed = true;
      const int64_t delay = RetryDelayMs(v.failures);
      v.next_attempt = Clock::now() + std::chrono::milliseconds(delay);
      const bool more = RetriesLeft(v);
      LogError("model ", model, " version ", version, " failed to load: ", v.status.message(),
               more ? StrCat("; retrying in ", delay, " ms") : std::string("; giving up until its files change"));
    }
    TrimHistory(m);
  }
  cv_.notify_all();
  settled_cv_.notify_all();
}

void ModelManager::StartUnload(ModelEntry& m, VersionEntry& v) {
  m.busy = true;
  v.state = VersionState::kUnloading;
  std::shared_ptr<const Servable> servable = std::move(v.servable);
  const std::string name = m.config.name;
  const int64_t version = v.version;
  LogInfo("unloading model ", name, " version ", version);
  Enqueue([this, name, version, servable]() mutable {
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.unload_drain_ms);
    // Requests that hold the servable finish first; then the session and its memory go at once.
    while (servable.use_count() > 1 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    servable.reset();
    FinishUnload(name, version);
  });
}

void ModelManager::FinishUnload(const std::string& model, int64_t version) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(model);
    if (it == models_.end()) return;
    ModelEntry& m = *it->second;
    m.busy = false;
    auto vit = m.versions.find(version);
    if (vit != m.versions.end()) {
      vit->second.state = VersionState::kEnd;
      vit->second.status = Status::OK();
      vit->second.failed = false;
    }
    LogInfo("model ", model, " version ", version, " unloaded");
    TrimHistory(m);
  }
  cv_.notify_all();
  settled_cv_.notify_all();
}

void ModelManager::TrimHistory(ModelEntry& m) {
  int ended = 0;
  for (const auto& [v, e] : m.versions)
    if (e.state == VersionState::kEnd && !e.aspired) ++ended;
  for (auto it = m.versions.begin(); it != m.versions.end() && ended > options_.max_status_history;) {
    if (it->second.state == VersionState::kEnd && !it->second.aspired) {
      it = m.versions.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

// ---- load/unload workers ----

void ModelManager::Enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.push_back(std::move(job));
  }
  jobs_cv_.notify_one();
}

void ModelManager::RunJobs() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(jobs_mu_);
      jobs_cv_.wait(lock, [&] { return jobs_stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace strata::serve
