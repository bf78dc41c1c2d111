// Checkpoint directories: model.safetensors + optimizer.safetensors + state.json, written crash-safely and read with
// every tensor's CRC32C verified (see train.h and docs/training.md).
#include <fcntl.h>
#include <stdio.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/file_util.h"
#include "core/json.h"
#include "io/crc32c.h"
#include "io/safetensors.h"
#include "train/checkpoint_util.h"

namespace strata::train {
namespace {

constexpr char kFormat[] = "strata-checkpoint/1";
constexpr char kModelFile[] = "model.safetensors";
constexpr char kOptimizerFile[] = "optimizer.safetensors";
constexpr char kStateFile[] = "state.json";
constexpr char kModelConfigFile[] = "model_config.json";
constexpr char kIterations[] = "optimizer/iterations";

double Now() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

Json LogsJson(const Logs& logs) {
  Json o = Json::MakeObject();
  for (const auto& [k, v] : logs.items()) o.Set(k, v);
  return o;
}

StatusOr<Logs> LogsFromJson(const Json& j, std::string_view where) {
  if (!j.is_object()) return DataLossError(where, " must be an object of numbers");
  Logs logs;
  for (const auto& [k, v] : j.as_object()) {
    if (!v.is_number()) return DataLossError(where, " '", k, "' is not a number: ", v.Dump());
    logs.Set(k, v.as_double());
  }
  return logs;
}

// {name: {dtype, shape, crc32c}} of one file's tensors.
Json TensorTable(const io::NamedTensors& tensors) {
  Json table = Json::MakeObject();
  for (const auto& [name, t] : tensors) {
    Json e = Json::MakeObject();
    e.Set("dtype", *io::SafetensorsDTypeName(t.dtype()));
    Json shape = Json::MakeArray();
    for (int i = 0; i < t.rank(); ++i) shape.Append(t.dim(i));
    e.Set("shape", shape);
    e.Set("crc32c", static_cast<int64_t>(io::Crc32c(t.raw_data(), t.byte_size())));
    table.Set(name, e);
  }
  return table;
}

// Checks a file's tensors against state.json's table: the same names, dtypes and shapes, and every CRC32C.
Status VerifyTensors(const io::Safetensors& file, const Json* table, const std::string& where) {
  if (table == nullptr || !table->is_object()) return DataLossError(where, ": state.json lists no tensors for it");
  std::vector<std::string> problems;
  std::set<std::string> listed;
  for (const auto& [name, e] : table->as_object()) {
    listed.insert(name);
    const Tensor* t = file.Find(name);
    if (t == nullptr) {
      problems.push_back(StrCat("tensor '", name, "' is listed in state.json but missing from the file"));
      continue;
    }
    auto dtype = e.GetString("dtype");
    const Json* shape = e.Find("shape");
    auto crc = e.GetInt("crc32c");
    if (!dtype.ok() || !shape || !shape->is_array() || !crc.ok())
      return DataLossError(where, ": state.json's entry of tensor '", name, "' needs dtype, shape and crc32c");
    Json actual_shape = Json::MakeArray();
    for (int i = 0; i < t->rank(); ++i) actual_shape.Append(t->dim(i));
    const std::string actual_dtype = *io::SafetensorsDTypeName(t->dtype());
    if (*dtype != actual_dtype || !(*shape == actual_shape)) {
      problems.push_back(StrCat("tensor '", name, "' is ", actual_dtype, " ", actual_shape.Dump(), " in the file, ",
                                *dtype, " ", shape->Dump(), " in state.json"));
      continue;
    }
    const uint32_t computed = io::Crc32c(t->raw_data(), t->byte_size());
    if (static_cast<int64_t>(computed) != *crc)
      return DataLossError(where, ": tensor '", name, "' fails its CRC32C check (state.json has ", *crc,
                           ", the data gives ", computed, "): the checkpoint is corrupted");
  }
  for (const auto& [name, t] : file.tensors)
    if (!listed.count(name)) problems.push_back(StrCat("tensor '", name, "' is in the file but not in state.json"));
  if (!problems.empty()) return DataLossError(where, ": ", StrJoin(problems, "; "));
  return Status::OK();
}

// Writes and fsyncs a new file inside the temporary directory (whose own fsync and rename publish it: no per-file
// rename needed).
Status WriteFileSynced(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return UnavailableError("cannot create '", path, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      return UnavailableError("writing '", path, "' failed: ", std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced) return UnavailableError("fsync of '", path, "' failed: ", std::strerror(err));
  return Status::OK();
}

Status WriteSafetensorsSynced(const std::string& path, const io::NamedTensors& tensors) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, io::SerializeSafetensors(tensors, {{"format", "strata"}}));
  return WriteFileSynced(path, bytes);
}

Status WriteDirectory(const std::string& tmp, const TrainingState& s, const CheckpointOptions& o) {
  io::NamedTensors weights(s.weights.begin(), s.weights.end());
  STRATA_RETURN_IF_ERROR(WriteSafetensorsSynced(JoinPath(tmp, kModelFile), weights));
  Json tensors = Json::MakeObject();
  tensors.Set(kModelFile, TensorTable(weights));
  if (!o.weights_only) {
    io::NamedTensors slots(s.slots.begin(), s.slots.end());
    slots.emplace_back(kIterations, Tensor::Scalar<int64_t>(s.iterations));
    STRATA_RETURN_IF_ERROR(WriteSafetensorsSynced(JoinPath(tmp, kOptimizerFile), slots));
    tensors.Set(kOptimizerFile, TensorTable(slots));
  }
  Json state = Json::MakeObject();
  state.Set("format", kFormat);
  state.Set("step", s.iterations);
  state.Set("epoch", static_cast<int64_t>(s.epoch));
  state.Set("batch", s.batch);
  Json rng = Json::MakeObject();
  rng.Set("seed", StrCat(s.seed));  // a string: uint64 does not fit JSON's (or Python's float) doubles
  rng.Set("streams", "weights: (seed, name); dropout: (seed, step); data order: (seed, epoch) + batch");
  state.Set("rng", rng);
  state.Set("learning_rate_override", s.learning_rate_override ? Json(*s.learning_rate_override) : Json());
  state.Set("dataset_manifest_hash", s.dataset_hash);
  state.Set("run_id", s.run_id);
  state.Set("weights_only", o.weights_only);
  state.Set("metrics", LogsJson(o.metrics));
  Json history = Json::MakeArray();
  for (const auto& [epoch, logs] : s.history) {
    Json row = Json::MakeObject();
    row.Set("epoch", static_cast<int64_t>(epoch));
    row.Set("logs", LogsJson(logs));
    history.Append(row);
  }
  state.Set("history", history);
  Json meta = Json::MakeObject();
  for (const auto& [k, v] : o.metadata) meta.Set(k, v);
  state.Set("metadata", meta);
  if (!o.model_config.empty()) {
    const std::string text = o.model_config + "\n";
    STRATA_RETURN_IF_ERROR(WriteFileSynced(JoinPath(tmp, kModelConfigFile), text));
    Json cfg = Json::MakeObject();
    cfg.Set("file", kModelConfigFile);
    cfg.Set("crc32c", static_cast<int64_t>(io::Crc32c(text.data(), text.size())));
    state.Set("model_config", cfg);
  }
  state.Set("written_at", Now());
  state.Set("tensors", tensors);
  // state.json last: a directory with it is complete (the rename makes that visible at once anyway).
  STRATA_RETURN_IF_ERROR(WriteFileSynced(JoinPath(tmp, kStateFile), state.Dump(1) + "\n"));
  return FsyncDirectory(tmp);
}

}  // namespace

