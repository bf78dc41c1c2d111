// train: the Keras-like training loop. A Trainer compiles a model, a loss and an optimizer into ONE training graph
// (forward + loss + backward by graph autodiff + one update op per variable) run by one Session: every step is a
// plan-cache hit on the same compiled plan (a smaller last batch compiles one more plan, once).
//
//   auto trainer = *train::Trainer::Create(&model, {.loss = {{"logits", nn::Loss::SparseCategoricalCrossentropy(true)}},
//                                                   .metrics = {{"logits", {"accuracy"}}}});
//   auto history = trainer->Fit(train_ds, {.epochs = 3, .validation_data = test_ds});
//
// Optimizers, metrics and losses are open: CompileOptions takes optimizer instances (user subclasses of
// optim::Optimizer), metric instances (subclasses of nn::Metric) and custom losses (nn::Loss::Custom) beside the
// built-in names; docs/training.md "Extending the trainer" has examples.
//
// State flows functionally: weights, optimizer slots, batch-norm moving statistics, the learning rate, the step
// counter (`iterations`) and the dropout seed are graph inputs fed every step, and the updated values are graph
// outputs that replace the host copies (see docs/training.md for the measured cost). The dropout seed of a step is
// a pure function of (seed, iterations), and the data order of the data stratum is a pure function of (seeds,
// epoch): a run resumed from (epoch, batch, iterations, weights, slots) continues bitwise-identically.
//
// Callbacks follow Keras (specs/tf-formats.md §5): epoch indices are 0-based, batch logs are running means since
// the start of the epoch, the loss is weighted by batch size, validation metrics get a val_ prefix.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/data.h"
#include "strata/graph.h"
#include "strata/nn.h"
#include "strata/optim.h"
#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::train {

// Keras logs: names in insertion order (loss first, then metrics, then val_*), double values.
class Logs {
 public:
  void Set(const std::string& key, double value);
  const double* Find(std::string_view key) const;
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  // "loss: 0.2950 - accuracy: 0.9150" (Keras progress-bar number format).
  std::string Format() const;

 private:
  std::vector<std::pair<std::string, double>> items_;
};

class Trainer;

// Hooks of the fit loop. Any error stops training and is returned by Fit.
class Callback {
 public:
  virtual ~Callback() = default;
  virtual Status OnTrainBegin(Trainer& t) { return Status::OK(); }
  virtual Status OnTrainEnd(Trainer& t, const Logs& logs) { return Status::OK(); }
  virtual Status OnEpochBegin(Trainer& t, int epoch) { return Status::OK(); }
  // `logs` may be extended (ReduceLROnPlateau adds learning_rate).
  virtual Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) { return Status::OK(); }
  virtual Status OnTrainBatchBegin(Trainer& t, int64_t batch) { return Status::OK(); }
  virtual Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs& logs) { return Status::OK(); }
  virtual Status OnTestBegin(Trainer& t) { return Status::OK(); }
  virtual Status OnTestEnd(Trainer& t, const Logs& logs) { return Status::OK(); }
};

// An optimizer for CompileOptions: a Keras name ("sgd", "adam", "adamw", "rmsprop"; built from
// CompileOptions::optimizer_config) or an instance, a built-in one (optim::SGD(config)) or a user subclass of
// optim::Optimizer (whose own config is used; optimizer_config is then ignored). The trainer shares the instance.
class OptimizerSpec {
 public:
  OptimizerSpec(const char* name) : name_(name) {}
  OptimizerSpec(std::string name) : name_(std::move(name)) {}
  template <typename T, typename = std::enable_if_t<std::is_base_of_v<optim::Optimizer, T>>>
  OptimizerSpec(std::shared_ptr<T> instance) : instance_(std::move(instance)) {}
  template <typename T, typename = std::enable_if_t<std::is_base_of_v<optim::Optimizer, T>>>
  OptimizerSpec(std::unique_ptr<T> instance) : instance_(std::move(instance)) {}
  // The name given, or the instance's name().
  const std::string& name() const { return instance_ ? instance_->name() : name_; }
  const std::shared_ptr<optim::Optimizer>& instance() const { return instance_; }

