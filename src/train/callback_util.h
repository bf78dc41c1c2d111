// Helpers shared by the callbacks (src/train/callbacks/) and the checkpoint manager; private to the train library.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "strata/train.h"

namespace strata::train {

// Python str.format of a ModelCheckpoint template: {key} and {key:spec} with spec [[fill]align][sign][0][width]
// [.precision][type] for types d, f, e, g, % and none; {{ and }} are braces. Integers in `ints` (epoch, batch),
// doubles in `values`.
StatusOr<std::string> FormatCheckpointPath(const std::string& pattern, const std::map<std::string, int64_t>& ints,
                                           const Logs& values);

// Shared by the callbacks: the Keras improvement rule (specs/tf-formats.md §5.2).
struct Monitor {
  bool higher_is_better = false;
  double min_delta = 0;
  bool Improved(double current, double best) const {
    return higher_is_better ? current > best + min_delta : current < best - min_delta;
  }
};
// mode "min"/"max"/"auto"; `rule` is "early_stopping" (auto: ends with acc/accuracy/auc -> max), "contains_acc"
// (auto: "acc" anywhere -> max; ReduceLROnPlateau) or "model_checkpoint" (also max when it starts with fmeasure).
StatusOr<Monitor> MakeMonitor(const std::string& monitor, const std::string& mode, double min_delta,
                              const std::string& rule);

// Peak resident set size of this process in bytes (getrusage), for the memory watchdog.
int64_t PeakRssBytes();

}  // namespace strata::train
