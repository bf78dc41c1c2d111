// Trainer: compile options, the training/evaluation sessions and one training step.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "core/logging.h"
#include "core/parallel.h"
#include "graph/run_hooks.h"
#include "ops/collective.h"
#include "train/trainer_impl.h"

namespace strata::train {

Trainer::Trainer() : impl_(std::make_unique<Impl>()) {}
Trainer::~Trainer() = default;

nn::Model& Trainer::model() { return *impl_->model; }
const optim::Optimizer& Trainer::optimizer() const { return *impl_->optimizer; }
int64_t Trainer::iterations() const { return impl_->state.iterations; }
const std::string& Trainer::run_id() const { return impl_->state.run_id; }
int64_t Trainer::skipped_steps() const { return impl_->skipped_steps; }
void Trainer::StopTraining() { impl_->stop_training = true; }
void Trainer::ResumeAt(int epoch, int64_t batch) { impl_->resume = std::make_pair(epoch, batch); }
bool Trainer::stop_training() const { return impl_->stop_training; }
int Trainer::epochs() const { return impl_->fit_epochs; }
int64_t Trainer::steps_per_epoch() const { return impl_->fit_steps; }

std::string NewRunId() {
  // Not reproducible on purpose: two runs started with the same flags (and seed) are still two runs.
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device() ^
                        static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
                        (static_cast<uint64_t>(getpid()) << 48);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(bits));
  return buf;
}

void Trainer::Impl::ResetMetrics() {
  loss_tracker.Reset();
  for (auto& [n, m] : output_loss_trackers) m.Reset();
  for (OutputSpec& o : outputs)
    for (auto& m : o.metrics) m->Reset();
}

Logs Trainer::Impl::CurrentLogs() const {
  Logs logs;
  logs.Set("loss", loss_tracker.Result());
  const bool several = outputs.size() > 1;
  for (const auto& [name, m] : output_loss_trackers) logs.Set(name + "_loss", m.Result());
  for (const OutputSpec& o : outputs)
    for (const auto& m : o.metrics) logs.Set(several ? StrCat(o.name, "_", m->name()) : m->name(), m->Result());
  return logs;
}

std::string_view LossScaleModeName(LossScaleOptions::Mode m) {
  switch (m) {
    case LossScaleOptions::Mode::kDynamic: return "dynamic";
    case LossScaleOptions::Mode::kOff: return "off";
    default: return "auto";
  }
}

StatusOr<LossScaleOptions::Mode> ParseLossScaleMode(std::string_view text, std::string_view where) {
  if (text == "auto") return LossScaleOptions::Mode::kAuto;
  if (text == "dynamic") return LossScaleOptions::Mode::kDynamic;
  if (text == "off" || text == "none") return LossScaleOptions::Mode::kOff;
  return InvalidArgumentError(where, " expects auto (dynamic under mixed_float16, as Keras), dynamic or off, got '",
                              text, "'");
}

namespace {

// Whether the options turn dynamic loss scaling on (Keras: Model.compile wraps the optimizer in a LossScaleOptimizer
// under the mixed_float16 global policy).
bool LossScalingOn(const TrainerOptions& o) {
  switch (o.loss_scale.mode) {
    case LossScaleOptions::Mode::kDynamic: return true;
    case LossScaleOptions::Mode::kOff: return false;
    default: return o.mixed_precision == nn::DTypePolicy::kMixedFloat16;
  }
}

Status CheckLossScale(const LossScaleOptions& o) {
  int exp = 0;
  const double mant = std::frexp(o.initial_scale, &exp);
  if (!(o.initial_scale > 0) || !std::isfinite(o.initial_scale) || mant != 0.5 || o.initial_scale > 0x1p127)
    return InvalidArgumentError("loss scaling: initial_scale must be a power of two in (0, 2^127] (unscaling is then "
                                "exact), got ", o.initial_scale);
  if (o.growth_steps < 1)
    return InvalidArgumentError("loss scaling: growth_steps must be at least 1, got ", o.growth_steps);
  return Status::OK();
}

// A metric instance holds the running value of one output: the same instance twice would mix two outputs.
Status AdoptMetric(const std::shared_ptr<nn::Metric>& m, const std::string& output, std::set<const nn::Metric*>* seen) {
  if (!seen->insert(m.get()).second)
    return InvalidArgumentError("compile: metric instance '", m->name(), "' is given twice (output '", output,
                                "'); an instance keeps one running value, so give each output its own");
  if (m->name().empty()) return InvalidArgumentError("compile: a metric instance of output '", output, "' has no name");
  return Status::OK();
}

}  // namespace

