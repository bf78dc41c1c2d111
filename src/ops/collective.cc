#include "ops/collective.h"

namespace strata::ops {
namespace {
thread_local const AllReduceSumFn* current_all_reduce_sum = nullptr;
}  // namespace

Status AllReduceSum(float* data, int64_t n, std::string_view what) {
  if (current_all_reduce_sum == nullptr || !*current_all_reduce_sum) return Status::OK();
  return (*current_all_reduce_sum)(data, n, what);
}

bool HasAllReduceSum() { return current_all_reduce_sum != nullptr && *current_all_reduce_sum; }

ScopedAllReduceSum::ScopedAllReduceSum(const AllReduceSumFn* fn) : previous_(current_all_reduce_sum) {
  current_all_reduce_sum = fn;
}
ScopedAllReduceSum::~ScopedAllReduceSum() { current_all_reduce_sum = previous_; }

}  // namespace strata::ops
