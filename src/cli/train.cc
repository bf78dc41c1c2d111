// `strata train`: the flags of a production train.py (see train_common.h), Keras-style progress, CSV logs,
// checkpoints in --checkpoint_dir (CheckpointManager: newest N, best K) and bitwise --resume, optional export.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "cli/tf_weights.h"
#include "cli/train_common.h"
#include "core/file_util.h"
#include "core/json.h"
#include "core/logging.h"
#include "core/parallel.h"
#include "strata/train.h"
#include "train/distributed.h"

namespace strata::cli {
namespace {

// Saves a checkpoint through the manager at every epoch end, and every --checkpoint_steps steps.
class SaveCheckpoints final : public train::Callback {
 public:
  SaveCheckpoints(train::CheckpointManager* manager, const TrainFlags& f)
      : manager_(manager), steps_(f.checkpoint_steps) {
    metadata_ = {{"model_name", f.model_name},
                 {"num_classes", StrCat(f.num_classes)},
                 {"input_shape", StrJoin(f.input_shape, ",")},
                 {"optimizer", f.optimizer}};
  }
  Status OnTrainBatchEnd(train::Trainer& t, int64_t, const train::Logs& logs) override {
    if (steps_ > 0 && t.iterations() % steps_ == 0) return Save(t, logs);
    return Status::OK();
  }
  Status OnEpochEnd(train::Trainer& t, int, train::Logs& logs) override { return Save(t, logs); }

