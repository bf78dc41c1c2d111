// Trainer internals shared by the files of src/train.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/train.h"

namespace strata::train {

inline constexpr char kLrInput[] = "strata/lr";
inline constexpr char kIterationsInput[] = "strata/iterations";
inline constexpr char kSeedInput[] = "strata/step_seed";
inline constexpr char kLossOutput[] = "loss";
// Multi-worker gradient graph: 1 / workers, the factor of the differentiated loss and the batch-norm statistics.
inline constexpr char kPerWorkerScale[] = "strata/per_worker_scale";
// Loss scaling (LossScaleOptions): the scale fed each step, and the output that is 0 when every scaled gradient is
// finite (NaN otherwise).
inline constexpr char kLossScaleInput[] = "strata/loss_scale";
inline constexpr char kGradsFiniteOutput[] = "strata/grads_finite";
// The loss-scale state, kept with the optimizer slots (checkpointed with them).
inline constexpr char kLossScaleSlot[] = "optimizer/loss_scale/dynamic_scale";
inline constexpr char kLossScaleCounterSlot[] = "optimizer/loss_scale/step_counter";

struct OutputSpec {
  std::string name;
  std::optional<nn::Loss> loss;
  double weight = 1.0;
  std::string label_key = "label";
  std::vector<std::shared_ptr<nn::Metric>> metrics;
  std::string label_input() const { return "label/" + name; }
  std::string loss_output() const { return "loss/" + name; }
};

// A compiled graph with the names needed to feed and read it.
struct CompiledGraph {
  std::shared_ptr<graph::Model> model;
  std::unique_ptr<graph::Session> session;
  std::vector<std::string> fetches;
  std::map<std::string, int> fetch_index;  // output name -> index in fetches
  bool uses_seed = false;
  bool with_labels = false;
  // Training graph only: where the new values of weights and slots come out.
  std::map<std::string, std::string> weight_outputs;
  std::map<std::string, std::string> slot_outputs;
  std::map<std::string, std::string> state_outputs;  // the non-trainable weights among weight_outputs
  std::string grad_norm;
  // Gradient graph only (multi-worker): (weight, gradient output) of every trainable weight, in reverse layer order.
  std::vector<std::pair<std::string, std::string>> grad_outputs;
  bool loss_scaling = false;  // kLossScaleInput is fed and kGradsFiniteOutput fetched
  // Model output -> its static last dimension (the class count sparse labels index), where known.
  std::map<std::string, int64_t> num_classes;
};

// The trainer's state: everything train.h's Trainer does not show.
struct Trainer::Impl {
  nn::Model* model = nullptr;
  std::shared_ptr<optim::Optimizer> optimizer;
  CompileOptions compile;
  TrainerOptions options;
  std::vector<OutputSpec> outputs;
  nn::MeanMetric loss_tracker{"loss"};
  std::map<std::string, nn::MeanMetric> output_loss_trackers;
  std::optional<CompiledGraph> train, eval, predict;
  // Multi-worker (options.collective of size > 1): `train` is the gradient graph and `apply` the update graph.
  std::optional<CompiledGraph> apply;
  double comm_seconds = 0, step_seconds = 0;  // multi-worker timing (Trainer::communication_seconds)
  // Multi-worker with overlap_allreduce: the gradient reduction the current step's backward pass started.
  std::unique_ptr<PendingAllReduce> pending;
  bool distributed() const { return options.collective && options.collective->size() > 1; }
  std::vector<std::string> slot_keys;  // "optimizer/<var>/<slot>"
  // The trainable weights the training plan was compiled for (a change of layer.trainable recompiles it).
  std::vector<std::string> trained;
  int recompiles = 0;
  bool stop_training = false;
  std::optional<std::pair<int, int64_t>> resume;  // Trainer::ResumeAt
  int fit_epochs = 0;
  int64_t fit_steps = -1;
  int64_t skipped_steps = 0;
  // Declared after the compiled graphs: their sessions allocated its tensors, so it is destroyed first.
  TrainingState state;

  bool loss_scaling() const { return state.slots.count(kLossScaleSlot) > 0; }
  double learning_rate() const;  // Trainer::learning_rate
  Status EnsureTrainSession(const data::Element& batch, const std::map<std::string, std::string>& keys);
  // Recompiles the training plan when the set of trainable weights changed since it was compiled.
  Status SyncTrainable();
  Status EnsureEvalSession(const data::Element& batch, const std::map<std::string, std::string>& keys, bool with_loss);
  // Multi-worker step: averages the gradient graph's results across workers and runs the update graph on them.
  Status ApplyAveragedGradients(std::vector<Tensor>& results);
  // Multi-worker: the gradient graph's run, reducing through the collective (SyncBatchNormalization) and, with
  // overlap_allreduce, starting each gradient bucket's reduction as soon as the backward pass has computed it.
  Status RunGradientStep(const std::vector<std::pair<std::string, Tensor>>& feeds, std::vector<Tensor>* results);
  // The update graph on the averaged gradients.
  Status RunUpdateGraph(std::vector<Tensor>& results);
  void ResetMetrics();
  // Keras logs of the running means: loss, <output>_loss (several outputs), metrics (<output>_<name> likewise).
  Logs CurrentLogs() const;
  // Multi-worker: replaces every value by its mean over the workers.
  Status AverageLogs(Logs* logs) const;
};

// Builds the training graph (forward + loss + gradients + updates) for the label dtypes of a first batch.
StatusOr<CompiledGraph> BuildTrainGraph(const nn::Model& model, const optim::Optimizer& optimizer,
                                        const std::vector<OutputSpec>& outputs,
                                        const std::map<std::string, DType>& label_dtypes,
                                        const TrainerOptions& options, bool loss_scaling);
// Multi-worker: the forward pass, losses and gradients (outputs: loss, metric outputs, the gradients in reverse layer
// order, batch-norm statistics), and the optimizer update fed the averaged gradients as inputs GradInput(weight).
StatusOr<CompiledGraph> BuildGradientGraph(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                           const std::map<std::string, DType>& label_dtypes,
                                           const TrainerOptions& options);
StatusOr<CompiledGraph> BuildApplyGraph(const nn::Model& model, const optim::Optimizer& optimizer,
                                        const TrainerOptions& options);
inline std::string GradInput(const std::string& weight) { return "grad/" + weight; }
// Inference graph with weights as inputs; with labels, the loss outputs too.
StatusOr<CompiledGraph> BuildEvalGraph(const nn::Model& model, const std::vector<OutputSpec>& outputs,
                                       const std::map<std::string, DType>& label_dtypes, bool with_loss,
                                       const TrainerOptions& options);

// Runs the evaluation (with_loss: also updates the loss and metric trackers) or prediction graph on one batch.
StatusOr<std::map<std::string, Tensor>> RunInference(Trainer& t, Trainer::Impl& impl, std::optional<CompiledGraph>& cg,
                                                     const nn::Model& model, const TrainingState& state,
                                                     const data::Element& batch,
                                                     const std::map<std::string, std::string>& keys, bool with_loss);

// Checks the sparse class labels of a batch against the class counts of `cg` before a step: a label outside
// [0, classes) is InvalidArgument naming the label, the valid range, the output and the example (its source file
// and record index from the batch's metadata).
Status CheckSparseLabels(const std::vector<OutputSpec>& outputs, const CompiledGraph& cg, const data::Element& batch);

// The dropout seed of step `iterations` (a pure function of the two).
int64_t StepSeed(uint64_t seed, int64_t iterations);

}  // namespace strata::train
