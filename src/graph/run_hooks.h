// Per-run callbacks for a caller that overlaps its own work with a Session::Run, e.g. a trainer reducing gradients
// across workers while the backward pass goes on. Installed for the calling thread by a ScopedRunHooks: every plan
// run on that thread inside the scope calls them, on that thread, between two steps (nodes) of the plan; a non-OK
// status ends the run with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::graph {

struct RunHooks {
  // Once per fetch, as soon as its value is computed: the fetch's index in Session::Run's `fetches` (graph order
  // when `fetches` is empty) and the value the run will return (fetches that are inputs or constants: before the
  // first step). `value` may live in memory the run reuses after it returns: copy what must outlive the call. After
  // a run the session retries (memory exhausted under memory_limit_bytes: idle plans evicted), it is called again
  // with the same values.
  std::function<Status(size_t fetch, const Tensor& value)> on_fetch_ready;
  // After every step, e.g. to let a communication library progress.
  std::function<Status()> after_step;
  // Fetches the caller takes through on_fetch_ready alone (indexed like the fetches; nonzero = taken): the run
  // returns an empty Tensor in their place, instead of a copy of every such value that lives in memory the run
  // reuses (e.g. a gradient passed through from the arena).
  std::vector<uint8_t> taken_fetches;
};

// The hooks installed on this thread (null when none).
const RunHooks* CurrentRunHooks();

class ScopedRunHooks {
 public:
  explicit ScopedRunHooks(const RunHooks* hooks);
  ~ScopedRunHooks();
  ScopedRunHooks(const ScopedRunHooks&) = delete;
  ScopedRunHooks& operator=(const ScopedRunHooks&) = delete;

 private:
  const RunHooks* previous_;
};

}  // namespace strata::graph