 private:
  Status Save(train::Trainer& t, const train::Logs& logs) {
    if (!config_) {  // once; a model with a layer that cannot describe itself is saved without a config
      auto c = t.model().GetConfig();
      config_ = c.ok() ? *c : std::string();
    }
    return manager_->Save(t.GetState(), {.metrics = logs, .metadata = metadata_, .model_config = *config_}).status();
  }
  train::CheckpointManager* manager_;
  int64_t steps_;
  std::map<std::string, std::string> metadata_;
  std::optional<std::string> config_;
};

std::string RunName(const std::string& run_id) {
  return run_id.empty() ? "<unknown> (written before run ids)" : run_id;
}

// "run 3f2a...: 2 checkpoints, steps 20..40; latest 'dir/ckpt-40', which resumes at epoch 3": one part per run,
// joined by " / ", in the order of their first kept checkpoint.
std::string DescribeRuns(const train::CheckpointManager& manager) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const train::CheckpointEntry*>> by_run;
  for (const train::CheckpointEntry& e : manager.checkpoints()) {
    if (!by_run.count(e.run_id)) order.push_back(e.run_id);
    by_run[e.run_id].push_back(&e);
  }
  std::vector<std::string> parts;
  for (const std::string& id : order) {
    const auto& list = by_run.at(id);
    int64_t lo = list.front()->step, hi = lo;
    for (const auto* e : list) {
      lo = std::min(lo, e->step);
      hi = std::max(hi, e->step);
    }
    const train::CheckpointEntry& latest = *list.back();
    const std::string path = latest.name[0] == '/' ? latest.name : JoinPath(manager.directory(), latest.name);
    parts.push_back(StrCat(
        "run ", RunName(id), ": ", list.size(), list.size() == 1 ? " checkpoint, step " : " checkpoints, steps ", lo,
        lo == hi ? "" : StrCat("..", hi), "; latest '", path, "', which resumes at epoch ", latest.epoch + 1));
  }
  return StrJoin(parts, " / ");
}

// A fresh run in a directory that holds checkpoints: they are another run's, which --resume would later mix with
// this one's. Refused unless --overwrite (checked before any work, so a refusal costs nothing).
Status CheckFreshRunDir(const train::CheckpointManager& manager, const TrainFlags& f) {
  if (manager.checkpoints().empty() || f.overwrite) return Status::OK();
  return FailedPreconditionError(
      "--checkpoint_dir '", f.checkpoint_dir, "' holds the checkpoints of another run (", DescribeRuns(manager),
      "); a new run there would mix its checkpoints with them. Pass --resume to continue that run, --overwrite to "
      "delete them and start a new run, or choose another --checkpoint_dir");
}

// --overwrite: deletes the other run's checkpoints (saying what it deletes) just before the new run starts.
Status OverwriteCheckpointDir(train::CheckpointManager* manager, const TrainFlags& f) {
  if (manager->checkpoints().empty()) return Status::OK();
  LogWarning("--overwrite: deleting the checkpoints in ", f.checkpoint_dir, " of ", DescribeRuns(*manager));
  return manager->DeleteAll();
}

// multi_worker_mirrored: MPI's workers (nullptr otherwise). Refuses a launch by mpirun without the strategy, whose
// processes would each train alone and write the same checkpoints.
StatusOr<std::shared_ptr<train::MpiCollective>> StartWorkers(const TrainFlags& f) {
  if (!IsMultiWorker(f)) {
    if (const int n = train::LaunchedWorldSize(); n > 1)
      return FailedPreconditionError("started by an MPI launcher as one of ", n, " processes, but "
                                     "--distribution_strategy is '", f.distribution_strategy, "': each process would "
                                     "train alone on all the data and write the same files; pass "
                                     "--distribution_strategy multi_worker_mirrored");
    return std::shared_ptr<train::MpiCollective>();
  }
  train::MpiOptions mo;
  mo.bucket_bytes = static_cast<int64_t>(f.allreduce_bucket_mb * (1 << 20));
  mo.timeout_s = f.collective_timeout_s;
  mo.deterministic = f.deterministic;
  return train::MpiCollective::Create(mo);
}

// What every worker must agree on: the model and training flags (+ the model's weights), and the data version.
Status CheckWorkersAgree(train::MpiCollective& workers, const TrainFlags& f, const nn::Model& model,
                         const std::string& dataset_hash) {
  std::string config = StrCat(f.model_name, "|", StrJoin(f.input_shape, ","), "|", f.num_classes, "|", f.batch_size,
                              "|", f.epochs, "|", f.optimizer, "|", f.learning_rate, "|", f.lr_schedule, "|",
                              f.warmup_epochs, "|", f.weight_decay, "|", f.global_clipnorm, "|", f.seed, "|",
                              f.deterministic, "|", f.steps_per_epoch, "|", f.resume, "|", f.sync_batch_norm, "|",
                              f.allreduce_overlap, "|", f.allreduce_overlap_given);
  for (const nn::WeightSpec& w : model.weight_specs())
    config += StrCat("|", w.name, ":", DTypeName(w.dtype), w.shape.ToString(), w.trainable ? "" : ":frozen");
  STRATA_RETURN_IF_ERROR(workers.CheckSame(config, "the model config and training flags"));
  return workers.CheckSame(dataset_hash, StrCat("the training data manifest (hash ", dataset_hash, ")"));
}

Status RunTrainIn(CLI::App* cmd, TrainFlags f, std::shared_ptr<train::MpiCollective>* workers_out);

// The head: the last layer (topologically) that has weights, e.g. the final Dense of every zoo model.
StatusOr<int> HeadIndex(const nn::Model& model) {
  const auto layers = model.layers();
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i)
    if (!layers[i]->weights().empty()) return i;
  return InvalidArgumentError("model '", model.name(), "' has no layer with weights");
}

// --fine_tune_at: a layer name, or an index into Keras's model.layers, which lists the input layers first (as the
// summary does). Returns the index into Model::layers() (no input layers); an input layer means "from the first".
StatusOr<int> KerasLayerIndex(const nn::Model& model, const std::string& name_or_index) {
  const int inputs = static_cast<int>(model.input_names().size());
  const int n = static_cast<int>(model.layers().size()) + inputs;
  const bool numeric = !name_or_index.empty() && name_or_index.size() < 10 &&
                       name_or_index.find_first_not_of("0123456789") == std::string::npos;
  if (!numeric) {
    if (!name_or_index.empty() && name_or_index[0] == '-')
      return InvalidArgumentError("layer index ", name_or_index, " is negative; give 0..", n - 1, " or a layer name");
    return model.LayerIndex(name_or_index);
  }
  const int i = std::stoi(name_or_index);
  if (i >= n)
    return OutOfRangeError("layer index ", i, " is past the last layer of model '", model.name(), "', which has ", n,
                           " layers (indices 0..", n - 1, ", the input layer first, as in the summary)");
  return std::max(0, i - inputs);
}