bool Trainer::loss_scaling() const { return impl_->loss_scaling(); }

double Trainer::loss_scale() const {
  auto it = impl_->state.slots.find(kLossScaleSlot);
  return it == impl_->state.slots.end() ? 1.0 : it->second.data<float>()[0];
}

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(nn::Model* model, CompileOptions compile, TrainerOptions options) {
  if (model == nullptr) return InvalidArgumentError("Trainer::Create: model is null");
  if (LossScalingOn(options)) STRATA_RETURN_IF_ERROR(CheckLossScale(options.loss_scale));
  if (options.deterministic && options.intra_op_threads <= 0) options.intra_op_threads = 1;
  if (options.intra_op_threads > 0) SetIntraOpThreads(options.intra_op_threads);
  STRATA_RETURN_IF_ERROR(model->Build(options.seed));
  std::unique_ptr<Trainer> t(new Trainer());
  t->impl_->model = model;
  t->impl_->options = options;
  t->impl_->state.seed = options.seed;
  t->impl_->state.dataset_hash = options.dataset_hash;
  t->impl_->state.run_id = options.run_id.empty() ? NewRunId() : options.run_id;
  if (compile.optimizer.instance()) {
    t->impl_->optimizer = compile.optimizer.instance();
    STRATA_RETURN_IF_ERROR(t->impl_->optimizer->Validate());
  } else {
    STRATA_ASSIGN_OR_RETURN(t->impl_->optimizer,
                            optim::MakeOptimizer(compile.optimizer.name(), compile.optimizer_config));
  }
  const auto& names = model->output_names();
  auto known = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  // A single-output model may key its loss and metrics by "" (Keras compile(loss=...) on one output).
  auto rekey = [&](auto& m) {
    if (names.size() == 1 && m.count("")) {
      auto node = m.extract("");
      node.key() = names[0];
      m.insert(std::move(node));
    }
  };
  rekey(compile.loss);
  rekey(compile.metrics);
  rekey(compile.loss_weights);
  rekey(compile.labels);
  for (const auto* m : {&compile.loss})
    for (const auto& [k, v] : *m)
      if (!known(k)) return InvalidArgumentError("compile: loss for unknown output '", k, "'; outputs are ", names);
  for (const auto& [k, v] : compile.metrics)
    if (!known(k)) return InvalidArgumentError("compile: metrics for unknown output '", k, "'; outputs are ", names);
  if (compile.loss.empty()) return InvalidArgumentError("compile: no loss given for any of the outputs ", names);
  std::set<const nn::Metric*> adopted;
  for (const std::string& n : names) {
    OutputSpec o;
    o.name = n;
    if (compile.loss.count(n)) o.loss = compile.loss.at(n);
    if (compile.loss_weights.count(n)) o.weight = compile.loss_weights.at(n);
    if (compile.labels.count(n)) o.label_key = compile.labels.at(n);
    for (const MetricSpec& spec : compile.metrics.count(n) ? compile.metrics.at(n) : std::vector<MetricSpec>{}) {
      if (spec.instance()) {
        STRATA_RETURN_IF_ERROR(AdoptMetric(spec.instance(), n, &adopted));
        o.metrics.push_back(spec.instance());
        continue;
      }
      const nn::Loss loss = o.loss ? *o.loss : nn::Loss{};
      auto metric = nn::MakeMetric(spec.name(), loss);
      if (!metric.ok()) return Status(metric.status()).WithContext(StrCat("compile: metrics of output '", n, "'"));
      o.metrics.push_back(std::move(*metric));
    }
    if (!o.metrics.empty() && !o.loss)
      return InvalidArgumentError("compile: output '", n, "' has metrics but no loss (its labels are unknown)");
    if (o.loss && names.size() > 1) t->impl_->output_loss_trackers.emplace(n, nn::MeanMetric(n + "_loss"));
    t->impl_->outputs.push_back(std::move(o));
  }
  t->impl_->compile = std::move(compile);
  // Weights and zeroed slots.
  t->impl_->state.weights = model->weights();
  if (t->impl_->distributed()) {  // every worker starts from rank 0's weights
    std::vector<Tensor*> all;
    for (auto& [name, w] : t->impl_->state.weights) all.push_back(&w);
    STRATA_RETURN_IF_ERROR(t->impl_->options.collective->Broadcast(all, 0, "the initial weights"));
    STRATA_RETURN_IF_ERROR(model->SetWeights(t->impl_->state.weights));
  }
  for (const nn::WeightSpec& w : model->weight_specs()) {
    if (!w.trainable) continue;
    t->impl_->trained.push_back(w.name);
    for (const std::string& slot : t->impl_->optimizer->SlotNames()) {
      const std::string key = StrCat("optimizer/", w.name, "/", slot);
      t->impl_->state.slots[key] = Tensor::Zeros(w.dtype, w.shape);
      t->impl_->slot_keys.push_back(key);
    }
  }
  if (LossScalingOn(options)) {
    if (t->impl_->distributed())
      return UnimplementedError("loss scaling (mixed_float16, or --loss_scale dynamic) with multi-worker training is "
                                "not built yet: use --mixed_precision bf16 (no loss scaling) or --loss_scale off");
    t->impl_->state.slots[kLossScaleSlot] = Tensor::Scalar<float>(static_cast<float>(options.loss_scale.initial_scale));
    t->impl_->state.slots[kLossScaleCounterSlot] = Tensor::Scalar<int64_t>(0);
  }
  return t;
}

