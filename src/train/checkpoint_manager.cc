// CheckpointManager: the newest N and the best K checkpoints of a directory, recorded in a tf.train.CheckpointManager
// `checkpoint` state file (specs/tf-formats.md §5.4).
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/file_util.h"
#include "core/logging.h"
#include "train/callback_util.h"
#include "train/checkpoint_util.h"

namespace strata::train {
namespace {

constexpr char kStateFileName[] = "checkpoint";

double Now() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

// Protobuf text-format string literal.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += StrCat("\\", static_cast<char>(c));
    else if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", c);
      out += buf;
    } else
      out.push_back(static_cast<char>(c));
  }
  return out + "\"";
}

StatusOr<std::string> Unquote(std::string_view v, std::string_view where) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return DataLossError(where, ": expected a quoted string");
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char c = v[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= v.size() - 1) return DataLossError(where, ": dangling backslash");
    c = v[i];
    if (c >= '0' && c <= '7') {
      int n = 0, k = 0;
      for (; k < 3 && i < v.size() - 1 && v[i] >= '0' && v[i] <= '7'; ++k, ++i) n = n * 8 + (v[i] - '0');
      --i;
      out.push_back(static_cast<char>(n));
    } else if (c == 'n')
      out.push_back('\n');
    else if (c == 't')
      out.push_back('\t');
    else if (c == 'r')
      out.push_back('\r');
    else
      out.push_back(c);
  }
  return out;
}

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

struct StateFile {
  std::string latest;
  std::vector<std::string> paths;
  std::vector<double> timestamps;
  std::optional<double> last_preserved;
};

StatusOr<StateFile> ParseStateFile(const std::string& text, const std::string& where) {
  StateFile f;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string at = StrCat(where, ":", line_no);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return DataLossError(at, ": expected 'field: value', got '", line, "'");
    std::string_view key = line.substr(0, colon), value = line.substr(colon + 1);
    while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "model_checkpoint_path" || key == "all_model_checkpoint_paths") {
      STRATA_ASSIGN_OR_RETURN(std::string s, Unquote(value, at));
      (key == "model_checkpoint_path" ? f.latest : f.paths.emplace_back()) = std::move(s);
    } else if (key == "all_model_checkpoint_timestamps" || key == "last_preserved_timestamp") {
      const std::string v(value);
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') return DataLossError(at, ": '", value, "' is not a number");
      if (key == "last_preserved_timestamp")
        f.last_preserved = d;
      else
        f.timestamps.push_back(d);
    } else {
      return DataLossError(at, ": unknown CheckpointState field '", key, "'");
    }
  }
  return f;
}

// "<name>-<digits>" -> digits; -1 otherwise.
int64_t StepOfName(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size(), prefix) != 0 || name[prefix.size()] != '-')
    return -1;
  int64_t n = 0;
  for (size_t i = prefix.size() + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > (INT64_MAX - 9) / 10) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

StatusOr<std::unique_ptr<CheckpointManager>> CheckpointManager::Open(std::string directory,
                                                                     CheckpointManagerOptions options) {
  if (options.max_to_keep < 0) return InvalidArgumentError("max_to_keep must be >= 1 (or 0 to keep every checkpoint)");
  if (options.keep_best < 0) return InvalidArgumentError("keep_best must be >= 0");
  if (options.checkpoint_name.empty() || options.checkpoint_name.find('/') != std::string::npos)
    return InvalidArgumentError("checkpoint_name must be a plain file name, got '", options.checkpoint_name, "'");
  STRATA_ASSIGN_OR_RETURN(Monitor monitor, MakeMonitor(options.monitor, options.mode, 0, "model_checkpoint"));
  std::unique_ptr<CheckpointManager> m(new CheckpointManager());
  m->dir_ = std::move(directory);
  m->options_ = std::move(options);
  m->higher_is_better_ = monitor.higher_is_better;
  m->last_preserved_timestamp_ = Now() - 1;
  // Temporary directories of writers killed before their rename.
  for (const std::string& name : ListDir(m->dir_))
    if ((name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos) ||
        name.rfind(StrCat(kStateFileName, ".tmp."), 0) == 0)
      STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(m->dir_, name)));
  const std::string state_path = JoinPath(m->dir_, kStateFileName);
  if (FileExists(state_path)) {
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(state_path));
    STRATA_ASSIGN_OR_RETURN(StateFile f, ParseStateFile(text, state_path));
    if (f.last_preserved) m->last_preserved_timestamp_ = std::min(*f.last_preserved, Now());
    if (!f.latest.empty() && (f.paths.empty() || f.paths.back() != f.latest)) f.paths.push_back(f.latest);
    for (size_t i = 0; i < f.paths.size(); ++i) {
      const std::string path = f.paths[i][0] == '/' ? f.paths[i] : JoinPath(m->dir_, f.paths[i]);
      auto c = ReadCheckpointState(path);  // tensors are verified when a checkpoint is read, not listed
      if (!c.ok()) {
        LogWarning("checkpoint state file ", state_path, " lists '", f.paths[i],
                   "', which is not a complete checkpoint (", c.status().message(), "); dropping it from the list");
        continue;
      }
      CheckpointEntry e;
      e.name = f.paths[i];
      e.step = c->state.iterations;
      e.epoch = c->state.epoch;
      e.run_id = c->state.run_id;
      e.timestamp = i < f.timestamps.size() ? f.timestamps[i] : m->last_preserved_timestamp_;
      if (const double* v = c->metrics.Find(m->options_.monitor)) e.metric = *v;
      m->entries_.push_back(std::move(e));
    }
  }
  // A complete checkpoint newer than the latest listed one: its writer was killed before the state file was
  // rewritten. It becomes the latest.
  const int64_t latest_step = m->entries_.empty() ? -1 : m->entries_.back().step;
  std::vector<std::pair<int64_t, std::string>> orphans;
  for (const std::string& name : ListDir(m->dir_)) {
    const int64_t step = StepOfName(name, m->options_.checkpoint_name);
    if (step > latest_step && FileExists(JoinPath(JoinPath(m->dir_, name), "state.json")))
      orphans.emplace_back(step, name);
  }
  std::sort(orphans.begin(), orphans.end());
  for (const auto& [step, name] : orphans) {
    auto c = ReadCheckpointState(JoinPath(m->dir_, name));
    if (!c.ok()) continue;
    CheckpointEntry e{name, c->state.iterations, c->written_at, std::nullopt, c->state.run_id, c->state.epoch};
    if (const double* v = c->metrics.Find(m->options_.monitor)) e.metric = *v;
    m->entries_.push_back(std::move(e));
  }
  return m;
}

