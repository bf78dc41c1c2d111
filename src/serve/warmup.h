// Warmup: replays <version dir>/assets.extra/tf_serving_warmup_requests (a TFRecord file of PredictionLog records)
// against a version while it is LOADING, as TF Serving does (specs/tf-serving.md §3.6), and logs how many records
// ran.
#pragma once

#include "serve/core/servable.h"

namespace strata::serve {

class ServingMetrics;

inline constexpr char kWarmupFile[] = "assets.extra/tf_serving_warmup_requests";
inline constexpr int kMaxWarmupRecords = 1000;

struct WarmupOptions {
  bool enabled = true;
  int iterations = 0;  // --num_request_iterations_for_warmup; <= 0 means 1
};

// Runs the warmup records; any failure fails the load (the error says which record and why). A missing file is
// fine. `metrics` may be null.
Status RunWarmup(const Servable& servable, const WarmupOptions& options, ServingMetrics* metrics);

}  // namespace strata::serve