int Trainer::trainable_recompiles() const { return impl_->recompiles; }

Status Trainer::Impl::SyncTrainable() {
  std::vector<std::string> now;
  int64_t params = 0;
  for (const nn::WeightSpec& w : model->weight_specs())
    if (w.trainable) now.push_back(w.name), params += w.shape.NumElements();
  if (now == trained) return Status::OK();
  const size_t before = trained.size();
  // Slots: kept for weights that stay trainable, zeros for newly trainable ones, dropped for frozen ones.
  std::map<std::string, Tensor> slots;
  std::vector<std::string> keys;
  for (const nn::WeightSpec& w : model->weight_specs()) {
    if (!w.trainable) continue;
    for (const std::string& slot : optimizer->SlotNames()) {
      const std::string key = StrCat("optimizer/", w.name, "/", slot);
      auto it = state.slots.find(key);
      slots[key] = it != state.slots.end() ? it->second : Tensor::Zeros(w.dtype, w.shape);
      keys.push_back(key);
    }
  }
  // The loss scale and its counter are slots of the optimizer as a whole: they stay.
  for (const char* key : {kLossScaleSlot, kLossScaleCounterSlot}) {
    auto it = state.slots.find(key);
    if (it != state.slots.end()) slots[key] = it->second;
  }
  state.slots = std::move(slots);
  slot_keys = std::move(keys);
  trained = std::move(now);
  const bool compiled = train.has_value();
  train.reset();
  apply.reset();  // multi-worker: the update graph covers the trainable weights too
  ++recompiles;
  LogInfo("trainable weights of model '", model->name(), "' changed (", before, " -> ", trained.size(),
          " trainable weights, ", params, " trainable params)",
          compiled ? ": recompiling the training plan" : ": the training plan will be compiled for them");
  return Status::OK();
}

double Trainer::Impl::learning_rate() const {
  if (state.learning_rate_override) return *state.learning_rate_override;
  return (*optimizer->learning_rate())(state.iterations);
}

double Trainer::learning_rate() const { return impl_->learning_rate(); }

void Trainer::SetLearningRate(double lr) { impl_->state.learning_rate_override = lr; }

TrainingState Trainer::GetState() const { return impl_->state; }

