// Leveled logging to stderr, one line per message, in one of two formats:
//   text: "2026-12-03 13:46:01.123 I strata: message key=value ..."   (local time)
//   json: {"time":"2026-12-03T13:46:01.123Z","level":"INFO","logger":"strata","msg":"message","key":"value",...}
// (UTC, one object per line, for log collectors: Loki, Cloud Logging, Elasticsearch).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogMessage(LogLevel level, std::string_view message);

enum class LogFormat { kText = 0, kJson = 1 };
void SetLogFormat(LogFormat format);
LogFormat GetLogFormat();
// "text" or "json"; InvalidArgument naming both otherwise.
StatusOr<LogFormat> ParseLogFormat(std::string_view name);

// A named value on a structured log line; `number` writes it unquoted in JSON (it must then be a JSON number).
struct LogField {
  std::string_view key;
  std::string value;
  bool number = false;
};
// One line with fields besides the message (an access log line: request_id, method, path, status, ...).
void LogFields(LogLevel level, std::string_view message, const std::vector<LogField>& fields);

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