Status RemoveTree(const std::string& path) {
  if (!IsDirectory(path)) {
    if (std::remove(path.c_str()) != 0 && FileExists(path)) return InternalError("cannot remove '", path, "'");
    return Status::OK();
  }
  std::vector<std::string> names;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  for (const std::string& name : names) STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(path, name)));
  if (rmdir(path.c_str()) != 0) return InternalError("cannot remove directory '", path, "'");
  return Status::OK();
}

std::string TempCheckpointPath(const std::string& path) {
  return JoinPath(Dirname(path), StrCat(".", Basename(path), ".tmp.", static_cast<int64_t>(getpid())));
}

Status WriteCheckpoint(const std::string& path, const TrainingState& s, const CheckpointOptions& o) {
  std::string final_path = path;
  while (final_path.size() > 1 && final_path.back() == '/') final_path.pop_back();
  const std::string parent = Dirname(final_path);
  STRATA_RETURN_IF_ERROR(MakeDirs(parent.empty() ? "." : parent));
  const std::string tmp = TempCheckpointPath(final_path);
  if (FileExists(tmp)) STRATA_RETURN_IF_ERROR(RemoveTree(tmp));
  STRATA_RETURN_IF_ERROR(MakeDirs(tmp));
  Status st = WriteDirectory(tmp, s, o);
  if (!st.ok()) {
    (void)RemoveTree(tmp);
    return st.WithContext(StrCat("writing checkpoint '", final_path, "'"));
  }
  if (FileExists(final_path)) {
    // Swap the complete new directory with the old one in one step, then remove the old one (now at `tmp`).
    if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_EXCHANGE) != 0) {
      // A file system without RENAME_EXCHANGE: remove, then rename (a kill in between loses this name only).
      STRATA_RETURN_IF_ERROR(RemoveTree(final_path));
      if (std::rename(tmp.c_str(), final_path.c_str()) != 0)
        return UnavailableError("cannot rename '", tmp, "' to '", final_path, "'");
    }
  } else if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return UnavailableError("cannot rename '", tmp, "' to '", final_path, "'");
  }
  STRATA_RETURN_IF_ERROR(FsyncDirectory(parent.empty() ? "." : parent));
  if (FileExists(tmp)) STRATA_RETURN_IF_ERROR(RemoveTree(tmp));
  return Status::OK();
}