Status Trainer::SetState(const TrainingState& s) {
  std::vector<std::string> problems;
  auto check = [&](const std::map<std::string, Tensor>& want, const std::map<std::string, Tensor>& got, const char* what) {
    for (const auto& [n, t] : want) {
      auto it = got.find(n);
      if (it == got.end()) problems.push_back(StrCat("missing ", what, " '", n, "' (", t.TypeString(), ")"));
      else if (it->second.dtype() != t.dtype() || it->second.shape() != t.shape())
        problems.push_back(StrCat(what, " '", n, "' is ", t.TypeString(), " in the model, ", it->second.TypeString(),
                                  " in the state"));
    }
    for (const auto& [n, t] : got)
      if (!want.count(n)) problems.push_back(StrCat("unexpected ", what, " '", n, "' (", t.TypeString(), ")"));
  };
  if (!s.dataset_hash.empty() && !impl_->state.dataset_hash.empty() && s.dataset_hash != impl_->state.dataset_hash)
    return FailedPreconditionError("the training state was recorded on dataset version ", s.dataset_hash,
                                   ", this run reads version ", impl_->state.dataset_hash,
                                   " (resuming on other data would not reproduce the run)");
  check(impl_->state.weights, s.weights, "weight");
  check(impl_->state.slots, s.slots, "optimizer slot");
  if (!problems.empty()) return InvalidArgumentError("training state does not match the model: ", StrJoin(problems, "; "));
  const std::string dataset_hash = impl_->state.dataset_hash.empty() ? s.dataset_hash : impl_->state.dataset_hash;
  const std::string run_id = s.run_id.empty() ? impl_->state.run_id : s.run_id;
  impl_->state = s;
  impl_->state.dataset_hash = dataset_hash;
  impl_->state.run_id = run_id;
  return impl_->model->SetWeights(impl_->state.weights);
}

graph::RunStats Trainer::train_stats() const {
  return impl_->train ? impl_->train->session->stats() : graph::RunStats{};
}

const graph::Model* Trainer::training_graph() const { return impl_->train ? impl_->train->model.get() : nullptr; }

namespace {

std::string KeyFor(const std::map<std::string, std::string>& keys, const std::string& input) {
  auto it = keys.find(input);
  return it == keys.end() ? input : it->second;
}

StatusOr<std::map<std::string, DType>> LabelTypes(const std::vector<OutputSpec>& outputs, const data::Element& batch) {
  std::map<std::string, DType> types;
  for (const OutputSpec& o : outputs) {
    if (!o.loss) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor t, batch.Get(o.label_key));
    types[o.name] = t.dtype();
  }
  return types;
}

// Feeds of the model inputs (and labels) from a batch.
Status FeedBatch(const nn::Model& model, const std::vector<OutputSpec>& outputs, const data::Element& batch,
                 const std::map<std::string, std::string>& keys, bool labels,
                 std::vector<std::pair<std::string, Tensor>>* feeds, int64_t* batch_size) {
  *batch_size = -1;
  for (size_t i = 0; i < model.input_names().size(); ++i) {
    const std::string& name = model.input_names()[i];
    const std::string key = KeyFor(keys, name);
    auto t = batch.Get(key);
    if (!t.ok()) return Status(t.status()).WithContext(StrCat("model input '", name, "'"));
    const nn::TensorSpec& spec = model.input_specs()[i];
    if (t->dtype() != spec.dtype)
      return InvalidArgumentError("model input '", name, "' expects ", DTypeName(spec.dtype), " ", spec.ToString(),
                                  ", the dataset's '", key, "' is ", t->TypeString(),
                                  " (convert it in the pipeline, e.g. Map a cast and scale)");
    if (*batch_size < 0 && t->rank() > 0) *batch_size = t->dim(0);
    feeds->emplace_back(name, *t);
  }
  if (!labels) return Status::OK();
  for (const OutputSpec& o : outputs) {
    if (!o.loss) continue;
    auto t = batch.Get(o.label_key);
    if (!t.ok()) return Status(t.status()).WithContext(StrCat("labels of output '", o.name, "'"));
    feeds->emplace_back(o.label_input(), *t);
  }
  return Status::OK();
}

// Where row r of a batch came from: "record 17 (offset 2040) of 'train-0.tfrecord'" (its metadata), or "row r".
std::string DescribeRow(const data::Element& batch, int64_t r) {
  if (r >= static_cast<int64_t>(batch.metadata.size())) return StrCat("row ", r, " of the batch");
  data::Element one;
  one.metadata = {batch.metadata[r]};
  const std::string where = one.Describe();
  return where == "element" ? StrCat("row ", r, " of the batch") : StrCat("example ", where);
}

}  // namespace

