// Counts C++ heap allocations (global operator new) in the strata binary, so `strata bench` can show how many a
// steady-state run makes. malloc calls made by C libraries (oneDNN's scratchpads, for instance) are not counted.
#pragma once

#include <cstdint>

namespace strata::cli {
// -1 when this build does not count (sanitizer builds).
int64_t HeapAllocationCount();
}  // namespace strata::cli