 private:
  std::string name_;
  std::shared_ptr<optim::Optimizer> instance_;
};

// A metric for CompileOptions: a name (nn::MakeMetric's, resolved against the output's loss) or an instance of a
// user subclass of nn::Metric. An instance belongs to one output of one trainer (its state is the running value).
class MetricSpec {
 public:
  MetricSpec(const char* name) : name_(name) {}
  MetricSpec(std::string name) : name_(std::move(name)) {}
  template <typename T, typename = std::enable_if_t<std::is_base_of_v<nn::Metric, T>>>
  MetricSpec(std::shared_ptr<T> instance) : instance_(std::move(instance)) {}
  template <typename T, typename = std::enable_if_t<std::is_base_of_v<nn::Metric, T>>>
  MetricSpec(std::unique_ptr<T> instance) : instance_(std::move(instance)) {}
  const std::string& name() const { return instance_ ? instance_->name() : name_; }
  const std::shared_ptr<nn::Metric>& instance() const { return instance_; }

 private:
  std::string name_;
  std::shared_ptr<nn::Metric> instance_;
};

struct CompileOptions {
  // Per model output: its loss (outputs without one are not trained against; nn::Loss::Custom for a user loss), its
  // weight (default 1) and metrics.
  std::map<std::string, nn::Loss> loss;
  std::map<std::string, double> loss_weights;
  std::map<std::string, std::vector<MetricSpec>> metrics;
  // Per model output: the dataset element key holding its labels (default "label").
  std::map<std::string, std::string> labels;
  OptimizerSpec optimizer = "adam";
  optim::OptimizerConfig optimizer_config;  // for an optimizer given by name
};

// A mean (or a sum) over the workers of float32 tensors that become available one by one (gradients, during the
// backward pass): each bucket's reduction starts as soon as its last tensor is added, so communication overlaps the
// compute that produces the later ones. Made by Collective::StartAllReduceMean (StartAllReduceSum).
class PendingAllReduce {
 public:
  virtual ~PendingAllReduce() = default;
  // Tensor `i` (of the shapes given to StartAllReduceMean) has its value: copied now, then every bucket whose tensors
  // are all here starts, in bucket order (every worker starts the same reductions in the same order). A tensor added
  // again keeps its first value.
  virtual Status Add(size_t i, const Tensor& value) = 0;
  // Lets the reductions in flight progress (Open MPI progresses them only inside MPI calls); cheap, never blocks.
  virtual Status Test() = 0;
  // Waits for every reduction (every tensor must have been added): the means (sums), in the order of the shapes.
  virtual StatusOr<std::vector<Tensor>> Wait() = 0;
};

