// ProfileSteps (Keras TensorBoard's profile_batch): a Chrome trace of training steps first..last.
#include <cstdlib>

#include "core/logging.h"
#include "strata/train.h"

namespace strata::train {
namespace {

class ProfileStepsCallback final : public Callback {
 public:
  explicit ProfileStepsCallback(ProfileStepsOptions o) : o_(std::move(o)) {}

  ~ProfileStepsCallback() override {
    // Training stopped by an error (TerminateOnNaN, check_numerics) before `last`: the steps recorded are still worth
    // having, the failing one most of all.
    if (started_ && !written_) {
      Status s = Write();
      if (!s.ok()) LogWarning("profile: ", s.message());
    }
  }

  Status OnTrainBatchBegin(Trainer& t, int64_t) override {
    const int64_t step = t.iterations() + 1;
    if (written_ || step < o_.first || step > o_.last) return Status::OK();
    if (!started_) {
      started_ = true;
      o_.profiler->Start();
    }
    step_start_us_ = o_.profiler->NowMicros();
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t, const Logs&) override {
    if (!started_ || written_) return Status::OK();
    graph::TraceEvent e;
    e.name = StrCat("train_step ", t.iterations());
    e.cat = "strata.step";
    e.ts_us = step_start_us_;
    e.dur_us = o_.profiler->NowMicros() - step_start_us_;
    e.tid = 0;
    e.num_args = {{"step", static_cast<double>(t.iterations())}};
    o_.profiler->Add({std::move(e)});
    if (t.iterations() >= o_.last) return Write();
    return Status::OK();
  }

  Status OnTrainEnd(Trainer&, const Logs&) override {
    if (started_ && !written_) return Write();
    return Status::OK();
  }

 private:
  Status Write() {
    written_ = true;
    o_.profiler->Stop();
    if (!o_.log_dir.empty()) {
      STRATA_ASSIGN_OR_RETURN(std::string path, o_.profiler->WriteTensorBoardTrace(o_.log_dir));
      LogInfo("profile: steps ", o_.first, "-", o_.last, " in ", path, " (", o_.profiler->num_events(), " events)");
    }
    if (!o_.path.empty()) {
      STRATA_RETURN_IF_ERROR(o_.profiler->WriteChromeTrace(o_.path));
      LogInfo("profile: steps ", o_.first, "-", o_.last, " in ", o_.path, " (", o_.profiler->num_events(), " events)");
    }
    return Status::OK();
  }

  ProfileStepsOptions o_;
  bool started_ = false, written_ = false;
  double step_start_us_ = 0;
};

}  // namespace

StatusOr<std::pair<int64_t, int64_t>> ParseProfileSteps(std::string_view text, std::string_view where) {
  const std::string s(text);
  const size_t comma = s.find(',');
  auto number = [&](const std::string& item) -> StatusOr<int64_t> {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1)
      return InvalidArgumentError(where, ": expected a step N or a range A,B of 1-based training steps, got '", text,
                                  "'");
    return static_cast<int64_t>(v);
  };
  STRATA_ASSIGN_OR_RETURN(int64_t first, number(s.substr(0, comma)));
  int64_t last = first;
  if (comma != std::string::npos) {
    STRATA_ASSIGN_OR_RETURN(last, number(s.substr(comma + 1)));
  }
  if (last < first) return InvalidArgumentError(where, ": the range ", text, " ends before it starts");
  return std::make_pair(first, last);
}

StatusOr<std::shared_ptr<Callback>> ProfileSteps(ProfileStepsOptions options) {
  if (!options.profiler) return InvalidArgumentError("ProfileSteps: no profiler (give TrainerOptions::profiler's)");
  if (options.first < 1 || options.last < options.first)
    return InvalidArgumentError("ProfileSteps: steps ", options.first, "-", options.last,
                                " are not a range of 1-based steps");
  if (options.log_dir.empty() && options.path.empty())
    return InvalidArgumentError("ProfileSteps: give a log_dir (TensorBoard layout) or a path for the trace");
  return std::shared_ptr<Callback>(std::make_shared<ProfileStepsCallback>(std::move(options)));
}

}  // namespace strata::train
