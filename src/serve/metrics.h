// Prometheus metrics with TF Serving's names (":tensorflow:serving:request_count", ...) and a few strata additions
// under ":strata:serving:". Text exposition as TF Serving writes it: "# TYPE" lines only, histograms as cumulative
// _bucket/_sum/_count, last bucket le="+Inf".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::serve {

// The model_name label of failed requests for models that are not configured (see ServingMetrics::CountRequest).
inline constexpr std::string_view kUnknownModelLabel = "<unknown>";

// A label value as the Prometheus text format allows it: bytes that are not UTF-8 and control characters other than
// newline become U+FFFD (a newline is escaped when the page is written, with backslash and double quote).
std::string SafeLabelValue(std::string_view v);
// SafeLabelValue with backslash, double quote and newline escaped (the text between the quotes of name="...").
std::string EscapeLabelValue(std::string_view v);

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string type, std::vector<std::string> labels)
      : name_(std::move(name)), type_(std::move(type)), labels_(std::move(labels)) {}
  virtual ~MetricFamily() = default;
  const std::string& name() const { return name_; }
  virtual void Expose(std::string* out) const = 0;

 protected:
  // 'name{l1="v1",l2="v2"}' with label values escaped; `extra` is appended inside the braces (le="...").
  std::string Series(const std::string& suffix, const std::vector<std::string>& values, const std::string& extra) const;
  static std::string Key(const std::vector<std::string>& values);
  static std::vector<std::string> Unkey(const std::string& key);
  std::string name_, type_;
  std::vector<std::string> labels_;
  mutable std::mutex mu_;
};

class Counter final : public MetricFamily {
 public:
  Counter(std::string name, std::vector<std::string> labels) : MetricFamily(std::move(name), "counter", std::move(labels)) {}
  void Add(const std::vector<std::string>& values, int64_t delta = 1);
  int64_t Get(const std::vector<std::string>& values) const;
  int64_t Total() const;  // sum over every label set
  void Expose(std::string* out) const override;

 private:
  std::map<std::string, int64_t> cells_;
};

class Gauge final : public MetricFamily {
 public:
  Gauge(std::string name, std::vector<std::string> labels) : MetricFamily(std::move(name), "gauge", std::move(labels)) {}
  void Set(const std::vector<std::string>& values, double v);
  // Replaces every series at once (for gauges recomputed at scrape time).
  void Reset(std::map<std::vector<std::string>, double> values);
  void Expose(std::string* out) const override;

 private:
  std::map<std::string, double> cells_;
};

class Histogram final : public MetricFamily {
 public:
  Histogram(std::string name, std::vector<std::string> labels, std::vector<double> bounds)
      : MetricFamily(std::move(name), "histogram", std::move(labels)), bounds_(std::move(bounds)) {}
  void Observe(const std::vector<std::string>& values, double v);
  // Count and sum of one series (tests).
  int64_t Count(const std::vector<std::string>& values) const;
  double Sum(const std::vector<std::string>& values) const;
  void Expose(std::string* out) const override;
  // scale * growth^i for i in [0, n).
  static std::vector<double> Exponential(double scale, double growth, int n);

 private:
  struct Cell {
    std::vector<int64_t> counts;  // per bucket, non-cumulative; last = +Inf
    double sum = 0;
    int64_t count = 0;
  };
  std::vector<double> bounds_;
  std::map<std::string, Cell> cells_;
};

// Every metric the server exports. One instance per server.
class ServingMetrics {
 public:
  ServingMetrics();
  // The counter with this Prometheus name (":tensorflow:serving:request_count"), or null.
  Counter* FindCounter(const std::string& name);
  // The Prometheus text body; runs the scrape-time collectors first.
  std::string Expose();
  // Called at scrape time to refresh gauges (RSS, per-model memory, states).
  void AddCollector(std::function<void(ServingMetrics&)> fn);
  // Tells which model names are configured. Call before serving; without it every name counts as known.
  void SetKnownModelFilter(std::function<bool(const std::string&)> is_known);
  // Counts one REST or gRPC request in request_count and, when it succeeded, its latency in request_latency. A
  // failed request for a model that is not configured is counted under model_name="<unknown>"
  // (kUnknownModelLabel), so that names made up by clients cannot grow the page; "" (no model) stays "".
  void CountRequest(const std::string& model, const Status& status, std::string_view api, std::string_view entrypoint,
                    std::chrono::steady_clock::time_point start);
  // The model_name label CountRequest uses.
  std::string ModelLabel(const std::string& model, bool ok) const;