Status CheckSparseLabels(const std::vector<OutputSpec>& outputs, const CompiledGraph& cg, const data::Element& batch) {
  for (const OutputSpec& o : outputs) {
    if (!o.loss || o.loss->kind != nn::Loss::Kind::kSparseCategoricalCrossentropy) continue;
    const auto classes = cg.num_classes.find(o.name);
    const Tensor* labels = batch.Find(o.label_key);
    if (classes == cg.num_classes.end() || labels == nullptr) continue;
    const bool i64 = labels->dtype() == DType::kInt64;
    if (!i64 && labels->dtype() != DType::kInt32) continue;  // the loss op reports other dtypes
    const int64_t n = labels->num_elements();
    const int64_t rows = labels->rank() > 0 ? labels->dim(0) : 1;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = i64 ? labels->data<int64_t>()[i] : labels->data<int32_t>()[i];
      if (v >= 0 && v < classes->second) continue;
      const int64_t row = rows > 0 && n >= rows ? i / (n / rows) : i;
      return InvalidArgumentError("label ", v, " of ", DescribeRow(batch, row), " is outside the valid range [0, ",
                                  classes->second, ") of output '", o.name, "' (", o.loss->name(), " over ",
                                  classes->second, " classes; '", o.label_key, "' row ", row, " of the batch)");
    }
  }
  return Status::OK();
}