// Data-parallel training (docs/training.md "Multi-worker training"): what a Trainer needs from the collective layer
// of a group of workers (src/train/distributed.h implements it over MPI). With a collective of size > 1, the training
// step runs as two graphs, forward+backward then the optimizer update, with the gradients averaged across workers in
// between; the initial weights are rank 0's, and the logs are averaged across workers. The gradient graph divides
// the loss (and the batch-norm statistics it outputs) by the number of workers, which costs nothing, so the trainer
// averages by summing (AllReduceSum, StartAllReduceSum) instead of dividing every gradient after the reduction.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Replaces every tensor (float32, the same shapes on every worker) by its mean over the workers. `tensors` comes in
  // the order their values became available (reverse layer order for gradients); `what` names the call in errors.
  virtual Status AllReduceMean(const std::vector<Tensor*>& tensors, std::string_view what) = 0;
  // Replaces every tensor by rank `root`'s (the same dtypes and shapes on every worker).
  virtual Status Broadcast(const std::vector<Tensor*>& tensors, int root, std::string_view what) = 0;
  // Replaces every value by its mean over the workers.
  virtual Status AllReduceMean(std::vector<double>* values, std::string_view what) = 0;
  // AllReduceMean of float32 tensors of these shapes added one by one (PendingAllReduce), with the same buckets and
  // the same result bits as AllReduceMean of them in this order. The default collects them and calls AllReduceMean
  // in Wait (no overlap).
  virtual StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduceMean(const std::vector<Shape>& shapes,
                                                                         std::string_view what);
  // Replaces `n` floats by their sum over the workers, now (SyncBatchNormalization's statistics and their
  // gradients). The default (one worker) leaves them.
  virtual Status AllReduceSum(float* data, int64_t n, std::string_view what);
  // AllReduceMean and StartAllReduceMean without the division: every tensor replaced by its sum over the workers,
  // with the same buckets. The tensors are replaced by new ones: the buffers given are never written (the trainer
  // passes a session's outputs as they are). The defaults call AllReduceSum(data, n) on a copy of each tensor, and
  // collect the tensors of a StartAllReduceSum until Wait.
  virtual Status AllReduceSum(const std::vector<Tensor*>& tensors, std::string_view what);
  virtual StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduceSum(const std::vector<Shape>& shapes,
                                                                        std::string_view what);
};
// Dynamic loss scaling, Keras's LossScaleOptimizer (docs/training.md "Mixed precision"): the loss is multiplied by
// the scale before the backward pass and every gradient divided by it before the update (exact: the scale is a power
// of two). A step whose gradients hold an infinity or a NaN is skipped (weights, slots and `iterations` unchanged;
// batch-norm moving statistics, which the forward pass updates, still advance, as in Keras) and halves the scale;
// `growth_steps` finite steps in a row double it. The scale and the finite-step counter are optimizer slots
// ("optimizer/loss_scale/dynamic_scale" float32, "optimizer/loss_scale/step_counter" int64), so checkpoints keep them.
struct LossScaleOptions {
  enum class Mode {
    kAuto,     // dynamic under mixed_float16, off otherwise (Keras: Model.compile wraps the optimizer then)
    kDynamic,  // always
    kOff,      // never
  };
  Mode mode = Mode::kAuto;
  double initial_scale = 32768.0;  // 2^15, Keras's default; must be a power of two
  int64_t growth_steps = 2000;     // Keras's dynamic_growth_steps
};
// "auto", "dynamic", "off"; Parse also takes "none" for off.
std::string_view LossScaleModeName(LossScaleOptions::Mode m);
StatusOr<LossScaleOptions::Mode> ParseLossScaleMode(std::string_view text, std::string_view where = "loss_scale");

struct TrainerOptions {
  uint64_t seed = 0;            // weights (when the model is not built yet) and dropout masks
  bool deterministic = false;   // fixed thread count and deterministic kernels; see docs/training.md
  int intra_op_threads = 0;     // 0 = leave the process setting alone
  size_t memory_limit_bytes = 0;
  bool optimize = true;         // graph passes (fusion) on the training graph
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;  // Winograd where it pays, or direct only
  bool check_numerics = false;  // name the first op of a step that produces NaN or infinity (SessionOptions)
  // The global dtype policy (Keras's mixed_precision.set_global_policy); a layer's own dtype_policy() overrides it.
  // Applies to the training, evaluation and prediction graphs. mixed_bfloat16 needs avx512_bf16 (else float32 runs,
  // with a warning).
  nn::DTypePolicy mixed_precision = nn::DTypePolicy::kFloat32;
  LossScaleOptions loss_scale;
  // The version of the training data (data::Manifest::hash), recorded in checkpoints; SetState refuses a state
  // recorded with another non-empty hash. "" = not recorded.
  std::string dataset_hash;
  // Identifies this training run in its checkpoints (TrainingState::run_id). "" = Create makes a random one.
  std::string run_id;
  // Multi-worker data parallelism (see Collective); null or size 1 = this process alone.
  std::shared_ptr<Collective> collective;
  // Multi-worker: each gradient bucket's reduction starts during the backward pass, as soon as its gradients exist
  // (Collective::StartAllReduceMean), instead of after it, when the reduced tensors (gradients and batch-norm
  // statistics) total at least overlap_min_bytes. Below that the reduction runs after the backward pass: a small
  // model's reduction takes less time than the MPI progress calls between the backward pass's kernels cost
  // (docs/training.md, "Gradient buckets and overlap"). The same result bits either way. 0 = always overlap.
  bool overlap_allreduce = true;
  int64_t overlap_min_bytes = int64_t{4} << 20;
  // Input shapes fixed up front for the model's inputs (graph::SessionOptions::input_signature), in every graph the
  // trainer compiles that reads them. Entries name model inputs; a fixed batch dimension applies to every batch,
  // validation batches included, so leave it free (-1) unless they all have that size.
  std::vector<graph::SignatureEntry> input_signature;
  // Attached to every session the trainer makes; records while started (see ProfileSteps).
  std::shared_ptr<graph::Profiler> profiler;
};