std::optional<std::string> CheckpointManager::latest() const {
  if (entries_.empty()) return std::nullopt;
  const std::string& n = entries_.back().name;
  return n[0] == '/' ? n : JoinPath(dir_, n);
}

StatusOr<std::optional<Checkpoint>> CheckpointManager::ReadLatest() const {
  const auto path = latest();
  if (!path) return std::optional<Checkpoint>();
  STRATA_ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpoint(*path));
  return std::optional<Checkpoint>(std::move(c));
}

Status CheckpointManager::WriteStateFile() const {
  std::string text;
  if (!entries_.empty()) text += StrCat("model_checkpoint_path: ", Quote(entries_.back().name), "\n");
  for (const CheckpointEntry& e : entries_) text += StrCat("all_model_checkpoint_paths: ", Quote(e.name), "\n");
  for (const CheckpointEntry& e : entries_)
    text += StrCat("all_model_checkpoint_timestamps: ", FormatDouble(e.timestamp), "\n");
  text += StrCat("last_preserved_timestamp: ", FormatDouble(last_preserved_timestamp_), "\n");
  return WriteFileAtomic(JoinPath(dir_, kStateFileName), text);
}

Status CheckpointManager::Sweep() {
  const size_t n = entries_.size();
  std::vector<bool> keep(n, options_.max_to_keep == 0);
  for (size_t i = n >= static_cast<size_t>(options_.max_to_keep) ? n - options_.max_to_keep : 0; i < n; ++i)
    keep[i] = true;
  if (options_.keep_best > 0) {
    std::vector<size_t> ranked;
    for (size_t i = 0; i < n; ++i)
      if (entries_[i].metric && !std::isnan(*entries_[i].metric)) ranked.push_back(i);
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
      return higher_is_better_ ? *entries_[a].metric > *entries_[b].metric : *entries_[a].metric < *entries_[b].metric;
    });
    for (size_t k = 0; k < ranked.size() && k < static_cast<size_t>(options_.keep_best); ++k) keep[ranked[k]] = true;
  }
  std::vector<CheckpointEntry> kept, dropped;
  for (size_t i = 0; i < n; ++i) (keep[i] ? kept : dropped).push_back(entries_[i]);
  // Each is renamed to a temporary name first (one atomic step), then the state file is rewritten once (naming the
  // new checkpoint and the kept ones), then the temporaries go. A kill before the state file is rewritten leaves the
  // old one naming missing directories (Open drops them) and the new checkpoint unlisted but newer (Open adopts it);
  // a kill later leaves temporaries (Open removes them).
  std::vector<std::string> doomed;
  for (const CheckpointEntry& e : dropped) {
    const std::string path = e.name[0] == '/' ? e.name : JoinPath(dir_, e.name);
    const std::string tmp = TempCheckpointPath(path);
    if (FileExists(tmp)) STRATA_RETURN_IF_ERROR(RemoveTree(tmp));
    doomed.push_back(std::rename(path.c_str(), tmp.c_str()) == 0 ? tmp : path);
  }
  entries_ = std::move(kept);
  STRATA_RETURN_IF_ERROR(WriteStateFile());
  for (const std::string& path : doomed) STRATA_RETURN_IF_ERROR(RemoveTree(path));
  return Status::OK();
}

StatusOr<std::string> CheckpointManager::Save(const TrainingState& state, const CheckpointOptions& options,
                                              const std::string& name) {
  const std::string rel = name.empty() ? StrCat(options_.checkpoint_name, "-", state.iterations) : name;
  if (rel == kStateFileName || rel.empty()) return InvalidArgumentError("bad checkpoint name '", rel, "'");
  const std::string path = rel[0] == '/' ? rel : JoinPath(dir_, rel);
  STRATA_RETURN_IF_ERROR(MakeDirs(dir_));
  STRATA_RETURN_IF_ERROR(WriteCheckpoint(path, state, options));
  CheckpointEntry e{rel, state.iterations, Now(), std::nullopt, state.run_id, state.epoch};
  if (const double* v = options.metrics.Find(options_.monitor)) e.metric = *v;
  entries_.erase(
      std::remove_if(entries_.begin(), entries_.end(), [&](const CheckpointEntry& x) { return x.name == rel; }),
      entries_.end());
  entries_.push_back(std::move(e));
  STRATA_RETURN_IF_ERROR(Sweep());  // writes the state file
  return path;
}

Status CheckpointManager::DeleteAll() {
  for (const CheckpointEntry& e : entries_)
    STRATA_RETURN_IF_ERROR(RemoveTree(e.name[0] == '/' ? e.name : JoinPath(dir_, e.name)));
  entries_.clear();
  STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(dir_, kStateFileName)));
  for (const std::string& name : ListDir(dir_))
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos)
      STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(dir_, name)));
  return Status::OK();
}

}  // namespace strata::train