Status Trainer::Impl::EnsureTrainSession(const data::Element& batch, const std::map<std::string, std::string>& keys) {
  STRATA_RETURN_IF_ERROR(SyncTrainable());
  if (train) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(auto types, LabelTypes(outputs, batch));
  if (distributed()) {
    STRATA_ASSIGN_OR_RETURN(CompiledGraph grad_graph, BuildGradientGraph(*model, outputs, types, options));
    STRATA_ASSIGN_OR_RETURN(CompiledGraph apply_graph, BuildApplyGraph(*model, *optimizer, options));
    train = std::move(grad_graph);
    apply = std::move(apply_graph);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(CompiledGraph cg,
                          BuildTrainGraph(*model, *optimizer, outputs, types, options, loss_scaling()));
  train = std::move(cg);
  return Status::OK();
}

Status Trainer::Impl::EnsureEvalSession(const data::Element& batch, const std::map<std::string, std::string>& keys,
                                        bool with_loss) {
  std::optional<CompiledGraph>& slot = with_loss ? eval : predict;
  if (slot) return Status::OK();
  std::map<std::string, DType> types;
  if (with_loss) {
    STRATA_ASSIGN_OR_RETURN(types, LabelTypes(outputs, batch));
  }
  STRATA_ASSIGN_OR_RETURN(CompiledGraph cg, BuildEvalGraph(*model, outputs, types, with_loss, options));
  slot = std::move(cg);
  return Status::OK();
}

double Trainer::communication_seconds() const { return impl_->comm_seconds; }
double Trainer::step_seconds() const { return impl_->step_seconds; }

StatusOr<Logs> Trainer::TrainOnBatch(const data::Element& batch, const std::map<std::string, std::string>& keys) {
  STRATA_RETURN_IF_ERROR(impl_->EnsureTrainSession(batch, keys));
  const auto step_start = std::chrono::steady_clock::now();
  CompiledGraph& cg = *impl_->train;
  std::vector<std::pair<std::string, Tensor>> feeds;
  int64_t batch_size = 0;
  STRATA_RETURN_IF_ERROR(FeedBatch(*impl_->model, impl_->outputs, batch, keys, true, &feeds, &batch_size));
  if (Status s = CheckSparseLabels(impl_->outputs, cg, batch); !s.ok())
    return s.WithContext(StrCat("training step ", impl_->state.iterations));
  for (const auto& [name, t] : impl_->state.weights) feeds.emplace_back(name, t);
  if (!impl_->distributed()) {  // multi-worker: the update graph takes these
    for (const std::string& key : impl_->slot_keys) feeds.emplace_back(key, impl_->state.slots.at(key));
    feeds.emplace_back(kLrInput, Tensor::Scalar<float>(static_cast<float>(learning_rate())));
    feeds.emplace_back(kIterationsInput, Tensor::Scalar<int64_t>(impl_->state.iterations));
  }
  if (cg.uses_seed) {
    // Workers draw different dropout masks (their examples differ too): the seed is mixed with the rank.
    const uint64_t seed = impl_->distributed()
                              ? impl_->state.seed ^ (0x9E3779B97F4A7C15ULL * (impl_->options.collective->rank() + 1))
                              : impl_->state.seed;
    feeds.emplace_back(kSeedInput, Tensor::Scalar<int64_t>(StepSeed(seed, impl_->state.iterations)));
  }
  if (cg.loss_scaling) feeds.emplace_back(kLossScaleInput, impl_->state.slots.at(kLossScaleSlot));
  std::vector<Tensor> results;
  Status s;
  if (impl_->distributed()) {
    s = impl_->RunGradientStep(feeds, &results);
  } else {
    s = cg.session->Run(feeds, cg.fetches, &results);
  }
  if (!s.ok()) return s.WithContext(StrCat("training step ", impl_->state.iterations));
  if (impl_->distributed()) {
    s = impl_->ApplyAveragedGradients(results);
    if (!s.ok()) return s.WithContext(StrCat("training step ", impl_->state.iterations));
    ++impl_->state.iterations;
  } else {
    // New state. A loss-scaled step with a non-finite gradient is skipped (Keras's LossScaleOptimizer): trainable
    // weights, slots and iterations stay; the forward pass's state updates (batch-norm moving statistics) still land.
    bool apply = true;
    if (cg.loss_scaling) {
      const float check = results[cg.fetch_index.at(kGradsFiniteOutput)].data<float>()[0];
      apply = check == 0.0f;
      float scale = impl_->state.slots.at(kLossScaleSlot).data<float>()[0];
      int64_t counter = impl_->state.slots.at(kLossScaleCounterSlot).data<int64_t>()[0];
      if (!apply) {
        scale *= 0.5f;
        counter = 0;
        ++impl_->skipped_steps;
      } else if (counter + 1 >= impl_->options.loss_scale.growth_steps) {
        scale *= 2.0f;
        counter = 0;
      } else {
        ++counter;
      }
      // New tensors: a state handed out by GetState keeps its own values.
      impl_->state.slots[kLossScaleSlot] = Tensor::Scalar<float>(scale);
      impl_->state.slots[kLossScaleCounterSlot] = Tensor::Scalar<int64_t>(counter);
    }
    if (apply) {
      for (const auto& [weight, out] : cg.weight_outputs) impl_->state.weights[weight] = results[cg.fetch_index.at(out)];
      for (const auto& [slot, out] : cg.slot_outputs) impl_->state.slots[slot] = results[cg.fetch_index.at(out)];
      ++impl_->state.iterations;
    } else {
      for (const auto& [weight, out] : cg.state_outputs) impl_->state.weights[weight] = results[cg.fetch_index.at(out)];
    }
  }
  // The model holds the new weights after every step (Keras's train_on_batch; the tensors are shared, not copied).
  STRATA_RETURN_IF_ERROR(impl_->model->SetWeights(impl_->state.weights));
  impl_->step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
  // Metrics.
  const Tensor& loss = results[cg.fetch_index.at(kLossOutput)];
  const double weight = batch_size > 0 ? static_cast<double>(batch_size) : 1.0;
  const double loss_value = loss.dtype() == DType::kFloat64 ? loss.data<double>()[0] : loss.data<float>()[0];
  impl_->loss_tracker.Update(loss_value, weight);
  for (auto& [name, tracker] : impl_->output_loss_trackers) {
    const Tensor& l = results[cg.fetch_index.at("loss/" + name)];
    tracker.Update(l.data<float>()[0], weight);
  }
  for (OutputSpec& o : impl_->outputs) {
    if (o.metrics.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor labels, batch.Get(o.label_key));
    const Tensor& pred = results[cg.fetch_index.at(o.name)];
    for (auto& m : o.metrics) STRATA_RETURN_IF_ERROR(m->Update(labels, pred));
  }
  Logs logs = impl_->CurrentLogs();
  if (impl_->distributed()) {
    if (Status avg = impl_->AverageLogs(&logs); !avg.ok())
      return avg.WithContext(StrCat("training step ", impl_->state.iterations - 1));
  }
  return logs;
}

Status Trainer::Impl::AverageLogs(Logs* logs) const {
  // Every worker trains on the same number of examples per step, so the global running mean of the loss (and of
  // accuracy) is the mean of the workers' running means.
  std::vector<double> values;
  for (const auto& [k, v] : logs->items()) values.push_back(v);
  STRATA_RETURN_IF_ERROR(options.collective->AllReduceMean(&values, "the metrics"));
  Logs out;
  for (size_t i = 0; i < values.size(); ++i) out.Set(logs->items()[i].first, values[i]);
  *logs = std::move(out);
  return Status::OK();
}

namespace {

// (weight, output) of what a multi-worker step averages, in the order it is reduced: the gradients (reverse layer
// order), then the batch-norm statistics the forward pass updated.
std::vector<std::pair<std::string, std::string>> ReducedOutputs(const CompiledGraph& cg) {
  std::vector<std::pair<std::string, std::string>> all = cg.grad_outputs;
  all.insert(all.end(), cg.weight_outputs.begin(), cg.weight_outputs.end());
  return all;
}

}  // namespace

// Multi-worker step, the gradient graph: its run reduces through the collective (SyncBatchNormalization), and with
// overlap_allreduce (and gradients of at least overlap_min_bytes) each gradient (reverse layer order), then each
// batch-norm statistic, joins the collective's overlapped sum as soon as the run has computed it, its bucket's
// reduction starting when the bucket is complete (the graph divided the loss and the statistics by the number of
// workers: the sums are the means).
Status Trainer::Impl::RunGradientStep(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                      std::vector<Tensor>* results) {
  CompiledGraph& cg = *train;
  Collective& c = *options.collective;
  graph::RunHooks hooks;
  double comm = 0;  // seconds in the collective on this thread: communication nothing overlaps
  auto timed = [&comm](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = f();
    comm += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s;
  };
  const ops::AllReduceSumFn all_reduce_sum = [&](float* data, int64_t n, std::string_view what) {
    return timed([&] { return c.AllReduceSum(data, n, what); });
  };
  pending.reset();
  std::vector<int> pending_of_fetch(cg.fetches.size(), -1);  // fetch -> index in the overlapped reduction
  // The gradients are float32, one per trainable parameter (cg.grad_outputs).
  const int64_t gradient_bytes = model->CountParams(/*trainable_only=*/true) * static_cast<int64_t>(sizeof(float));
  if (options.overlap_allreduce && gradient_bytes >= options.overlap_min_bytes) {
    std::vector<Shape> shapes;
    hooks.taken_fetches.assign(cg.fetches.size(), 0);
    for (const auto& [weight, out] : ReducedOutputs(cg)) {
      pending_of_fetch[cg.fetch_index.at(out)] = static_cast<int>(shapes.size());
      hooks.taken_fetches[cg.fetch_index.at(out)] = 1;  // the means replace them: the run need not copy them out
      shapes.push_back(state.weights.at(weight).shape());
    }
    STRATA_ASSIGN_OR_RETURN(pending, c.StartAllReduceSum(shapes, "the gradients"));
    PendingAllReduce* reduction = pending.get();
    hooks.on_fetch_ready = [&, reduction](size_t fetch, const Tensor& value) {
      if (pending_of_fetch[fetch] < 0) return Status::OK();
      return timed([&] { return reduction->Add(pending_of_fetch[fetch], value); });
    };
    hooks.after_step = [&, reduction] { return timed([&] { return reduction->Test(); }); };
  }
  Status s;
  {
    graph::ScopedRunHooks scoped_hooks(&hooks);
    ops::ScopedAllReduceSum scoped_sum(&all_reduce_sum);
    s = cg.session->Run(feeds, cg.fetches, results);
  }
  comm_seconds += comm;
  if (!s.ok()) pending.reset();
  return s;
}

// Multi-worker step, after the gradient graph ran: averages the gradients (reverse layer order, bucketed by the
// collective) and the batch-norm statistics across workers by summing them (the gradient graph divided them by the
// number of workers), or waits for the overlapped reduction RunGradientStep started; then runs the update graph on
// the averages.
Status Trainer::Impl::ApplyAveragedGradients(std::vector<Tensor>& results) {
  CompiledGraph& cg = *train;
  if (pending) {
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<std::vector<Tensor>> means = pending->Wait();
    pending.reset();
    comm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!means.ok()) return means.status();
    size_t k = 0;
    for (const auto& [weight, out] : ReducedOutputs(cg)) results[cg.fetch_index.at(out)] = std::move((*means)[k++]);
    return RunUpdateGraph(results);
  }
  const auto t0 = std::chrono::steady_clock::now();  // the copies count too, as the overlapped path's do
  // The collective replaces each tensor by a new one holding the sum; it never writes into the session's buffers.
  std::vector<Tensor*> reduced;
  for (const auto& [weight, out] : ReducedOutputs(cg)) reduced.push_back(&results[cg.fetch_index.at(out)]);
  STRATA_RETURN_IF_ERROR(options.collective->AllReduceSum(reduced, "the gradients"));
  comm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return RunUpdateGraph(results);
}

