#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace strata {
namespace {

// OpenMP keeps the thread count per thread (omp_set_num_threads sets the calling thread's nthreads-var; a thread
// started later by std::thread begins with OMP_NUM_THREADS or the core count). So the process-wide setting lives
// here, and each thread adopts it the next time it runs model work (ApplyIntraOpThreads).
std::atomic<int> g_threads{0};        // 0 = never set: leave OpenMP's default alone
std::atomic<uint64_t> g_generation{0};  // bumped by every SetIntraOpThreads
thread_local uint64_t t_generation = 0;

}  // namespace

void SetIntraOpThreads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  g_threads.store(n);
  t_generation = g_generation.fetch_add(1) + 1;
  omp_set_num_threads(n);
}

void ApplyIntraOpThreads() {
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (generation == t_generation) return;
  t_generation = generation;
  omp_set_num_threads(g_threads.load());
}

int IntraOpThreads() {
  ApplyIntraOpThreads();
  return omp_get_max_threads();
}

void ParallelFor(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  ApplyIntraOpThreads();
  grain = std::max<int64_t>(grain, 1);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    fn(begin, end);
  }
}

}  // namespace strata