struct FitOptions {
  int epochs = 1;
  int initial_epoch = 0;
  int64_t steps_per_epoch = -1;  // -1: until the dataset ends
  std::optional<data::Dataset> validation_data;
  int validation_freq = 1;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<std::shared_ptr<Callback>> callbacks;
  // Model input name -> dataset element key (default: the same name).
  std::map<std::string, std::string> input_keys;
  // Resume inside `initial_epoch`: skip this many batches of it (the trainer's state must have been restored).
  int64_t initial_batch = 0;
};

struct History {
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;  // key -> value per epoch
};

// Everything that changes during training, for checkpoints: weights (trainable and not), optimizer slots
// ("optimizer/<variable>/<slot>") and the counters. The dataset position is (epoch, batch).
struct TrainingState {
  std::map<std::string, Tensor> weights;
  std::map<std::string, Tensor> slots;
  int64_t iterations = 0;
  int epoch = 0;        // the epoch in progress (or the next one at an epoch boundary)
  int64_t batch = 0;    // batches of `epoch` already trained
  uint64_t seed = 0;
  std::optional<double> learning_rate_override;
  // The epoch-end logs of every epoch trained so far (the metric history), oldest first.
  std::vector<std::pair<int, Logs>> history;
  std::string dataset_hash;  // see TrainerOptions::dataset_hash
  // The run that wrote this state: random, made when a run starts fresh, kept across resumes (SetState adopts it).
  // "" in checkpoints written before run ids existed (an unknown run).
  std::string run_id;
};

// A new random run id: 16 lowercase hex digits.
std::string NewRunId();

class Trainer {
 public:
  // Builds the model if needed (with options.seed) and checks the compile options against its outputs.
  static StatusOr<std::unique_ptr<Trainer>> Create(nn::Model* model, CompileOptions compile,
                                                   TrainerOptions options = {});
  ~Trainer();

  StatusOr<History> Fit(const data::Dataset& train, FitOptions options = {});
  // Loss and metrics over a dataset (labels required), with on_test hooks of `callbacks`.
  StatusOr<Logs> Evaluate(const data::Dataset& dataset, int verbose = 0, int64_t steps = -1,
                          const std::map<std::string, std::string>& input_keys = {});
  // Model outputs for every batch of the dataset, concatenated along the batch axis.
  StatusOr<std::map<std::string, Tensor>> Predict(const data::Dataset& dataset,
                                                  const std::map<std::string, std::string>& input_keys = {});
  StatusOr<std::map<std::string, Tensor>> PredictOnBatch(const data::Element& batch,
                                                         const std::map<std::string, std::string>& input_keys = {});
  // One training step on one batch; returns this batch's loss and the running metrics.
  StatusOr<Logs> TrainOnBatch(const data::Element& batch, const std::map<std::string, std::string>& input_keys = {});