StatusOr<Checkpoint> ReadCheckpointState(const std::string& path, Json* tensors_out) {
  const std::string state_path = JoinPath(path, kStateFile);
  if (!IsDirectory(path)) return NotFoundError("checkpoint '", path, "' is not a directory");
  if (!FileExists(state_path)) return NotFoundError("checkpoint '", path, "' has no ", kStateFile);
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(state_path));
  auto parsed = Json::Parse(text, state_path);
  if (!parsed.ok()) return DataLossError(parsed.status().message());
  const Json& j = *parsed;
  auto fail = [&](const Status& s) { return DataLossError(state_path, ": ", s.message()); };
  auto format = j.GetString("format");
  if (!format.ok()) return fail(format.status());
  if (*format != kFormat)
    return DataLossError(state_path, ": checkpoint format '", *format, "', this build reads '", kFormat, "'");
  Checkpoint c;
  c.path = path;
  TrainingState& s = c.state;
  auto step = j.GetInt("step");
  auto epoch = j.GetInt("epoch");
  auto batch = j.GetInt("batch");
  auto weights_only = j.GetBool("weights_only");
  for (const Status& st : {step.status(), epoch.status(), batch.status(), weights_only.status()})
    if (!st.ok()) return fail(st);
  s.iterations = *step;
  s.epoch = static_cast<int>(*epoch);
  s.batch = *batch;
  c.weights_only = *weights_only;
  const Json* rng = j.Find("rng");
  if (rng == nullptr || !rng->is_object()) return DataLossError(state_path, ": no rng object");
  auto seed = rng->GetString("seed");
  if (!seed.ok()) return fail(seed.status());
  char* end = nullptr;
  s.seed = std::strtoull(seed->c_str(), &end, 10);
  if (seed->empty() || *end != '\0') return DataLossError(state_path, ": rng seed '", *seed, "' is not a number");
  if (const Json* lr = j.Find("learning_rate_override"); lr && lr->is_number())
    s.learning_rate_override = lr->as_double();
  if (const Json* h = j.Find("dataset_manifest_hash"); h && h->is_string()) s.dataset_hash = h->as_string();
  if (const Json* r = j.Find("run_id"); r && r->is_string()) s.run_id = r->as_string();  // absent before run ids
  if (const Json* m = j.Find("metrics")) {
    STRATA_ASSIGN_OR_RETURN(c.metrics, LogsFromJson(*m, StrCat(state_path, ": metrics")));
  }
  if (const Json* h = j.Find("history"); h && h->is_array()) {
    for (const Json& row : h->as_array()) {
      auto e = row.GetInt("epoch");
      const Json* logs = row.Find("logs");
      if (!e.ok() || logs == nullptr) return DataLossError(state_path, ": history rows need epoch and logs");
      STRATA_ASSIGN_OR_RETURN(Logs l, LogsFromJson(*logs, StrCat(state_path, ": history")));
      s.history.emplace_back(static_cast<int>(*e), std::move(l));
    }
  }
  if (const Json* m = j.Find("metadata"); m && m->is_object())
    for (const auto& [k, v] : m->as_object())
      if (v.is_string()) c.metadata[k] = v.as_string();
  if (const Json* w = j.Find("written_at"); w && w->is_number()) c.written_at = w->as_double();
  if (const Json* cfg = j.Find("model_config"); cfg && !cfg->is_null()) {  // absent before model configs
    auto file = cfg->is_object() ? cfg->GetString("file") : StatusOr<std::string>(kModelConfigFile);
    auto crc = cfg->is_object() ? cfg->GetInt("crc32c") : StatusOr<int64_t>(int64_t{-1});
    if (!file.ok() || !crc.ok() || *file != kModelConfigFile)
      return DataLossError(state_path, ": model_config needs {\"file\": \"", kModelConfigFile, "\", \"crc32c\": N}");
    const std::string config_path = JoinPath(path, kModelConfigFile);
    auto text = ReadFile(config_path);
    if (!text.ok()) return DataLossError(config_path, " (named by state.json): ", text.status().message());
    const uint32_t computed = io::Crc32c(text->data(), text->size());
    if (static_cast<int64_t>(computed) != *crc)
      return DataLossError(config_path, ": fails its CRC32C check (state.json has ", *crc, ", the file ", computed,
                           ")");
    c.model_config = std::move(*text);
  }
  const Json* tensors = j.Find("tensors");
  if (tensors == nullptr || !tensors->is_object()) return DataLossError(state_path, ": no tensors object");
  if (tensors_out != nullptr) *tensors_out = *tensors;
  return c;
}

StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  Json table;
  STRATA_ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpointState(path, &table));
  const Json* tensors = &table;
  TrainingState& s = c.state;

  const std::string model_path = JoinPath(path, kModelFile);
  STRATA_ASSIGN_OR_RETURN(io::Safetensors model, io::ReadSafetensors(model_path));
  STRATA_RETURN_IF_ERROR(VerifyTensors(model, tensors->Find(kModelFile), model_path));
  for (auto& [name, t] : model.tensors) s.weights[name] = std::move(t);
  if (!c.weights_only) {
    const std::string opt_path = JoinPath(path, kOptimizerFile);
    STRATA_ASSIGN_OR_RETURN(io::Safetensors opt, io::ReadSafetensors(opt_path));
    STRATA_RETURN_IF_ERROR(VerifyTensors(opt, tensors->Find(kOptimizerFile), opt_path));
    for (auto& [name, t] : opt.tensors) {
      if (name == kIterations) {
        if (t.dtype() != DType::kInt64 || t.num_elements() != 1)
          return DataLossError(opt_path, ": '", kIterations, "' must be an int64 scalar, got ", t.TypeString());
        if (t.data<int64_t>()[0] != s.iterations)
          return DataLossError(opt_path, ": '", kIterations, "' is ", t.data<int64_t>()[0], ", state.json's step is ",
                               s.iterations);
        continue;
      }
      s.slots[name] = std::move(t);
    }
  }
  return c;
}

Status CheckWeightsMatch(const nn::Model& model, const std::map<std::string, Tensor>& weights, std::string_view where) {
  std::vector<std::string> problems;
  for (const nn::WeightSpec& w : model.weight_specs()) {
    auto it = weights.find(w.name);
    const std::string want = StrCat(DTypeName(w.dtype), w.shape.ToString());
    if (it == weights.end())
      problems.push_back(StrCat("missing weight '", w.name, "' (", want, ")"));
    else if (it->second.dtype() != w.dtype || it->second.shape() != w.shape)
      problems.push_back(
          StrCat("weight '", w.name, "' is ", want, " in the model, ", it->second.TypeString(), " in ", where));
  }
  std::set<std::string> known;
  for (const nn::WeightSpec& w : model.weight_specs()) known.insert(w.name);
  for (const auto& [name, t] : weights)
    if (!known.count(name)) problems.push_back(StrCat("unexpected weight '", name, "' (", t.TypeString(), ")"));
  if (!problems.empty())
    return InvalidArgumentError(where, " does not match model '", model.name(), "': ", StrJoin(problems, "; "));
  return Status::OK();
}

Status RestoreCheckpoint(Trainer& trainer, const Checkpoint& c) {
  TrainingState s = c.state;
  if (c.weights_only) s.slots = trainer.GetState().slots;
  Status st = trainer.SetState(s);
  if (!st.ok()) return st.WithContext(StrCat("restoring checkpoint '", c.path, "'"));
  return Status::OK();
}

}  // namespace strata::train
