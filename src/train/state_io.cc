// SaveTrainingState / LoadLatestTrainingState: the interim checkpoint directory (see train.h).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/file_util.h"
#include "core/json.h"
#include "io/crc32c.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::train {
namespace {

constexpr char kFormat[] = "strata-training-state/1";

Status RemoveTree(const std::string& path) {
  if (!IsDirectory(path)) {
    std::remove(path.c_str());
    return Status::OK();
  }
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(path, name)));
    }
    closedir(d);
  }
  if (rmdir(path.c_str()) != 0) return InternalError("cannot remove '", path, "'");
  return Status::OK();
}

// ckpt-<n> directories of `dir`, sorted by n.
std::vector<std::pair<int64_t, std::string>> Checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("ckpt-", 0) != 0 || name.find(".tmp") != std::string::npos) continue;
      out.emplace_back(std::atoll(name.c_str() + 5), name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Status SaveTrainingState(const std::string& dir, const TrainingState& s, int keep) {
  STRATA_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string name = StrCat("ckpt-", s.iterations);
  const std::string tmp = JoinPath(dir, StrCat(name, ".tmp.", getpid()));
  if (IsDirectory(tmp)) STRATA_RETURN_IF_ERROR(RemoveTree(tmp));
  STRATA_RETURN_IF_ERROR(MakeDirs(tmp));
  Json tensors = Json::MakeArray();
  int index = 0;
  auto add = [&](const std::map<std::string, Tensor>& m, const char* kind) -> Status {
    for (const auto& [tname, t] : m) {
      STRATA_ASSIGN_OR_RETURN(std::string bytes, onnx::SerializeTensorProto(t, tname));
      const std::string file = StrCat("t", index++, ".pb");
      STRATA_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(tmp, file), bytes));
      Json e = Json::MakeObject();
      e.Set("name", tname);
      e.Set("kind", kind);
      e.Set("file", file);
      e.Set("dtype", std::string(DTypeName(t.dtype())));
      Json shape = Json::MakeArray();
      for (int64_t d : t.shape().dims()) shape.Append(d);
      e.Set("shape", shape);
      e.Set("crc32c", static_cast<int64_t>(io::Crc32c(t.raw_data(), t.byte_size())));
      tensors.Append(std::move(e));
    }
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(add(s.weights, "weight"));
  STRATA_RETURN_IF_ERROR(add(s.slots, "slot"));
  Json state = Json::MakeObject();
  state.Set("format", kFormat);
  state.Set("iterations", s.iterations);
  state.Set("epoch", static_cast<int64_t>(s.epoch));
  state.Set("batch", s.batch);
  state.Set("seed", static_cast<int64_t>(s.seed));
  state.Set("learning_rate_override", s.learning_rate_override ? Json(*s.learning_rate_override) : Json());
  state.Set("tensors", tensors);
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(tmp, "state.json"), state.Dump(1) + "\n"));
  STRATA_RETURN_IF_ERROR(FsyncDirectory(tmp));
  const std::string final_dir = JoinPath(dir, name);
  if (IsDirectory(final_dir)) STRATA_RETURN_IF_ERROR(RemoveTree(final_dir));
  if (std::rename(tmp.c_str(), final_dir.c_str()) != 0)
    return InternalError("cannot rename '", tmp, "' to '", final_dir, "'");
  STRATA_RETURN_IF_ERROR(FsyncDirectory(dir));
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "latest"), name + "\n"));
  // Keep the newest `keep` (the one `latest` names among them).
  auto all = Checkpoints(dir);
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < all.size(); ++i)
    if (all[i].second != name) STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(dir, all[i].second)));
  return Status::OK();
}

StatusOr<std::optional<TrainingState>> LoadLatestTrainingState(const std::string& dir) {
  const std::string pointer = JoinPath(dir, "latest");
  if (!FileExists(pointer)) return std::optional<TrainingState>();
  STRATA_ASSIGN_OR_RETURN(std::string name, ReadFile(pointer));
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  const std::string ckpt = JoinPath(dir, name);
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(ckpt, "state.json")));
  STRATA_ASSIGN_OR_RETURN(Json j, Json::Parse(text, JoinPath(ckpt, "state.json")));
  STRATA_ASSIGN_OR_RETURN(std::string format, j.GetString("format"));
  if (format != kFormat) return DataLossError(ckpt, ": unknown checkpoint format '", format, "'");
  TrainingState s;
  STRATA_ASSIGN_OR_RETURN(s.iterations, j.GetInt("iterations"));
  STRATA_ASSIGN_OR_RETURN(int64_t epoch, j.GetInt("epoch"));
  s.epoch = static_cast<int>(epoch);
  STRATA_ASSIGN_OR_RETURN(s.batch, j.GetInt("batch"));
  STRATA_ASSIGN_OR_RETURN(int64_t seed, j.GetInt("seed"));
  s.seed = static_cast<uint64_t>(seed);
  if (const Json* lr = j.Find("learning_rate_override"); lr && lr->is_number()) s.learning_rate_override = lr->as_double();
  const Json* tensors = j.Find("tensors");
  if (!tensors || !tensors->is_array()) return DataLossError(ckpt, ": state.json has no tensor list");
  for (const Json& e : tensors->as_array()) {
    STRATA_ASSIGN_OR_RETURN(std::string tname, e.GetString("name"));
    STRATA_ASSIGN_OR_RETURN(std::string kind, e.GetString("kind"));
    STRATA_ASSIGN_OR_RETURN(std::string file, e.GetString("file"));
    STRATA_ASSIGN_OR_RETURN(int64_t crc, e.GetInt("crc32c"));
    STRATA_ASSIGN_OR_RETURN(Tensor t, onnx::ReadTensorProtoFile(JoinPath(ckpt, file)));
    if (static_cast<int64_t>(io::Crc32c(t.raw_data(), t.byte_size())) != crc)
      return DataLossError(ckpt, ": tensor '", tname, "' fails its CRC32C check (", file, ")");
    (kind == "slot" ? s.slots : s.weights)[tname] = std::move(t);
  }
  return std::optional<TrainingState>(std::move(s));
}

Status DeleteTrainingStates(const std::string& dir) {
  std::remove(JoinPath(dir, "latest").c_str());
  // Whole checkpoints and the temporary directories a killed writer left behind.
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("ckpt-", 0) == 0) names.push_back(name);
    }
    closedir(d);
  }
  for (const std::string& name : names) STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(dir, name)));
  return Status::OK();
}

}  // namespace strata::train
