// The Keras improvement rule shared by EarlyStopping, ReduceLROnPlateau and ModelCheckpoint, and peak RSS.
#include <sys/resource.h>

#include "strata/train.h"
#include "train/callback_util.h"

namespace strata::train {

namespace {
bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

StatusOr<Monitor> MakeMonitor(const std::string& monitor, const std::string& mode, double min_delta,
                              const std::string& rule) {
  Monitor m;
  m.min_delta = std::abs(min_delta);
  if (mode == "min") {
    m.higher_is_better = false;
  } else if (mode == "max") {
    m.higher_is_better = true;
  } else if (mode == "auto") {
    if (rule == "early_stopping")
      m.higher_is_better = EndsWith(monitor, "acc") || EndsWith(monitor, "accuracy") || EndsWith(monitor, "auc");
    else if (rule == "model_checkpoint")
      m.higher_is_better = monitor.find("acc") != std::string::npos || monitor.rfind("fmeasure", 0) == 0;
    else
      m.higher_is_better = monitor.find("acc") != std::string::npos;
  } else {
    return InvalidArgumentError("mode must be 'auto', 'min' or 'max', got '", mode, "'");
  }
  return m;
}

int64_t PeakRssBytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace strata::train
