#include "core/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

#include "core/json.h"

namespace strata {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};
std::mutex g_log_mu;

// `s` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD, so that a JSON log line
// stays valid JSON whatever a message quotes (a file name, a request path).
std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t min = 0;
    if (c < 0x80) n = 1;
    else if ((c & 0xE0) == 0xC0) n = 2, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, min = 0x10000;
    bool ok = n > 0 && i + n <= s.size();
    uint32_t cp = n == 1 ? c : (c & (0x7F >> n));
    for (size_t k = 1; ok && k < n; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && n > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += 1;
    }
  }
  return out;
}

// The whole line is built first and written with one fputs under the lock, so lines of concurrent threads never
// interleave.
void Emit(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::fputs(line.c_str(), stderr);
}
}  // namespace

void SetLogFormat(LogFormat format) { g_format.store(static_cast<int>(format)); }
LogFormat GetLogFormat() { return static_cast<LogFormat>(g_format.load()); }

StatusOr<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return InvalidArgumentError("log format must be 'text' or 'json', found '", name, "'");
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogMessage(LogLevel level, std::string_view message) { LogFields(level, message, {}); }

void LogFields(LogLevel level, std::string_view message, const std::vector<LogField>& fields) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  static const char* const kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  const int lv = static_cast<int>(level);
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  char stamp[40];
  std::string line;
  if (GetLogFormat() == LogFormat::kJson) {
    gmtime_r(&secs, &tm);
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    char ms[8];
    std::snprintf(ms, sizeof(ms), ".%03dZ", millis);
    line = StrCat("{\"time\":\"", stamp, ms, "\",\"level\":\"", kNames[lv], "\",\"logger\":\"strata\",\"msg\":");
    AppendJsonString(&line, ValidUtf8(message));
    for (const LogField& f : fields) {
      line.push_back(',');
      AppendJsonString(&line, ValidUtf8(f.key));
      line.push_back(':');
      if (f.number) {
        line += f.value;
      } else {
        AppendJsonString(&line, ValidUtf8(f.value));
      }
    }
    line += "}\n";
  } else {
    localtime_r(&secs, &tm);
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    char head[64];
    std::snprintf(head, sizeof(head), "%s.%03d %c strata: ", stamp, millis, kLetters[lv]);
    line = StrCat(head, message);
    for (const LogField& f : fields) line += StrCat(" ", f.key, "=", f.value);
    line.push_back('\n');
  }
  Emit(line);
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
