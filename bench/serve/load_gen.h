// A closed-loop HTTP load generator: N keep-alive connections, each sending the next request as soon as the
// previous answer arrived. Reports requests/s and latency percentiles. Used by `strata_serve_load` (BENCHMARKS.md)
// and by the hot-reload-under-load test.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace strata::serve::bench {

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string method = "POST";
  std::string target;
  std::string body;
  int connections = 32;
  std::chrono::milliseconds duration{5000};  // stop after this long ...
  int64_t max_requests = 0;                  // ... or after this many requests in total (0 = no limit)
  std::chrono::milliseconds warmup{0};       // requests in the first `warmup` are not counted
  // Decides whether a response is a success (default: status 200).
  std::function<bool(int status, const std::string& body)> check;
};

struct LoadResult {
  int64_t requests = 0;  // counted requests (after warmup)
  int64_t ok = 0;
  int64_t failed = 0;  // transport errors and responses the check rejected
  double seconds = 0;
  double requests_per_second = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
  std::vector<std::string> errors;  // the first few failures, for messages
};

// Runs until the duration passes, max_requests are done, or `*stop` becomes true.
LoadResult RunLoad(const LoadOptions& options, const std::atomic<bool>* stop = nullptr);

// One caller's next request, sent and answered: nullopt when it succeeded, else what went wrong (the first few
// failures are kept for messages).
using RequestFn = std::function<std::optional<std::string>()>;
// The closed loop under RunLoad and RunGrpcLoad: `callers` threads, each with the RequestFn that make_caller(i)
// returns (called on that thread), send requests back to back until `warmup` + `duration` pass, `max_requests`
// (> 0) are issued, or `*stop` becomes true; requests that start during the warm-up are not counted.
LoadResult RunClosedLoop(int callers, std::chrono::milliseconds warmup, std::chrono::milliseconds duration,
                         int64_t max_requests, const std::atomic<bool>* stop,
                         const std::function<RequestFn(int caller)>& make_caller);

// Fills requests_per_second (from requests and seconds) and the latency figures; sorts `latencies` (ms).
void SummarizeLatencies(std::vector<double>& latencies, LoadResult& result);

}  // namespace strata::serve::bench
