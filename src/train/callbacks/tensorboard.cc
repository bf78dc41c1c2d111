// TensorBoard (specs/tf-formats.md §3 and §5.3): Keras's callback on strata's event-file writer (src/io/tfevents).
// Runs <log_dir>/train and <log_dir>/validation; epoch scalars at step = epoch, batch scalars at step = iterations
// (so a resumed run continues its curves, §3.7), weight histograms every histogram_freq epochs, and the op graph of
// the training step.
#include <charconv>
#include <memory>

#include "core/file_util.h"
#include "io/tfevents.h"
#include "strata/train.h"
#include "train/tensorboard_graph.h"

namespace strata::train {
namespace {

class TensorBoardCallback final : public Callback {
 public:
  TensorBoardCallback(TensorBoardOptions options, int64_t update_every)
      : options_(std::move(options)), update_every_(update_every) {}

  Status OnTrainBegin(Trainer& t) override {
    // New files for every Fit: a restarted run never appends to (or truncates) what an earlier one wrote.
    STRATA_RETURN_IF_ERROR(CloseAll());
    STRATA_RETURN_IF_ERROR(Open("train", &train_));
    graph_written_ = false;
    if (options_.write_graph) {
      auto summary = t.model().Summary();
      if (summary.ok()) STRATA_RETURN_IF_ERROR(train_->WriteText("model_summary", 0, "```\n" + *summary + "```\n"));
    }
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs& logs) override {
    if (!train_) return FailedPreconditionError("TensorBoard callback: batch end before train begin");
    if (options_.write_graph && !graph_written_) {
      graph_written_ = true;
      if (const graph::Model* g = t.training_graph())
        STRATA_RETURN_IF_ERROR(train_->WriteGraph(ToTensorBoardGraph(g->graph), 0));
    }
    if (update_every_ <= 0) return Status::OK();
    const int64_t step = t.iterations();  // batches trained so far, over all epochs and restarts
    if (step % update_every_ != 0) return Status::OK();
    for (const auto& [k, v] : logs.items()) STRATA_RETURN_IF_ERROR(train_->WriteScalar("batch_" + k, step, v));
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) override {
    if (!train_) return FailedPreconditionError("TensorBoard callback: epoch end before train begin");
    bool has_lr = false;
    for (const auto& [k, v] : logs.items()) {
      if (k.rfind("val_", 0) == 0) {
        if (!validation_) STRATA_RETURN_IF_ERROR(Open("validation", &validation_));
        STRATA_RETURN_IF_ERROR(validation_->WriteScalar("epoch_" + k.substr(4), epoch, v));
      } else {
        has_lr = has_lr || k == "learning_rate";
        STRATA_RETURN_IF_ERROR(train_->WriteScalar("epoch_" + k, epoch, v));
      }
    }
    if (!has_lr) STRATA_RETURN_IF_ERROR(train_->WriteScalar("epoch_learning_rate", epoch, t.learning_rate()));
    if (options_.histogram_freq > 0 && epoch % options_.histogram_freq == 0)
      STRATA_RETURN_IF_ERROR(Histograms(t, epoch));
    STRATA_RETURN_IF_ERROR(train_->Flush());
    if (validation_) STRATA_RETURN_IF_ERROR(validation_->Flush());
    return Status::OK();
  }

  Status OnTrainEnd(Trainer&, const Logs&) override { return CloseAll(); }

 private:
  Status Open(const std::string& run, std::unique_ptr<io::EventFileWriter>* w) {
    io::EventFileWriterOptions o;
    o.flush_secs = options_.flush_secs;
    auto made = io::EventFileWriter::Create(JoinPath(options_.log_dir, run), o);
    if (!made.ok()) return std::move(made).status().WithContext("TensorBoard callback");
    *w = std::move(*made);
    return Status::OK();
  }

  Status Histograms(Trainer& t, int epoch) {
    for (const auto& [name, w] : t.model().weights()) {
      std::string tag = name;
      for (char& c : tag)
        if (c == ':') c = '_';
      tag += "/histogram";
      if (w.dtype() == DType::kFloat32) {
        STRATA_RETURN_IF_ERROR(
            train_->WriteHistogram(tag, epoch, w.data<float>(), static_cast<size_t>(w.num_elements())));
      } else if (w.dtype() == DType::kFloat64) {
        const double* d = w.data<double>();
        STRATA_RETURN_IF_ERROR(train_->WriteHistogram(tag, epoch, std::vector<double>(d, d + w.num_elements())));
      }
    }
    return Status::OK();
  }

  Status CloseAll() {
    Status s = Status::OK();
    for (auto* w : {&train_, &validation_}) {
      if (!*w) continue;
      Status c = (*w)->Close();
      if (s.ok() && !c.ok()) s = c;
      w->reset();
    }
    return s;
  }

  TensorBoardOptions options_;
  int64_t update_every_;  // 0 = epoch only
  std::unique_ptr<io::EventFileWriter> train_, validation_;
  bool graph_written_ = false;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> TensorBoard(TensorBoardOptions options) {
  int64_t every = 0;
  const std::string& f = options.update_freq;
  if (f == "batch") {
    every = 1;
  } else if (f != "epoch") {
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), every);
    if (ec != std::errc() || end != f.data() + f.size() || every < 1)
      return InvalidArgumentError(
          "TensorBoard: update_freq must be 'epoch', 'batch' or a positive number of batches, got '", f, "'");
  }
  if (options.histogram_freq < 0)
    return InvalidArgumentError("TensorBoard: histogram_freq must be >= 0 (0 = off), got ", options.histogram_freq);
  if (options.log_dir.empty()) return InvalidArgumentError("TensorBoard: log_dir is empty");
  if (!(options.flush_secs >= 0))
    return InvalidArgumentError("TensorBoard: flush_secs must be >= 0, got ", options.flush_secs);
  return std::shared_ptr<Callback>(std::make_shared<TensorBoardCallback>(std::move(options), every));
}

}  // namespace strata::train