// The update graph on the averaged gradients; the averaged batch-norm statistics become the new moving statistics.
Status Trainer::Impl::RunUpdateGraph(std::vector<Tensor>& results) {
  CompiledGraph& cg = *train;
  CompiledGraph& ag = *apply;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [weight, out] : cg.grad_outputs) {
    feeds.emplace_back(weight, state.weights.at(weight));
    feeds.emplace_back(GradInput(weight), results[cg.fetch_index.at(out)]);
  }
  for (const std::string& key : slot_keys) feeds.emplace_back(key, state.slots.at(key));
  feeds.emplace_back(kLrInput, Tensor::Scalar<float>(static_cast<float>(learning_rate())));
  feeds.emplace_back(kIterationsInput, Tensor::Scalar<int64_t>(state.iterations));
  std::vector<Tensor> updated;
  STRATA_RETURN_IF_ERROR(ag.session->Run(feeds, ag.fetches, &updated));
  for (const auto& [weight, out] : ag.weight_outputs) state.weights[weight] = updated[ag.fetch_index.at(out)];
  for (const auto& [slot, out] : ag.slot_outputs) state.slots[slot] = updated[ag.fetch_index.at(out)];
  for (const auto& [weight, out] : cg.weight_outputs) state.weights[weight] = results[cg.fetch_index.at(out)];
  return Status::OK();
}

