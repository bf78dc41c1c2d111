#include "load_gen.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "http_client.h"

namespace strata::serve::bench {

using Clock = std::chrono::steady_clock;

LoadResult RunClosedLoop(int callers, std::chrono::milliseconds warmup, std::chrono::milliseconds duration,
                         int64_t max_requests, const std::atomic<bool>* stop,
                         const std::function<RequestFn(int caller)>& make_caller) {
  std::mutex mu;
  std::vector<double> latencies;
  LoadResult result;
  std::atomic<int64_t> issued{0};
  const auto start = Clock::now();
  const auto measure_from = start + warmup;
  const auto end = measure_from + duration;
  auto worker = [&](int caller) {
    const RequestFn request = make_caller(caller);
    std::vector<double> mine;
    int64_t ok = 0, failed = 0;
    std::vector<std::string> errors;
    while (true) {
      const auto t0 = Clock::now();
      if (t0 >= end || (stop && stop->load())) break;
      if (max_requests > 0 && issued.fetch_add(1) >= max_requests) break;
      std::optional<std::string> error = request();
      const auto t1 = Clock::now();
      if (t0 < measure_from) continue;
      mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (!error) {
        ++ok;
      } else {
        ++failed;
        if (errors.size() < 5) errors.push_back(std::move(*error));
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
    result.ok += ok;
    result.failed += failed;
    for (auto& e : errors)
      if (result.errors.size() < 10) result.errors.push_back(std::move(e));
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < callers; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  const auto finished = Clock::now();
  result.seconds = finished < measure_from ? 0 : std::chrono::duration<double>(finished - measure_from).count();
  result.requests = static_cast<int64_t>(latencies.size());
  SummarizeLatencies(latencies, result);
  return result;
}

LoadResult RunLoad(const LoadOptions& options, const std::atomic<bool>* stop) {
  return RunClosedLoop(options.connections, options.warmup, options.duration, options.max_requests, stop,
                       [&options](int) -> RequestFn {
                         auto client = std::make_shared<HttpClient>(options.host, options.port);
                         client->set_retry_stale(false);
                         return [client, &options]() -> std::optional<std::string> {
                           auto r = client->Request(options.method, options.target, options.body);
                           if (!r.ok()) return r.status().message();
                           const bool good = options.check ? options.check(r->status, r->body) : r->status == 200;
                           if (good) return std::nullopt;
                           return "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
                         };
                       });
}

void SummarizeLatencies(std::vector<double>& latencies, LoadResult& result) {
  if (result.seconds > 0) result.requests_per_second = static_cast<double>(result.requests) / result.seconds;
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    auto pct = [&](double p) {
      return latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * static_cast<double>(latencies.size())))];
    };
    result.p50_ms = pct(0.50);
    result.p90_ms = pct(0.90);
    result.p99_ms = pct(0.99);
    result.max_ms = latencies.back();
    result.mean_ms = std::accumulate(latencies.begin(), latencies.end(), 0.0) / static_cast<double>(latencies.size());
  }
}

}  // namespace strata::serve::bench
