// Intra-op parallelism. strata uses one runtime for it, OpenMP, the same one Debian's oneDNN uses, so our kernels
// and oneDNN's share one pool of threads and never oversubscribe the cores.
#pragma once

#include <cstdint>
#include <functional>

namespace strata {

// Sets the number of intra-op threads for this process (<= 0: one per core). Logged by the CLI at start.
void SetIntraOpThreads(int n);
int IntraOpThreads();

// Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items, in parallel when that pays off.
// Called from inside a parallel region it runs serially.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace strata