// Runs the eval (with_loss) or predict graph on one batch; updates the trackers when with_loss.
StatusOr<std::map<std::string, Tensor>> RunInference(Trainer& t, Trainer::Impl& impl, std::optional<CompiledGraph>& cg,
                                                     const nn::Model& model, const TrainingState& state,
                                                     const data::Element& batch,
                                                     const std::map<std::string, std::string>& keys, bool with_loss);

StatusOr<std::map<std::string, Tensor>> Trainer::PredictOnBatch(const data::Element& batch,
                                                                const std::map<std::string, std::string>& keys) {
  STRATA_RETURN_IF_ERROR(impl_->EnsureEvalSession(batch, keys, false));
  return RunInference(*this, *impl_, impl_->predict, *impl_->model, impl_->state, batch, keys, false);
}

StatusOr<std::map<std::string, Tensor>> RunInference(Trainer& t, Trainer::Impl& impl, std::optional<CompiledGraph>& cg,
                                                     const nn::Model& model, const TrainingState& state,
                                                     const data::Element& batch,
                                                     const std::map<std::string, std::string>& keys, bool with_loss) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  int64_t batch_size = 0;
  STRATA_RETURN_IF_ERROR(FeedBatch(model, impl.outputs, batch, keys, with_loss, &feeds, &batch_size));
  if (with_loss) STRATA_RETURN_IF_ERROR(CheckSparseLabels(impl.outputs, *cg, batch));
  for (const auto& [name, w] : state.weights) feeds.emplace_back(name, w);
  std::vector<Tensor> results;
  STRATA_RETURN_IF_ERROR(cg->session->Run(feeds, cg->fetches, &results));
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < cg->fetches.size(); ++i) out[cg->fetches[i]] = results[i];
  if (!with_loss) return out;
  const double weight = batch_size > 0 ? static_cast<double>(batch_size) : 1.0;
  const Tensor& loss = out.at(kLossOutput);
  impl.loss_tracker.Update(loss.dtype() == DType::kFloat64 ? loss.data<double>()[0] : loss.data<float>()[0], weight);
  for (auto& [name, tracker] : impl.output_loss_trackers) tracker.Update(out.at("loss/" + name).data<float>()[0], weight);
  for (OutputSpec& o : impl.outputs) {
    if (o.metrics.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(Tensor labels, batch.Get(o.label_key));
    for (auto& m : o.metrics) STRATA_RETURN_IF_ERROR(m->Update(labels, out.at(o.name)));
  }
  return out;
}

}  // namespace strata::train
