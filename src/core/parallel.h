// Intra-op parallelism. strata uses one runtime for it, OpenMP, the same one Debian's oneDNN uses, so our kernels
// and oneDNN's share one pool of threads and never oversubscribe the cores.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace strata {

// A non-owning reference to a callable void(int64_t, int64_t): what ParallelFor takes instead of std::function,
// which heap-allocates for lambdas that capture more than two references (every kernel's, once per run). The
// callable must outlive the call it is passed to, as a lambda argument does.
class RangeFn {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT(google-explicit-constructor): lambdas convert implicitly, as to std::function
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, int64_t b, int64_t e) {
          (*static_cast<std::remove_reference_t<F>*>(o))(b, e);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

// Sets the number of intra-op threads for this process (<= 0: one per core). Logged by the CLI at start.
void SetIntraOpThreads(int n);
// The setting, as seen by the calling thread (after ApplyIntraOpThreads).
int IntraOpThreads();
// Makes the calling thread's OpenMP thread count the process setting, if SetIntraOpThreads changed it since this
// thread last looked (OpenMP keeps the count per thread: a server's worker threads would otherwise use one thread
// per core whatever --tensorflow_intra_op_parallelism says). Cheap; Session::Run and ParallelFor call it.
void ApplyIntraOpThreads();

// Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items, in parallel when that pays off.
// Called from inside a parallel region it runs serially.
void ParallelFor(int64_t n, int64_t grain, RangeFn fn);

}  // namespace strata