// --weights: loads every weight, except the head when --new_head says so or when the file's head has another shape
// (another --num_classes): then the head keeps its fresh initialisation.
Status LoadInitialWeights(nn::Model& model, const TrainFlags& f) {
  nn::LoadWeightsOptions o;
  if (!f.weights_name_map.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(f.weights_name_map));
    STRATA_ASSIGN_OR_RETURN(Json j, Json::Parse(text, f.weights_name_map));
    if (!j.is_object())
      return InvalidArgumentError("--weights_name_map '", f.weights_name_map, "': expected a JSON object of file "
                                  "tensor name -> model weight name");
    for (const auto& [k, v] : j.as_object()) {
      if (!v.is_string())
        return InvalidArgumentError("--weights_name_map '", f.weights_name_map, "': the value of '", k,
                                    "' must be a weight name string");
      o.name_map[k] = v.as_string();
    }
  }
  nn::WeightsFile file;
  if (IsTfCheckpointPrefix(f.weights)) {  // a Keras model's tf.train.Checkpoint
    STRATA_ASSIGN_OR_RETURN(file, ReadKerasTfCheckpoint(model, f.weights));
  } else {
    STRATA_ASSIGN_OR_RETURN(file, nn::ReadWeightsFile(f.weights, o, &model));
  }
  // Model names from here on (the head check below looks tensors up by them).
  if (!o.name_map.empty()) {
    std::map<std::string, Tensor> renamed;
    for (auto& [k, t] : file.tensors) {
      auto m = o.name_map.find(k);
      const std::string name = m == o.name_map.end() ? k : m->second;
      if (!renamed.emplace(name, t).second)
        return InvalidArgumentError("--weights_name_map maps two tensors of ", file.where, " to '", name, "'");
    }
    file.tensors = std::move(renamed);
    o.name_map.clear();
  }
  STRATA_ASSIGN_OR_RETURN(int head, HeadIndex(model));
  const nn::Layer* h = model.layers()[head];
  std::string reason;
  if (f.new_head) reason = "--new_head";
  for (const nn::WeightSpec& w : h->weights()) {
    auto it = file.tensors.find(w.name);
    if (reason.empty() && it != file.tensors.end() && it->second.shape() != w.shape)
      reason = StrCat("the file's '", w.name, "' is ", it->second.TypeString(), ", the model's (--num_classes ",
                      f.num_classes, ") ", DTypeName(w.dtype), w.shape.ToString());
  }
  if (!reason.empty()) {
    o.skip_prefixes.push_back(h->name() + "/");
    o.ignore_unexpected = file.extra_tensors_expected;
    // The file's head tensors are not loaded: drop them so that they are not reported as unexpected either.
    for (const nn::WeightSpec& w : h->weights()) file.tensors.erase(w.name);
    LogInfo("new head: layer '", h->name(), "' (", h->type(), ") keeps its fresh initialisation (", reason, ")");
  }
  if (file.extra_tensors_expected) o.ignore_unexpected = true;
  STRATA_RETURN_IF_ERROR(nn::AssignWeights(model, file.tensors, file.where, o));
  LogInfo("loaded the weights of model '", model.name(), "' from ", file.where);
  return Status::OK();
}

// "conv2d=0.1,dense_1/=10" -> {{"conv2d", 0.1}, {"dense_1/", 10}}.
StatusOr<std::vector<std::pair<std::string, double>>> ParseLrMultipliers(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  if (text.empty()) return out;
  std::vector<std::string> parts;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  for (const std::string& part : parts) {
    const size_t eq = part.rfind('=');
    char* end = nullptr;
    const double m = eq == std::string::npos ? 0 : std::strtod(part.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == part.c_str() + eq + 1 || *end != '\0')
      return InvalidArgumentError("--lr_multipliers: expected prefix=multiplier, got '", part,
                                  "' (e.g. --lr_multipliers conv2d=0.1,dense_1/=10)");
    out.emplace_back(part.substr(0, eq), m);
  }
  return out;
}

