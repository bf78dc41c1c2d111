// The file-system side of the model manager: scanning base paths, applying version policies, and the stability
// check that keeps half-copied version directories from loading.
#include <set>

#include "core/logging.h"
#include "serve/core/manager.h"

namespace strata::serve {

void ModelManager::ScanAll() {
  struct Job {
    std::string name;
    std::string base_path;
    std::set<int64_t> need_fingerprint;
  };
  std::vector<Job> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, m] : models_) {
      if (!m->in_config) continue;
      Job j{name, m->config.base_path, {}};
      for (const auto& [v, e] : m->versions)
        if (e.state == VersionState::kStart || (e.state == VersionState::kEnd && e.failed)) j.need_fingerprint.insert(v);
      jobs.push_back(std::move(j));
    }
  }
  std::vector<std::pair<BasePathScan, std::map<int64_t, DirFingerprint>>> results;
  for (const Job& j : jobs) {
    BasePathScan scan = ScanBasePath(j.base_path, j.name);
    std::map<int64_t, DirFingerprint> fps;
    for (const auto& [v, dir] : scan.versions) fps[v] = FingerprintDir(dir);
    results.emplace_back(std::move(scan), std::move(fps));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto it = models_.find(jobs[i].name);
    if (it == models_.end() || it->second->config.base_path != jobs[i].base_path) continue;
    ApplyScan(*it->second, results[i].first, results[i].second);
  }
  for (auto& [name, m] : models_) {
    if (m->in_config) continue;
    for (auto& [v, e] : m->versions) e.aspired = false;  // removed from the config: unload everything
  }
}

void ModelManager::ApplyScan(ModelEntry& m, const BasePathScan& scan, const std::map<int64_t, DirFingerprint>& fps) {
  m.scanned = true;
  for (const std::string& w : scan.warnings) LogWarning(w);
  if (!scan.problem.ok()) {
    m.problem = scan.problem;
    if (m.logged_problem != scan.problem.message()) {
      LogWarning(scan.problem.message());
      m.logged_problem = scan.problem.message();
    }
    // A missing base path may be a transient storage error: keep serving what is loaded. A base path without
    // versions unloads everything, as TF Serving does.
    if (scan.problem.message().rfind("Could not", 0) == 0) return;
    for (auto& [v, e] : m.versions) {
      e.aspired = false;
      e.on_disk = false;
    }
    return;
  }
  m.problem = Status::OK();
  m.logged_problem.clear();
  std::vector<int64_t> present;
  for (const auto& [v, dir] : scan.versions) present.push_back(v);
  std::vector<std::string> warnings;
  const std::vector<int64_t> aspired = ApplyVersionPolicy(m.config.policy, present, &warnings);
  for (const std::string& w : warnings) LogDebug("model ", m.config.name, ": ", w);
  const std::set<int64_t> aspired_set(aspired.begin(), aspired.end());
  const auto sys_now = std::chrono::system_clock::now();
  for (auto& [v, e] : m.versions) {
    e.on_disk = scan.versions.count(v) > 0;
    e.aspired = aspired_set.count(v) > 0;
  }
  for (int64_t v : aspired) {
    auto [it, inserted] = m.versions.try_emplace(v);
    VersionEntry& e = it->second;
    if (inserted) {
      e.version = v;
      LogInfo("model ", m.config.name, ": found version ", v, " at ", scan.versions.at(v));
    }
    e.dir = scan.versions.at(v);
    e.aspired = true;
    e.on_disk = true;
    // An unloaded version that is aspired again loads again (a failed one after its backoff).
    if (e.state == VersionState::kEnd && !e.failed && !e.servable) {
      e.state = VersionState::kStart;
      e.status = Status::OK();
      e.stable = false;
    }
    auto fp = fps.find(v);
    if (fp != fps.end() && (e.state == VersionState::kStart || e.failed)) {
      const bool old_enough =
          sys_now - fp->second.newest_mtime >= std::chrono::milliseconds(options_.version_stability_ms);
      // Stable: nothing written for version_stability_ms and, after the first sighting, no change in file count
      // or size since the previous scan (catches copies that preserve modification times).
      const bool first = e.fingerprint == DirFingerprint{};
      const bool unchanged = fp->second == e.fingerprint;
      if (!unchanged && e.failed && !first) {  // files changed: retry as soon as they are stable, backoff reset
        e.failures = 0;
        e.next_attempt = Clock::now();
      }
      e.fingerprint = fp->second;
      e.stable = old_enough && (unchanged || first);
    }
  }
}

}  // namespace strata::serve
