// Trainer::Fit, Evaluate and Predict: the Keras fit loop (specs/tf-formats.md §5.1) over data::Dataset.
#include <cmath>
#include <cstdio>

#include "train/trainer_impl.h"

namespace strata::train {

void Logs::Set(const std::string& key, double value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = value;
      return;
    }
  items_.emplace_back(key, value);
}

const double* Logs::Find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

std::string Logs::Format() const {
  std::string out;
  for (const auto& [k, v] : items_) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), std::abs(v) > 1e-3 ? "%.4f" : "%.4e", v);
    out += StrCat(out.empty() ? "" : " - ", k, ": ", buf);
  }
  return out;
}

namespace {

Status Each(std::vector<std::shared_ptr<Callback>>& cbs, const std::function<Status(Callback&)>& fn) {
  for (auto& cb : cbs) STRATA_RETURN_IF_ERROR(fn(*cb));
  return Status::OK();
}

}  // namespace

StatusOr<History> Trainer::Fit(const data::Dataset& train, FitOptions options) {
  if (options.epochs < 1 || options.initial_epoch < 0 || options.initial_epoch > options.epochs)
    return InvalidArgumentError("fit: need 0 <= initial_epoch (", options.initial_epoch, ") <= epochs (",
                                options.epochs, ") and epochs >= 1");
  if (options.validation_freq < 1) return InvalidArgumentError("fit: validation_freq must be >= 1");
  impl_->fit_epochs = options.epochs;
  impl_->fit_steps = options.steps_per_epoch;
  impl_->stop_training = false;
  std::vector<std::shared_ptr<Callback>> cbs;
  if (options.verbose > 0) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Callback> bar, ProgressBar(options.verbose));
    cbs.push_back(std::move(bar));
  }
  for (auto& cb : options.callbacks) cbs.push_back(cb);
  History history;
  Logs epoch_logs;
  impl_->resume.reset();
  STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnTrainBegin(*this); }));
  if (impl_->resume) {  // a callback restored a state (BackupAndRestore)
    options.initial_epoch = std::min(impl_->resume->first, options.epochs);
    options.initial_batch = impl_->resume->second;
    impl_->resume.reset();
  }
  for (int epoch = options.initial_epoch; epoch < options.epochs; ++epoch) {
    impl_->ResetMetrics();
    impl_->state.epoch = epoch;
    STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnEpochBegin(*this, epoch); }));
    data::IteratorOptions io;
    io.epoch = epoch;
    auto it = train.MakeIterator(io);
    if (!it.ok()) return Status(it.status()).WithContext(StrCat("epoch ", epoch));
    int64_t batch = 0;
    if (epoch == options.initial_epoch && options.initial_batch > 0) {
      STRATA_ASSIGN_OR_RETURN(batch, (*it)->Skip(options.initial_batch));
    }
    impl_->state.batch = batch;
    Logs logs;
    while (options.steps_per_epoch < 0 || batch < options.steps_per_epoch) {
      data::Element element;
      auto more = (*it)->GetNext(&element);
      if (!more.ok()) return Status(more.status()).WithContext(StrCat("epoch ", epoch, ", batch ", batch));
      if (!*more) break;
      STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnTrainBatchBegin(*this, batch); }));
      STRATA_ASSIGN_OR_RETURN(logs, TrainOnBatch(element, options.input_keys));
      impl_->state.batch = ++batch;
      STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnTrainBatchEnd(*this, batch - 1, logs); }));
      if (impl_->stop_training) break;
    }
    if (batch == 0) return OutOfRangeError("fit: the training dataset produced no batch in epoch ", epoch);
    STRATA_RETURN_IF_ERROR(impl_->model->SetWeights(impl_->state.weights));
    epoch_logs = logs;
    if (options.validation_data && (epoch + 1) % options.validation_freq == 0) {
      STRATA_ASSIGN_OR_RETURN(Logs val, Evaluate(*options.validation_data, 0, -1, options.input_keys));
      for (const auto& [k, v] : val.items()) epoch_logs.Set("val_" + k, v);
    }
    // The next epoch starts at batch 0 (what a checkpoint written now resumes from).
    impl_->state.epoch = epoch + 1;
    impl_->state.batch = 0;
    impl_->state.history.emplace_back(epoch, epoch_logs);  // checkpoints written at this epoch end include it
    STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnEpochEnd(*this, epoch, epoch_logs); }));
    impl_->state.history.back().second = epoch_logs;  // with what the callbacks added (learning_rate)
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : epoch_logs.items()) history.history[k].push_back(v);
    if (impl_->stop_training) break;
  }
  STRATA_RETURN_IF_ERROR(Each(cbs, [&](Callback& c) { return c.OnTrainEnd(*this, epoch_logs); }));
  STRATA_RETURN_IF_ERROR(impl_->model->SetWeights(impl_->state.weights));
  return history;
}

StatusOr<Logs> Trainer::Evaluate(const data::Dataset& dataset, int verbose, int64_t steps,
                                 const std::map<std::string, std::string>& keys) {
  // Evaluation has its own trackers: save the training ones (fit calls this between epochs).
  impl_->ResetMetrics();
  auto it = dataset.MakeIterator({});
  if (!it.ok()) return Status(it.status()).WithContext("evaluate");
  int64_t batch = 0;
  for (; steps < 0 || batch < steps; ++batch) {
    data::Element element;
    STRATA_ASSIGN_OR_RETURN(bool more, (*it)->GetNext(&element));
    if (!more) break;
    STRATA_RETURN_IF_ERROR(impl_->EnsureEvalSession(element, keys, true));
    auto out = RunInference(*this, *impl_, impl_->eval, *impl_->model, impl_->state, element, keys, true);
    if (!out.ok()) return Status(out.status()).WithContext(StrCat("evaluate, batch ", batch));
  }
  if (batch == 0) return OutOfRangeError("evaluate: the dataset produced no batch");
  Logs logs = impl_->CurrentLogs();
  impl_->ResetMetrics();
  if (verbose > 0) std::printf("%lld/%lld - %s\n", (long long)batch, (long long)batch, logs.Format().c_str());
  return logs;
}

StatusOr<std::map<std::string, Tensor>> Trainer::Predict(const data::Dataset& dataset,
                                                         const std::map<std::string, std::string>& keys) {
  auto it = dataset.MakeIterator({});
  if (!it.ok()) return Status(it.status()).WithContext("predict");
  std::map<std::string, std::vector<Tensor>> parts;
  while (true) {
    data::Element element;
    STRATA_ASSIGN_OR_RETURN(bool more, (*it)->GetNext(&element));
    if (!more) break;
    STRATA_ASSIGN_OR_RETURN(auto out, PredictOnBatch(element, keys));
    for (auto& [k, v] : out) parts[k].push_back(std::move(v));
  }
  std::map<std::string, Tensor> result;
  for (auto& [k, list] : parts) {
    Shape s = list[0].shape();
    int64_t rows = 0;
    for (const Tensor& t : list) rows += t.dim(0);
    s[0] = rows;
    Tensor all = Tensor::Empty(list[0].dtype(), s);
    size_t off = 0;
    for (const Tensor& t : list) {
      std::memcpy(static_cast<char*>(all.raw_data()) + off, t.raw_data(), t.byte_size());
      off += t.byte_size();
    }
    result[k] = std::move(all);
  }
  return result;
}

}  // namespace strata::train
