// The cross-worker sum that data-parallel ops (strata.SyncBatchNormalization) reduce through. A trainer running the
// graph on several workers installs it for the calling thread (ScopedAllReduceSum) around its Session::Run: kernels
// run on that thread, and every worker runs the same plan, so the workers call it at the same steps in the same
// order. Without one this process is the only worker and the values stay.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "strata/status.h"

namespace strata::ops {

using AllReduceSumFn = std::function<Status(float* data, int64_t n, std::string_view what)>;

// Replaces `n` floats by their sum over the workers (`what` names the caller in errors).
Status AllReduceSum(float* data, int64_t n, std::string_view what);
// Whether a cross-worker sum is installed on this thread.
bool HasAllReduceSum();

class ScopedAllReduceSum {
 public:
  explicit ScopedAllReduceSum(const AllReduceSumFn* fn);
  ~ScopedAllReduceSum();
  ScopedAllReduceSum(const ScopedAllReduceSum&) = delete;
  ScopedAllReduceSum& operator=(const ScopedAllReduceSum&) = delete;

 private:
  const AllReduceSumFn* previous_;
};

}  // namespace strata::ops
