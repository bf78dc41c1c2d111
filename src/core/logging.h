// Minimal leveled logging to stderr: "2026-12-03 13:46:01.123 I strata: message".
#pragma once

#include <string_view>

#include "strata/status.h"

namespace strata {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogMessage(LogLevel level, std::string_view message);

template <typename... Args>
void LogInfo(const Args&... args) {
  if (GetLogLevel() <= LogLevel::kInfo) LogMessage(LogLevel::kInfo, StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  if (GetLogLevel() <= LogLevel::kWarning) LogMessage(LogLevel::kWarning, StrCat(args...));
}
template <typename... Args>
void LogError(const Args&... args) {
  LogMessage(LogLevel::kError, StrCat(args...));
}
template <typename... Args>
void LogDebug(const Args&... args) {
  if (GetLogLevel() <= LogLevel::kDebug) LogMessage(LogLevel::kDebug, StrCat(args...));
}

// True when STRATA_VERBOSE (comma-separated) names `topic`, e.g. STRATA_VERBOSE=dispatch,plan.
bool VerboseEnabled(std::string_view topic);

}  // namespace strata