  nn::Model& model();
  const optim::Optimizer& optimizer() const;
  int64_t iterations() const;
  const std::string& run_id() const;
  // Dynamic loss scaling (LossScaleOptions): whether it is on, the current scale (1 when off), and the steps skipped
  // so far by this trainer for non-finite gradients.
  bool loss_scaling() const;
  double loss_scale() const;
  int64_t skipped_steps() const;
  // The learning rate of the next step: the schedule at `iterations`, or the override.
  double learning_rate() const;
  // Overrides the schedule with a constant from now on (ReduceLROnPlateau, LearningRateScheduler).
  void SetLearningRate(double lr);
  void StopTraining();
  // Asks Fit (from OnTrainBegin) to start at this position instead of FitOptions' initial_epoch/initial_batch.
  void ResumeAt(int epoch, int64_t batch);
  bool stop_training() const;
  int epochs() const;
  int64_t steps_per_epoch() const;

  // Copies of the training state (weights from the model), and restoring one (names/shapes/dtypes checked). A
  // restored state's run id becomes this trainer's (it continues that run); one without (written before run ids)
  // keeps the trainer's own.
  TrainingState GetState() const;
  Status SetState(const TrainingState& state);
  // The weights as in the model after the last step (the model is kept in sync after every step).
  graph::RunStats train_stats() const;
  // Multi-worker: seconds spent averaging gradients across workers (communication that no computation overlapped)
  // and in whole training steps, since Create.
  double communication_seconds() const;
  double step_seconds() const;
  // The training graph (after the first step compiled it).
  const graph::Model* training_graph() const;
  // How often a change of the model's trainable weights (Layer::set_trainable) made the trainer recompile its
  // training plan. Each recompile is logged; newly trainable weights get zeroed optimizer slots, frozen ones lose
  // theirs (Keras rebuilds the optimizer state on recompile likewise).
  int trainable_recompiles() const;

  struct Impl;  // src/train/trainer_impl.h

 private:
  Trainer();
  std::unique_ptr<Impl> impl_;
};

// ---- checkpoints (docs/training.md "Checkpoints") ----
//
// A checkpoint is a directory:
//   model.safetensors      the weights by Keras name ("dense/kernel"), trainable and not
//   optimizer.safetensors  the slots ("optimizer/<variable>/<slot>") and "optimizer/iterations" (int64 scalar);
//                          absent from weights-only checkpoints
//   state.json             format version, step, epoch, batch, RNG state (the seed; every stream is a pure function of
//                          seed, step and epoch), learning-rate override, metric history, the logs at save time,
//                          dataset manifest hash, metadata, and dtype, shape and CRC32C of every tensor
//   model_config.json      the architecture (nn::Model::GetConfig, rebuilt by nn::ModelFromConfig) when it was given;
//                          state.json then names it and records its CRC32C
// It is written into a temporary sibling directory (".<name>.tmp.<pid>"), every file and the directory fsync'd, then
// renamed into place (an existing checkpoint of the same name is swapped out with one atomic renameat2), so a process
// killed at any moment leaves the old or the new checkpoint, whole.
struct CheckpointOptions {
  bool weights_only = false;
  Logs metrics;                                 // the logs at save time (CheckpointManager ranks by one of them)
  std::map<std::string, std::string> metadata;  // free-form (strata train records model_name, num_classes...)
  std::string model_config;                     // nn::Model::GetConfig() JSON ("" = none); model_config.json
};
struct Checkpoint {
  std::string path;
  TrainingState state;  // slots empty when weights_only
  bool weights_only = false;
  Logs metrics;
  std::map<std::string, std::string> metadata;
  std::string model_config;  // "" for checkpoints written without one (and before model configs existed)
  double written_at = 0;  // seconds since the epoch
};
Status WriteCheckpoint(const std::string& path, const TrainingState& state, const CheckpointOptions& options = {});
// Reads a checkpoint directory, checking the safetensors files strictly, that they hold exactly the tensors
// state.json lists, and the CRC32C of every tensor (DATA_LOSS naming the tensor and the file).
StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);
// Names, dtypes and shapes of `weights` against the model's weights; InvalidArgument listing every difference.
Status CheckWeightsMatch(const nn::Model& model, const std::map<std::string, Tensor>& weights, std::string_view where);
// Restores weights, slots, counters, RNG position and history into a trainer (SetState, which lists every
// difference); a weights-only checkpoint keeps the trainer's slots.
Status RestoreCheckpoint(Trainer& trainer, const Checkpoint& checkpoint);

