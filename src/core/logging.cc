#include "core/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace strata {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_log_mu;
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogMessage(LogLevel level, std::string_view message) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::fprintf(stderr, "%s.%03d %c strata: %.*s\n", stamp, millis, kLetters[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

bool VerboseEnabled(std::string_view topic) {
  static const std::string verbose = [] {
    const char* v = std::getenv("STRATA_VERBOSE");
    return std::string(v ? v : "");
  }();
  if (verbose.empty()) return false;
  size_t start = 0;
  while (start <= verbose.size()) {
    size_t end = verbose.find(',', start);
    if (end == std::string::npos) end = verbose.size();
    std::string_view item(verbose.data() + start, end - start);
    if (item == topic || item == "all") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace strata
