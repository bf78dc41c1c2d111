#include "ops/defs/train/train_util.h"

#include "core/parallel.h"

namespace strata::ops::train_ops {

void ParallelElements(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kGrain = 1 << 14;
  if (n <= kGrain) {
    fn(0, n);
    return;
  }
  ParallelFor(n, kGrain, fn);
}

}  // namespace strata::ops::train_ops