// tf.train.CheckpointManager (specs/tf-formats.md §5.4) over strata checkpoints: saves <dir>/<name>-<step>, keeps
// the newest `max_to_keep` and the best `keep_best` by a monitored metric, and records them in <dir>/checkpoint
// (CheckpointState in protobuf text format, rewritten atomically; model_checkpoint_path names the latest).
// Opening a directory removes the temporary directories a killed writer left, and adopts a complete checkpoint newer
// than the state file names (a writer killed between the rename and the state file).
struct CheckpointManagerOptions {
  int max_to_keep = 5;  // >= 1; 0 keeps every checkpoint (TF's None)
  int keep_best = 0;    // also keep the best K by `monitor` (0 = off)
  std::string monitor = "val_loss";
  std::string mode = "auto";  // min | max | auto (ModelCheckpoint's rule: max when the name contains "acc")
  std::string checkpoint_name = "ckpt";
};
struct CheckpointEntry {
  std::string name;  // relative to the directory
  int64_t step = 0;
  double timestamp = 0;
  std::optional<double> metric;  // the monitored value at save time
  std::string run_id;            // of the run that wrote it ("" = written before run ids)
  int epoch = 0;
};
class CheckpointManager {
 public:
  static StatusOr<std::unique_ptr<CheckpointManager>> Open(std::string directory,
                                                           CheckpointManagerOptions options = {});
  // Writes <dir>/<checkpoint_name>-<step> (or <dir>/<name> when given), rewrites the state file, then deletes the
  // checkpoints that are neither among the newest max_to_keep nor the best keep_best. Returns the path.
  StatusOr<std::string> Save(const TrainingState& state, const CheckpointOptions& options = {},
                             const std::string& name = "");
  // The kept checkpoints, oldest save first (the last is the latest).
  const std::vector<CheckpointEntry>& checkpoints() const { return entries_; }
  std::optional<std::string> latest() const;
  // Reads (and verifies) the latest checkpoint; nullopt when there is none.
  StatusOr<std::optional<Checkpoint>> ReadLatest() const;
  // Removes every checkpoint it keeps, the state file and leftover temporary directories (nothing else).
  Status DeleteAll();
  const std::string& directory() const { return dir_; }

 private:
  CheckpointManager() = default;
  Status WriteStateFile() const;
  Status Sweep();
  std::string dir_;
  CheckpointManagerOptions options_;
  bool higher_is_better_ = false;
  std::vector<CheckpointEntry> entries_;
  double last_preserved_timestamp_ = 0;
};

// ---- export (a serving signature for strata serve / TF-Serving clients) ----

struct ExportOptions {
  // The serving signature:
  //   kClassifier  the model's one float32 input, renamed `input_name` and scaled by `input_scale`; every model
  //                output under its own name, plus "probabilities" = softmax(logits_output) (add_probabilities).
  //   kGeneral     any number of inputs (any dtype) and outputs, chosen, ordered and renamed by the fields below;
  //                e.g. a two-tower model {"query", "document"} -> {"score", "embedding"}.
  enum class Signature { kClassifier, kGeneral };
  Signature signature = Signature::kClassifier;
  // ---- kClassifier ----
  std::string input_name = "input_image";
  // Baked-in input scaling: the graph multiplies the input by this (e.g. 1/255 for raw pixels). 1 = none.
  float input_scale = 1.0f;
  std::string logits_output = "logits";
  bool add_probabilities = true;
  // ---- kGeneral ----
  // Model input -> serving name (unlisted inputs keep theirs); model input -> baked-in scale (float32 inputs).
  std::map<std::string, std::string> input_names;
  std::map<std::string, float> input_scales;
  // The model outputs served, in this order (empty: every output in the model's order); model output -> serving
  // name; model output -> the serving name of an extra output holding its softmax over the last axis (served after
  // the outputs).
  std::vector<std::string> outputs;
  std::map<std::string, std::string> output_names;
  std::map<std::string, std::string> softmax_outputs;
  // ---- both ----
  std::vector<std::string> labels;               // assets/labels.json (a JSON array, index = class) when given
  std::map<std::string, std::string> metadata;   // extra ONNX metadata_props
};

