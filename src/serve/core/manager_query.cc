// The request-path side of the model manager: servable lookup, status and readiness.
#include <algorithm>

#include "serve/core/manager.h"

namespace strata::serve {

namespace {

std::string KnownModels(const std::vector<std::string>& names) {
  if (names.empty()) return "no models are configured";
  return StrCat("known models: ", StrJoin(names, ", "));
}

}  // namespace

StatusOr<std::shared_ptr<const Servable>> ModelManager::Acquire(const std::string& name,
                                                                std::optional<int64_t> version,
                                                                const std::string& label) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || !it->second->in_config) {
    std::vector<std::string> names;
    for (const auto& [n, m] : models_)
      if (m->in_config) names.push_back(n);
    const std::string spec = version ? StrCat("Specific(", name, ", ", *version, ")") : StrCat("Latest(", name, ")");
    return NotFoundError("Servable not found for request: ", spec, " (", KnownModels(names), ")");
  }
  const ModelEntry& m = *it->second;
  if (!version && !label.empty()) {
    auto lit = m.config.labels.find(label);
    if (lit == m.config.labels.end()) return InvalidArgumentError("Unrecognized servable version label: ", label);
    version = lit->second;
  }
  if (version) {
    auto vit = m.versions.find(*version);
    if (vit != m.versions.end() && vit->second.state == VersionState::kAvailable) return vit->second.servable;
    std::string why;
    if (vit == m.versions.end())
      why = "this version is not loaded";
    else
      why = StrCat("version ", *version, " is ", VersionStateName(vit->second.state),
                   vit->second.status.ok() ? std::string() : StrCat(": ", vit->second.status.message()));
    return NotFoundError("Servable not found for request: Specific(", name, ", ", *version, ") (", why, ")");
  }
  for (auto vit = m.versions.rbegin(); vit != m.versions.rend(); ++vit)
    if (vit->second.state == VersionState::kAvailable) return vit->second.servable;
  std::string why;
  if (!m.problem.ok()) {
    why = m.problem.message();
  } else if (m.versions.empty()) {
    why = m.scanned ? "no versions found yet" : "the base path has not been scanned yet";
  } else {
    std::vector<std::string> states;
    for (auto vit = m.versions.rbegin(); vit != m.versions.rend(); ++vit)
      states.push_back(StrCat("version ", vit->first, " is ", VersionStateName(vit->second.state),
                              vit->second.status.ok() ? std::string() : StrCat(": ", vit->second.status.message())));
    why = StrJoin(states, "; ");
  }
  return NotFoundError("Servable not found for request: Latest(", name, ") (", why, ")");
}

StatusOr<std::vector<VersionStatus>> ModelManager::GetStatus(const std::string& name,
                                                             std::optional<int64_t> version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second->versions.empty()) {
    std::string why;
    if (it != models_.end() && !it->second->problem.ok()) why = StrCat(": ", it->second->problem.message());
    return NotFoundError("Could not find any versions of model ", name, why);
  }
  const ModelEntry& m = *it->second;
  std::vector<VersionStatus> out;
  for (auto vit = m.versions.rbegin(); vit != m.versions.rend(); ++vit) {
    if (version && vit->first != *version) continue;
    out.push_back({vit->first, vit->second.state, vit->second.status});
  }
  if (version && out.empty()) return NotFoundError("Could not find version ", *version, " of model ", name);
  return out;
}

ModelSummary ModelManager::Summarize(const ModelEntry& m) const {
  ModelSummary s;
  s.name = m.config.name;
  s.base_path = m.config.base_path;
  s.platform = m.config.platform;
  s.policy = m.config.policy;
  s.labels = m.config.labels;
  s.problem = m.problem;
  s.in_config = m.in_config;
  for (auto vit = m.versions.rbegin(); vit != m.versions.rend(); ++vit) {
    s.versions.push_back({vit->first, vit->second.state, vit->second.status});
    if (vit->second.state == VersionState::kAvailable) s.ready = true;
  }
  return s;
}

std::vector<ModelSummary> ModelManager::Summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelSummary> out;
  for (const auto& [name, m] : models_) out.push_back(Summarize(*m));
  return out;
}

bool ModelManager::AllReady(std::string* why) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) {
    if (why) *why = "the server is starting: the model list is not applied yet";
    return false;
  }
  std::vector<std::string> problems;
  for (const auto& [name, m] : models_) {
    if (!m->in_config) continue;
    const ModelSummary s = Summarize(*m);
    if (s.ready) continue;
    if (!s.problem.ok()) {
      problems.push_back(StrCat(name, ": ", s.problem.message()));
    } else if (s.versions.empty()) {
      problems.push_back(StrCat(name, ": no versions found yet"));
    } else {
      const VersionStatus& v = s.versions.front();
      problems.push_back(StrCat(name, ": version ", v.version, " is ", VersionStateName(v.state),
                                v.status.ok() ? std::string() : StrCat(" (", v.status.message(), ")")));
    }
  }
  if (why) *why = StrJoin(problems, "; ");
  return problems.empty();
}

std::vector<std::shared_ptr<const Servable>> ModelManager::AvailableServables() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const Servable>> out;
  for (const auto& [name, m] : models_)
    for (const auto& [v, e] : m->versions)
      if (e.state == VersionState::kAvailable && e.servable) out.push_back(e.servable);
  return out;
}

}  // namespace strata::serve
