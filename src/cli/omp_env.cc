// How long the strata CLI's idle OpenMP workers poll before they sleep (docs/engine.md, "Threads").
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its ELF constructor, before main runs. With neither
// set, an idle worker polls 300,000 times (one `pause` instruction each) before it sleeps on a futex: about 7.5 ms
// on the 2-core development VM when it is idle, several times that when it is not. On a machine whose cores are
// shared, the polling worker holds a core that its team-mate or another process needs, and every parallel region
// then waits for both threads to be scheduled: 2-thread training steps there took 3-20x longer than 1-thread ones
// (BENCHMARKS.md, "Training steps and libgomp's idle polling"). 3000 polls (about 75 us idle) measured as fast as
// libgomp's default on the idle machine and several times faster than it on the loaded one.
//
// Setting the variable from the program is too late for libgomp's constructor, and earlier is not possible either:
// a DT_PREINIT_ARRAY function runs before it, but libc's own initialisation, which runs after the pre-initialisers,
// resets the environment to the one the process started with. So the executable defines getenv: libgomp's call
// binds to this definition (an executable's symbols come first in the dynamic linker's search), which answers
// exactly as glibc's does, except that GOMP_SPINCOUNT reads as kDefaultOmpSpinCount while neither it nor
// OMP_WAIT_POLICY is set. The environment itself is not changed, so processes strata starts see the one it got.
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace strata::cli {
namespace {

// Polls before an idle worker sleeps (300 cost 8-15% idle; 10000 kept all of the loaded slowdown).
constexpr char kDefaultOmpSpinCount[] = "3000";

// The value of `name` in the environment, as glibc's getenv finds it, or nullptr.
char* FindInEnvironment(const char* name) {
  if (environ == nullptr) return nullptr;
  const size_t n = std::strlen(name);
  if (n == 0 || std::strchr(name, '=') != nullptr) return nullptr;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

}  // namespace
}  // namespace strata::cli

// Only the `strata` executable defines this (src/cli/omp_env.cc is linked into it alone).
extern "C" char* getenv(const char* name) noexcept {
  using strata::cli::FindInEnvironment;
  char* value = FindInEnvironment(name);
  if (value != nullptr || std::strcmp(name, "GOMP_SPINCOUNT") != 0) return value;
  if (FindInEnvironment("OMP_WAIT_POLICY") != nullptr) return nullptr;
  return const_cast<char*>(strata::cli::kDefaultOmpSpinCount);
}