// Writes <base_dir>/<name>/<version>/model.onnx (checked by onnx's checker before it is written; written to a
// temporary file and renamed), assets/labels.json, and model_config.json (the model's nn::Model::GetConfig, for
// rebuilding it with nn::ModelFromConfig; left out for a model with a layer that cannot describe itself); returns the
// model.onnx path. The signature is recorded in the "strata.signature" metadata (JSON: inputs with their model input
// and scale, outputs in order). Names that are not the model's, serving names given twice or shadowing a graph value
// are InvalidArgument naming them.
StatusOr<std::string> ExportModel(const nn::Model& model, const std::string& base_dir, const std::string& name,
                                  int64_t version, const ExportOptions& options = {});
// The serving graph ExportModel writes, without writing it.
StatusOr<graph::Model> ServingModel(const nn::Model& model, const ExportOptions& options = {});

// ---- callbacks (src/train/callbacks/, one per file) ----
//
// Every factory returns StatusOr<std::shared_ptr<Callback>>: options are checked when the callback is made (an
// error names the option), and FitOptions::callbacks takes the value: `fo.callbacks.push_back(*EarlyStopping(o))`
// after checking ok(), or STRATA_ASSIGN_OR_RETURN. A user callback is any subclass of Callback.

// Keras ProgbarLogger (tf.keras format): "Epoch 1/3", then a redrawn "  12/938 [>....] - ETA: 9s - loss: ..."
// line (at most every 0.05 s) and the final "938/938 [=====] - 7s 7ms/step - loss: ... - examples/s: 8531".
StatusOr<std::shared_ptr<Callback>> ProgressBar(int verbose = 1, std::FILE* out = stdout);

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int patience = 0;
  std::string mode = "auto";  // auto: max for names ending in acc/accuracy/auc, else min
  std::optional<double> baseline;
  bool restore_best_weights = false;
  int start_from_epoch = 0;
  int verbose = 0;
  // Memory watchdog: stop when peak RSS grew by more than this percentage per epoch for this many consecutive
  // epochs (0 = off).
  double max_rss_growth_percent = 0;
  int rss_growth_epochs = 3;
};
StatusOr<std::shared_ptr<Callback>> EarlyStopping(EarlyStoppingOptions options = {});

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  std::string mode = "auto";  // auto: max if "acc" is in the name, else min
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0;
  int verbose = 0;
};
StatusOr<std::shared_ptr<Callback>> ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

// Keras TerminateOnNaN: a NaN or infinite loss at the end of a training step stops training there, with
// FAILED_PRECONDITION naming the step (global and within its epoch) and the loss, so that no checkpoint of the
// broken weights is written after it. `strata train` adds it unless --terminate_on_nan=false.
StatusOr<std::shared_ptr<Callback>> TerminateOnNaN();

// Keras CSVLogger: header "epoch" + sorted keys of the first epoch, 0-based epochs, NA for missing, \r\n.
StatusOr<std::shared_ptr<Callback>> CSVLogger(std::string filename, char separator = ',', bool append = false);

// At each epoch begin: lr = schedule(epoch, current lr); logs learning_rate at epoch end.
StatusOr<std::shared_ptr<Callback>> LearningRateScheduler(std::function<double(int epoch, double lr)> schedule,
                                                          int verbose = 0);

