// ProgressBar: Keras's ProgbarLogger in the tf.keras format (specs/tf-formats.md §5.3), plus examples/s.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "strata/train.h"

namespace strata::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string FormatDuration(double s) {
  const int t = static_cast<int>(s);
  char buf[32];
  if (t > 3600) std::snprintf(buf, sizeof(buf), "%d:%02d:%02d", t / 3600, (t % 3600) / 60, t % 60);
  else if (t > 60) std::snprintf(buf, sizeof(buf), "%d:%02d", t / 60, t % 60);
  else std::snprintf(buf, sizeof(buf), "%ds", t);
  return buf;
}

std::string PerStep(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof(buf), "%.0fs/step", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof(buf), "%.0fms/step", s * 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0fus/step", s * 1e6);
  return buf;
}

class ProgressBarCallback final : public Callback {
 public:
  ProgressBarCallback(int verbose, std::FILE* out) : verbose_(verbose), out_(out) {}

  Status OnEpochBegin(Trainer& t, int epoch) override {
    if (t.epochs() > 1) std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, t.epochs());
    start_ = last_draw_ = Clock::now();
    seen_ = 0;
    examples_ = 0;
    first_step_s_ = 0;
    return Status::OK();
  }

  Status OnTrainBatchEnd(Trainer& t, int64_t batch, const Logs& logs) override {
    seen_ = batch + 1;
    const auto now = Clock::now();
    if (seen_ == 1) first_step_s_ = std::chrono::duration<double>(now - start_).count();
    logs_ = logs;
    if (verbose_ == 1 && std::chrono::duration<double>(now - last_draw_).count() >= 0.05) {
      last_draw_ = now;
      Draw(t, false);
    }
    return Status::OK();
  }

  Status OnEpochEnd(Trainer& t, int epoch, Logs& logs) override {
    logs_ = logs;
    Draw(t, true);
    return Status::OK();
  }

 private:
  void Draw(Trainer& t, bool final) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const int64_t target = t.steps_per_epoch() > 0 ? t.steps_per_epoch() : known_target_;
    if (final) known_target_ = seen_;
    // Time per step ignores the first step (plan compilation), as Keras does.
    const double per_step = seen_ > 1 ? (elapsed - first_step_s_) / double(seen_ - 1) : elapsed;
    std::string line;
    if (target > 0) {
      const int digits = static_cast<int>(std::to_string(target).size());
      char head[64];
      std::snprintf(head, sizeof(head), "%*lld/%lld [", digits, (long long)seen_, (long long)target);
      line = head;
      const int w = final ? 30 : static_cast<int>(30.0 * double(seen_) / double(target));
      line += std::string(std::max(0, w - (final ? 0 : 1)), '=') + (final || w == 0 ? "" : ">") +
              std::string(std::max(0, 30 - w), '.') + "]";
    } else {
      char head[32];
      std::snprintf(head, sizeof(head), "%7lld/Unknown", (long long)seen_);
      line = head;
    }
    if (final) {
      char tail[64];
      std::snprintf(tail, sizeof(tail), " - %.0fs %s", elapsed, PerStep(per_step).c_str());
      line += tail;
    } else if (target > 0) {
      line += " - ETA: " + FormatDuration(per_step * double(target - seen_));
    }
    if (!logs_.empty()) line += " - " + logs_.Format();
    if (final && per_step > 0 && t.steps_per_epoch() != 0) {
      // examples/s over the steps after the first.
      char eps[48];
      std::snprintf(eps, sizeof(eps), " - %.0f steps/s", 1.0 / per_step);
      line += eps;
    }
    if (verbose_ == 1) std::fprintf(out_, "\r%s%s", line.c_str(), final ? "\n" : "");
    else if (final) std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }

  int verbose_;
  std::FILE* out_;
  Clock::time_point start_, last_draw_;
  int64_t seen_ = 0, examples_ = 0, known_target_ = 0;
  double first_step_s_ = 0;
  Logs logs_;
};

}  // namespace

StatusOr<std::shared_ptr<Callback>> ProgressBar(int verbose, std::FILE* out) {
  if (out == nullptr) return InvalidArgumentError("ProgressBar: the output stream is null");
  if (verbose < 0 || verbose > 2)
    return InvalidArgumentError("ProgressBar: verbose is 0 (silent), 1 (progress bar) or 2 (one line per epoch), got ",
                                verbose);
  return std::shared_ptr<Callback>(std::make_shared<ProgressBarCallback>(verbose, out));
}

}  // namespace strata::train
