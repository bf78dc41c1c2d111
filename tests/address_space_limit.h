// For tests of what happens when memory runs out: runs `body` in a child process whose address space (RLIMIT_AS) is
// limited to what it already uses plus `headroom` bytes, and returns the child's exit status (the body's return
// value), or -signal when it died of a signal, or 3 when the limit could not be set. The body runs in a child so
// the limit never touches the test process; it must not return into gtest (its value is passed to _exit).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

namespace strata::testing {

inline int RunWithAddressSpaceHeadroom(size_t headroom, const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    size_t vm_kb = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoul(line.substr(7));
    const rlim_t limit = static_cast<rlim_t>((vm_kb << 10) + headroom);
    struct rlimit lim = {limit, limit};
    if (vm_kb == 0 || setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    int code = 4;
    try {
      code = body();
    } catch (...) {  // an exception out of the body: in a server, std::terminate
    }
    _exit(code);
  }
  int wstatus = 0;
  if (waitpid(pid, &wstatus, 0) != pid) return -1000;
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -WTERMSIG(wstatus);
}

}  // namespace strata::testing