// BackupAndRestore: saves the training state to backup_dir every `save_freq` batches (0 = at each epoch end); on
// train begin, restores the newest backup and resumes at its (epoch, batch) — mid-epoch, bitwise-identical to an
// uninterrupted run; on a normal train end removes the backups when delete_checkpoint.
StatusOr<std::shared_ptr<Callback>> BackupAndRestore(std::string backup_dir, int64_t save_freq = 0,
                                                     bool delete_checkpoint = true);

// Keras TensorBoard (specs/tf-formats.md §5.3): event files in <log_dir>/train and <log_dir>/validation (two runs).
// Per epoch (step = epoch): epoch_<key> in train, epoch_<key without val_> in validation, epoch_learning_rate in
// train; update_freq "batch" or "N": batch_<key> (running means) in train every N batches, step = iterations;
// every histogram_freq epochs: "<weight>/histogram" (':' -> '_') in train; write_graph: the training graph (op graph,
// after the first batch) and the model summary as text. Files are flushed every flush_secs, at each epoch end and
// at train end; each Fit opens new files, so restarts never rewrite old ones. See docs/training.md.
struct TensorBoardOptions {
  std::string log_dir = "logs";
  int histogram_freq = 0;
  bool write_graph = true;
  std::string update_freq = "epoch";  // "epoch", "batch" or a number of batches
  double flush_secs = 120;
};
StatusOr<std::shared_ptr<Callback>> TensorBoard(TensorBoardOptions options = {});

// Keras TensorBoard(profile_batch=(first, last)): records training steps first..last (1-based global steps, as
// Trainer::iterations counts them after a step) with `profiler`, which must be TrainerOptions::profiler, and writes
// the Chrome trace when step `last` ends (or training ends before it): to <log_dir>/plugins/profile/<run>/<host>.
// trace.json.gz when log_dir is set (TensorBoard's profile plugin layout) and to `path` when set. Besides the
// per-node events, each step is one event named "train_step <k>" (cat "strata.step").
struct ProfileStepsOptions {
  std::shared_ptr<graph::Profiler> profiler;
  int64_t first = 0;
  int64_t last = 0;
  std::string log_dir;
  std::string path;
};
StatusOr<std::shared_ptr<Callback>> ProfileSteps(ProfileStepsOptions options);
// Parses "A,B" or "N" (= N,N) into 1-based steps; InvalidArgument naming `where` unless 1 <= A <= B.
StatusOr<std::pair<int64_t, int64_t>> ParseProfileSteps(std::string_view text, std::string_view where = "profile_steps");

// ModelCheckpoint (specs/tf-formats.md §5.3): writes a checkpoint directory (see WriteCheckpoint) named by `filepath`,
// a Python str.format template over epoch (1-based), batch (1-based, with an integer save_freq) and the log keys
// ("ckpt-{epoch:02d}-{val_loss:.2f}"; a missing key is an error naming the available ones), and records it in the
// `checkpoint` state file of its parent directory (nothing is ever deleted, as in Keras). save_best_only saves only
// when `monitor` improved (§5.2, no min_delta; from initial_value_threshold or the first value) and saves anyway,
// with a warning, when the key is missing.
struct ModelCheckpointOptions {
  std::string filepath;
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  bool save_weights_only = false;
  std::string mode = "auto";  // auto: max if the name contains "acc" or starts with "fmeasure", else min
  int64_t save_freq = 0;      // 0 = "epoch"; n > 0: every n batches, counted across epochs
  std::optional<double> initial_value_threshold;
  std::map<std::string, std::string> metadata;  // recorded in every checkpoint
  // Every checkpoint also carries the trainer's model's config (model_config.json) when the model can describe itself.
};
StatusOr<std::shared_ptr<Callback>> ModelCheckpoint(ModelCheckpointOptions options);

}  // namespace strata::train