  // TF Serving's names.
  Counter request_count{":tensorflow:serving:request_count", {"model_name", "status"}};
  Histogram request_latency{":tensorflow:serving:request_latency", {"model_name", "API", "entrypoint"},
                            Histogram::Exponential(10, 1.8, 33)};
  Histogram runtime_latency{":tensorflow:serving:runtime_latency", {"model_name", "API", "runtime"},
                            Histogram::Exponential(10, 1.8, 33)};
  Histogram request_example_counts{":tensorflow:serving:request_example_counts", {"model"},
                                   Histogram::Exponential(1, 2, 15)};
  Counter request_example_count_total{":tensorflow:serving:request_example_count_total", {"model"}};
  Histogram model_warmup_latency{":tensorflow:serving:model_warmup_latency", {"model_path", "status"},
                                 Histogram::Exponential(10, 1.8, 33)};
  Counter model_warmup_records_read{":tensorflow:serving:model_warmup_records_read", {"model_path", "status"}};
  Histogram queuing_latency{":tensorflow:serving:batching_session:queuing_latency", {"thread_pool_name"},
                            Histogram::Exponential(100, 1.2, 52)};
  Counter wrapped_run_count{":tensorflow:serving:batching_session:wrapped_run_count", {}};
  Histogram input_batch_size{":tensorflow:serving:batching_session:input_batch_size", {},
                             Histogram::Exponential(1, 2, 14)};
  Histogram processed_batch_size{":tensorflow:serving:batching_session:processed_batch_size", {},
                                 Histogram::Exponential(1, 2, 14)};
  Histogram padding_size{":tensorflow:serving:batching_session:padding_size", {"execution_batch_size"},
                         Histogram::Exponential(1, 2, 14)};
  Counter load_attempt_count{":tensorflow:cc:saved_model:load_attempt_count", {"model_path", "status"}};
  Counter load_latency{":tensorflow:cc:saved_model:load_latency", {"model_path"}};
  Histogram load_latency_by_stage{":tensorflow:cc:saved_model:load_latency_by_stage", {"model_path", "stage"},
                                  Histogram::Exponential(10, 1.8, 33)};
  // strata additions (new names, so TF Serving dashboards are unaffected).
  Gauge process_rss_bytes{":strata:serving:process_resident_memory_bytes", {}};
  Gauge model_memory_bytes{":strata:serving:model_memory_bytes", {"model_name", "version"}};
  Gauge plan_cache_misses{":strata:serving:plan_cache_misses", {"model_name", "version"}};
  Gauge plan_cache_evictions{":strata:serving:plan_cache_evictions", {"model_name", "version"}};
  Gauge plan_cache_bytes{":strata:serving:plan_cache_bytes", {"model_name", "version"}};
  Gauge model_version_state{":strata:serving:model_version_state", {"model_name", "version", "state"}};
  Gauge batch_queue_tasks{":strata:serving:batch_queue_tasks", {}};
  Gauge rest_body_bytes_in_flight{":strata:serving:rest_request_body_bytes_in_flight", {}};

 private:
  std::vector<MetricFamily*> families_;
  std::mutex collectors_mu_;
  std::vector<std::function<void(ServingMetrics&)>> collectors_;
  std::function<bool(const std::string&)> is_known_model_;
};

// Resident set size of this process in bytes (from /proc/self/statm), 0 when unknown.
int64_t ProcessRssBytes();

}  // namespace strata::serve