// Two-phase fine-tuning (Keras's transfer-learning guide): phase 1 trains the head with the base frozen, phase 2
// unfreezes layers [fine_tune_at, end) at a constant, lower learning rate. Applied at the start of each phase's
// first epoch; the trainer notices the changed trainable weights and recompiles its plan (it logs so).
class FineTunePhases final : public train::Callback {
 public:
  FineTunePhases(nn::Model* model, int head, int head_epochs, int fine_at, double fine_lr)
      : model_(model), head_(head), head_epochs_(head_epochs), fine_at_(fine_at), fine_lr_(fine_lr) {}
  Status OnEpochBegin(train::Trainer& t, int epoch) override {
    const auto layers = model_->layers();
    if (epoch == 0 && head_epochs_ > 0) {
      for (size_t i = 0; i < layers.size(); ++i) layers[i]->set_trainable(static_cast<int>(i) == head_);
      LogInfo("phase 1 (", head_epochs_, " epochs): base frozen, training the head '", layers[head_]->name(),
              "': ", model_->CountParams(true), " trainable params of ", model_->CountParams(false));
    }
    if (epoch == head_epochs_ && fine_at_ >= 0) {
      for (size_t i = 0; i < layers.size(); ++i) layers[i]->set_trainable(static_cast<int>(i) >= fine_at_);
      t.SetLearningRate(fine_lr_);
      LogInfo("phase 2: fine-tuning from layer '", layers[fine_at_]->name(), "' (index ",
              fine_at_ + model_->input_names().size(), ") on, lr ",
              fine_lr_, ": ", model_->CountParams(true), " trainable params of ", model_->CountParams(false));
    }
    return Status::OK();
  }

 private:
  nn::Model* model_;
  int head_, head_epochs_, fine_at_;
  double fine_lr_;
};

// --input_signature for the model's inputs: an entry without a name is the model's only input. A fixed batch
// dimension must be the per-worker batch (the training batches all are: the partial one is dropped); it is left free
// in the sessions, since validation batches have their own size.
StatusOr<std::vector<graph::SignatureEntry>> TrainInputSignature(const TrainFlags& f, const nn::Model& model,
                                                                 int num_workers) {
  if (f.input_signature.empty()) return std::vector<graph::SignatureEntry>{};
  STRATA_ASSIGN_OR_RETURN(auto sig, graph::ParseInputSignature(f.input_signature, "--input_signature"));
  const auto& names = model.input_names();
  const int64_t batch = f.batch_size / std::max(1, num_workers);
  for (graph::SignatureEntry& e : sig) {
    if (e.name.empty()) {
      if (names.size() != 1)
        return InvalidArgumentError("--input_signature: name the input (NAME:[...]); the model has ", names.size(),
                                    ": ", StrJoin(names, ", "));
      e.name = names[0];
    } else if (std::find(names.begin(), names.end(), e.name) == names.end()) {
      return InvalidArgumentError("--input_signature names input '", e.name, "'; the model's inputs are ",
                                  StrJoin(names, ", "));
    }
    if (e.shape.rank() < 1) return InvalidArgumentError("--input_signature: input '", e.name, "' needs a batch dim");
    if (e.shape.dims[0].known() && e.shape.dims[0].value != batch)
      return InvalidArgumentError("--input_signature: input '", e.name, "' fixes the batch at ", e.shape.dims[0].value,
                                  ", but the training batch is ", batch, " (--batch_size); use -1 or ", batch);
    e.shape.dims[0] = Dim();
  }
  return sig;
}

Status RunTrain(CLI::App* cmd, TrainFlags f) {
  std::shared_ptr<train::MpiCollective> workers;
  Status s = RunTrainIn(cmd, std::move(f), &workers);
  if (s.ok() || !workers || workers->size() == 1) return s;
  // One worker failed: say which, then end the whole job (the others would wait for it until their timeout).
  ReportError(Status(s.code(), StrCat("rank ", workers->rank(), " of ", workers->size(), ": ", s.message())));
  train::MpiCollective::Abort(1);
}

Status RunTrainIn(CLI::App* cmd, TrainFlags f, std::shared_ptr<train::MpiCollective>* workers_out) {
  STRATA_RETURN_IF_ERROR(ApplyConfig(cmd, &f));
  if (f.resume && f.overwrite)
    return InvalidArgumentError("--resume continues the run in --checkpoint_dir and --overwrite deletes it: give one");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<train::MpiCollective> workers, StartWorkers(f));
  *workers_out = workers;
  const int num_workers = workers ? workers->size() : 1;
  const int rank = workers ? workers->rank() : 0;
  const bool chief = rank == 0;  // alone writes checkpoints, logs and exports, and prints progress
  if (!chief) f.verbose = 0;
  // Every step allocates the new weights and slots (functional state, docs/training.md): keep freed memory in the
  // heap instead of returning it to the kernel and faulting fresh zeroed pages in again on the next step.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  if (f.intra_op_threads > 0) SetIntraOpThreads(f.intra_op_threads);
  if (num_workers > 1 && chief) {
    const std::string algorithm = train::MpiCollective::IallreduceAlgorithm();
    LogInfo("multi_worker_mirrored: ", num_workers, " workers, global batch ", f.batch_size, " = ", num_workers, " x ",
            f.batch_size / num_workers, algorithm.empty() ? "" : StrCat(", gradient allreduce: ", algorithm));
  }
  if (chief)
    LogInfo("strata train: model ", f.model_name, ", batch ", f.batch_size, ", ", f.epochs, " epochs, optimizer ",
            f.optimizer, ", lr ", f.learning_rate, " (", f.lr_schedule, "), intra-op threads ", IntraOpThreads(),
            f.deterministic ? ", deterministic" : "");
  std::unique_ptr<train::CheckpointManager> manager;
  std::string dataset_hash;
  if (!f.checkpoint_dir.empty() || num_workers > 1) {
    // The dataset version goes into every checkpoint; --resume refuses a checkpoint of other data.
    STRATA_ASSIGN_OR_RETURN(dataset_hash, TrainDataHash(f));
  }
  if (!f.checkpoint_dir.empty() && chief) {
    STRATA_ASSIGN_OR_RETURN(
        manager, train::CheckpointManager::Open(
                     f.checkpoint_dir,
                     {.max_to_keep = f.keep_checkpoints, .keep_best = f.keep_best, .monitor = f.checkpoint_monitor}));
    if (!f.resume) STRATA_RETURN_IF_ERROR(CheckFreshRunDir(*manager, f));
  }
  STRATA_ASSIGN_OR_RETURN(data::Dataset train_ds, TrainDataset(f, {num_workers, rank}));
  auto test_ds = TestDataset(f);
  std::unique_ptr<nn::Model> model;
  if (!f.onnx_model.empty()) {
    nn::OnnxTransferOptions oo;
    oo.input_shape = f.input_shape;
    oo.head_at = f.head_at;
    oo.num_classes = f.num_classes;
    oo.seed = f.seed;
    oo.model_name = f.model_name == "cnn_small" ? "onnx_transfer" : f.model_name;
    auto m = nn::OnnxTransferModel(f.onnx_model, oo);
    if (!m.ok()) return Status(m.status()).WithContext(StrCat("--onnx_model '", f.onnx_model, "'"));
    model = std::move(*m);
    f.model_name = model->name();
    LogInfo("fine-tuning ONNX model '", f.onnx_model, "' up to '", f.head_at.empty() ? "its output" : f.head_at,
            "' with a new head of ", f.num_classes, " classes: ", model->CountParams(true), " trainable params");
  } else {
    if (!f.head_at.empty()) return InvalidArgumentError("--head_at needs --onnx_model");
    STRATA_ASSIGN_OR_RETURN(model, nn::ZooModel(f.model_name, f.input_shape, f.num_classes));
  }
  STRATA_RETURN_IF_ERROR(model->Build(f.seed));
  // Transfer learning: checked before any work, so that a bad flag or weights file changes nothing.
  const bool two_phase = f.freeze_base || !f.fine_tune_at.empty();
  if (f.head_epochs >= 0 && !f.freeze_base) return InvalidArgumentError("--head_epochs needs --freeze_base");
  if (!f.fine_tune_at.empty() && f.fine_tune_epochs <= 0)
    return InvalidArgumentError("--fine_tune_at needs --fine_tune_epochs N (N > 0), the epochs of phase 2");
  if (f.fine_tune_at.empty() && f.fine_tune_epochs > 0)
    return InvalidArgumentError("--fine_tune_epochs needs --fine_tune_at LAYER (the first layer to unfreeze)");
  if (two_phase && f.resume)
    return UnimplementedError("--resume of a two-phase fine-tuning run (--freeze_base / --fine_tune_at) is not "
                              "built yet; run the phases as two `strata train` runs, the second with --weights");
  const int head_epochs = f.freeze_base ? (f.head_epochs >= 0 ? f.head_epochs : f.epochs) : 0;
  int fine_at = -1;
  if (!f.fine_tune_at.empty()) {
    auto i = KerasLayerIndex(*model, f.fine_tune_at);
    if (!i.ok()) return Status(i.status()).WithContext("--fine_tune_at");
    fine_at = *i;
  }
  STRATA_ASSIGN_OR_RETURN(int head, HeadIndex(*model));
  if (two_phase) f.epochs = head_epochs + (fine_at >= 0 ? f.fine_tune_epochs : 0);
  if (f.epochs < 1) return InvalidArgumentError("nothing to train: 0 epochs");
  const double fine_lr = f.fine_tune_learning_rate >= 0 ? f.fine_tune_learning_rate : f.learning_rate / 10;
  if (!f.weights.empty() && !f.resume) STRATA_RETURN_IF_ERROR(LoadInitialWeights(*model, f));
  if (num_workers > 1) STRATA_RETURN_IF_ERROR(CheckWorkersAgree(*workers, f, *model, dataset_hash));
  if (f.verbose > 0) {
    STRATA_ASSIGN_OR_RETURN(std::string summary, model->Summary());
    std::printf("%s", summary.c_str());
  }
  int64_t steps = f.steps_per_epoch;
  if (steps < 0) {
    STRATA_ASSIGN_OR_RETURN(steps, CountBatches(train_ds));
  }
  if (num_workers > 1) {  // every worker takes as many steps as the one with the fewest batches
    if (f.steps_per_epoch >= 0) {  // never more than a worker's shard holds (it would stop early, the others wait)
      STRATA_ASSIGN_OR_RETURN(int64_t batches, CountBatches(train_ds));
      steps = std::min(steps, batches);
    }
    STRATA_RETURN_IF_ERROR(workers->AllReduceMin(&steps, "the number of steps per epoch"));
    if (steps == 0)
      return InvalidArgumentError("a worker's shard of the training data holds no whole batch of ",
                                  f.batch_size / num_workers, " examples (global batch ", f.batch_size, " over ",
                                  num_workers, " workers)");
  }
  train::CompileOptions c;
  STRATA_ASSIGN_OR_RETURN(c.optimizer_config.lr_multipliers, ParseLrMultipliers(f.lr_multipliers));
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.metrics["logits"] = {"accuracy"};
  c.optimizer = f.optimizer;
  {
    TrainFlags schedule_flags = f;  // phase 1's schedule spans phase 1 (phase 2 runs at a constant rate)
    if (two_phase && head_epochs > 0) schedule_flags.epochs = head_epochs;
    STRATA_ASSIGN_OR_RETURN(c.optimizer_config.learning_rate, MakeSchedule(schedule_flags, steps));
  }
  if (f.weight_decay >= 0) c.optimizer_config.weight_decay = f.weight_decay;
  if (f.global_clipnorm > 0) c.optimizer_config.clip.global_clipnorm = f.global_clipnorm;
  train::TrainerOptions to;
  to.seed = f.seed;
  to.deterministic = f.deterministic;
  to.intra_op_threads = f.intra_op_threads;
  to.conv_algorithm = f.conv_algorithm;
  to.check_numerics = f.check_numerics;
  STRATA_ASSIGN_OR_RETURN(to.input_signature, TrainInputSignature(f, *model, num_workers));
  std::shared_ptr<train::Callback> profile_cb;
  if (!f.profile_steps.empty()) {
    STRATA_ASSIGN_OR_RETURN(auto range, train::ParseProfileSteps(f.profile_steps, "--profile_steps"));
    if (f.log_dir.empty() && f.profile.empty())
      return InvalidArgumentError("--profile_steps needs --log_dir (the trace goes to <log_dir>/plugins/profile/) "
                                  "or --profile FILE");
    to.profiler = std::make_shared<graph::Profiler>();
    if (chief) {
      STRATA_ASSIGN_OR_RETURN(profile_cb, train::ProfileSteps({.profiler = to.profiler, .first = range.first,
                                                                .last = range.second, .log_dir = f.log_dir,
                                                                .path = f.profile}));
    }
  } else if (!f.profile.empty()) {
    return InvalidArgumentError("--profile needs --profile_steps A,B (the training steps to record)");
  }
  STRATA_ASSIGN_OR_RETURN(to.mixed_precision, nn::ParseDTypePolicy(f.mixed_precision, "--mixed_precision"));
  STRATA_ASSIGN_OR_RETURN(to.loss_scale.mode, train::ParseLossScaleMode(f.loss_scale, "--loss_scale"));
  to.memory_limit_bytes = static_cast<size_t>(f.memory_limit_mb) << 20;
  to.dataset_hash = dataset_hash;
  to.collective = workers;
  to.overlap_allreduce = f.allreduce_overlap;
  if (f.allreduce_overlap_given) to.overlap_min_bytes = 0;  // the user's choice, whatever the size
  STRATA_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(model.get(), c, to));
  if (f.sync_batch_norm) {
    const int synced = nn::SynchronizeBatchNormalization(*model);
    if (synced == 0)
      return InvalidArgumentError("--sync_batch_norm: model '", f.model_name, "' has no BatchNormalization layer");
    if (f.verbose > 0) std::printf("--sync_batch_norm: %d BatchNormalization layers synchronized\n", synced);
  }
  int initial_epoch = 0;
  int64_t initial_batch = 0;
  bool resumed = false;
  if (f.resume && manager) {
    STRATA_ASSIGN_OR_RETURN(std::optional<train::Checkpoint> latest, manager->ReadLatest());
    if (latest) {
      STRATA_RETURN_IF_ERROR(train::RestoreCheckpoint(*trainer, *latest));
      resumed = true;
      initial_epoch = latest->state.epoch;
      initial_batch = latest->state.batch;
      LogInfo("resuming run ", RunName(latest->state.run_id), " from ", latest->path, ": step ",
              latest->state.iterations, ", epoch ", initial_epoch + 1, ", batch ", initial_batch);
      if (latest->state.run_id.empty())
        LogWarning("checkpoint ", latest->path,
                   " has no run id (written before run ids): continuing it as an unknown run; its new checkpoints "
                   "carry run id ",
                   trainer->run_id());
      for (const train::CheckpointEntry& e : manager->checkpoints())
        if (e.run_id != latest->state.run_id) {
          LogWarning(f.checkpoint_dir, " also holds checkpoints of other runs than the one resumed (",
                     DescribeRuns(*manager), ")");
          break;
        }
    } else {
      LogInfo("--resume: no checkpoint in ", f.checkpoint_dir, " yet; starting from scratch");
    }
  }
  if (f.resume && num_workers > 1) {  // every worker resumes from the checkpoint the chief read
    train::TrainingState state = trainer->GetState();
    STRATA_RETURN_IF_ERROR(train::BroadcastTrainingState(*workers, &state));
    STRATA_RETURN_IF_ERROR(trainer->SetState(state));
    initial_epoch = state.epoch;
    initial_batch = state.batch;
  }
  if (manager && !resumed) {
    STRATA_RETURN_IF_ERROR(OverwriteCheckpointDir(manager.get(), f));
    LogInfo("starting run ", trainer->run_id(), " in ", f.checkpoint_dir);
  }
  train::FitOptions fo;
  fo.epochs = f.epochs;
  fo.initial_epoch = std::min(initial_epoch, f.epochs);
  if (initial_epoch < f.epochs) fo.initial_batch = initial_batch;
  fo.steps_per_epoch = num_workers > 1 ? steps : f.steps_per_epoch;
  fo.verbose = f.verbose;
  if (test_ds.ok()) {
    fo.validation_data = *test_ds;
  } else {
    LogInfo("training without validation: ", test_ds.status().message());
  }
  if (two_phase) fo.callbacks.push_back(std::make_shared<FineTunePhases>(model.get(), head, head_epochs, fine_at, fine_lr));
  if (f.enable_xla) LogInfo("--enable_xla: strata compiles every training step into one optimised plan anyway");
  // Before the checkpoint callback: a NaN step stops training before its broken weights are saved.
  if (profile_cb) fo.callbacks.push_back(profile_cb);  // first: a step that TerminateOnNaN stops is still recorded
  if (f.terminate_on_nan) {
    STRATA_ASSIGN_OR_RETURN(auto nan_guard, train::TerminateOnNaN());
    fo.callbacks.push_back(std::move(nan_guard));
  }
  if (manager) fo.callbacks.push_back(std::make_shared<SaveCheckpoints>(manager.get(), f));
  if (!f.log_dir.empty() && chief) {
    STRATA_RETURN_IF_ERROR(MakeDirs(f.log_dir));
    STRATA_ASSIGN_OR_RETURN(auto csv, train::CSVLogger(JoinPath(f.log_dir, "training.csv"), ',', f.resume));
    fo.callbacks.push_back(std::move(csv));
    train::TensorBoardOptions tbo;
    tbo.log_dir = f.log_dir;
    tbo.histogram_freq = f.histogram_freq;
    tbo.update_freq = f.update_freq;
    STRATA_ASSIGN_OR_RETURN(auto tb, train::TensorBoard(tbo));
    fo.callbacks.push_back(std::move(tb));
  }
  if (fo.initial_epoch >= fo.epochs) {
    if (chief) std::printf("nothing to do: %d of %d epochs already trained\n", fo.initial_epoch, fo.epochs);
    return Status::OK();
  }
  const auto t0 = std::chrono::steady_clock::now();
  STRATA_ASSIGN_OR_RETURN(train::History h, trainer->Fit(train_ds, fo));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const graph::RunStats rs = trainer->train_stats();
  if (chief && trainer->step_seconds() > 0)
    std::printf("training steps: %lld of global batch %lld in %.2fs: %.0f images/s\n", (long long)rs.runs,
                (long long)f.batch_size, trainer->step_seconds(),
                double(rs.runs) * f.batch_size / trainer->step_seconds());
  if (num_workers > 1) {
    // The weights every worker ended with, to show they agree (bitwise under --deterministic).
    uint64_t h = 1469598103934665603ULL;
    for (const auto& [name, t] : trainer->GetState().weights) {
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < t.byte_size(); ++i) h = (h ^ p[i]) * 1099511628211ULL;
    }
    std::fprintf(stderr, "worker %d of %d: weights fnv1a64 %016llx\n", rank, num_workers, (unsigned long long)h);
    // Each worker's own wait: the one that waits more is the faster one (the other holds every step back).
    std::fprintf(stderr, "worker %d of %d: communication not overlapped %.3fs of %.3fs in training steps\n", rank,
                 num_workers, trainer->communication_seconds(), trainer->step_seconds());
    if (chief)
      std::printf("communication not overlapped by computation: %.2fs of %.2fs in training steps (%.1f%%)\n",
                  trainer->communication_seconds(), trainer->step_seconds(),
                  100.0 * trainer->communication_seconds() / std::max(1e-9, trainer->step_seconds()));
    if (const train::MpiCollective::OverlapStats& o = workers->overlap_stats(); chief && o.buckets > 0)
      std::printf("gradient buckets: %lld, %lld started during the backward pass, %lld reduced before it ended\n",
                  (long long)o.buckets, (long long)o.started_early, (long long)o.done_before_wait);
    else if (chief && f.allreduce_overlap && !f.allreduce_overlap_given)
      std::printf("gradient allreduce after the backward pass: %.2f MiB of gradients, under the %.0f MiB from which "
                  "it overlaps the backward pass (--allreduce_overlap forces overlap)\n",
                  static_cast<double>(model->CountParams(/*trainable_only=*/true) * sizeof(float)) / (1 << 20),
                  static_cast<double>(train::TrainerOptions().overlap_min_bytes) / (1 << 20));
    if (!chief) return Status::OK();
  }
  std::printf("trained %d epochs in %.1fs: %lld steps, %lld plan compilations (%lld plan-cache hits)\n",
              static_cast<int>(h.epoch.size()), secs, (long long)rs.runs, (long long)rs.plan_cache_misses,
              (long long)rs.plan_cache_hits);
  if (const auto it = h.history.find("val_accuracy"); it != h.history.end())
    std::printf("test accuracy: %.4f\n", it->second.back());
  if (!f.export_dir.empty()) {
    train::ExportOptions eo;
    eo.input_scale = 1.0f / 255.0f;
    STRATA_ASSIGN_OR_RETURN(std::string path, train::ExportModel(*model, f.export_dir, f.model_name, 1, eo));
    std::printf("exported %s\n", path.c_str());
  }
  return Status::OK();
}

}  // namespace

void AddTrainCommand(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train", "Train a zoo model (Keras-style fit loop) on IDX or TFRecord data");
  AddTrainFlags(cmd, flags.get(), true);
  cmd->callback([cmd, flags] {
    Status s = RunTrain(cmd, *flags);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
