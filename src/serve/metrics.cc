#include "serve/metrics.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace strata::serve {

namespace {

constexpr char kSep = '\x1f';

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.12g", v);
  return buf;
}

// The length of the well-formed UTF-8 sequence at s[i], or 0 when the bytes there are not one (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string SafeLabelValue(std::string_view v) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size();) {
    const size_t n = Utf8SequenceLength(v, i);
    if (n == 0 || (n == 1 && static_cast<unsigned char>(v[i]) < 0x20 && v[i] != '\n')) {
      out += kReplacement;
      ++i;
    } else {
      out.append(v.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view v) {
  const std::string safe = SafeLabelValue(v);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string MetricFamily::Key(const std::vector<std::string>& values) {
  std::string k;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) k.push_back(kSep);
    k += SafeLabelValue(values[i]);  // no control characters, so kSep separates values
  }
  return k;
}

std::vector<std::string> MetricFamily::Unkey(const std::string& key) {
  std::vector<std::string> out(1);
  for (char c : key) {
    if (c == kSep)
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

std::string MetricFamily::Series(const std::string& suffix, const std::vector<std::string>& values,
                                 const std::string& extra) const {
  std::string s = name_ + suffix;
  std::vector<std::string> parts;
  for (size_t i = 0; i < labels_.size() && i < values.size(); ++i)
    parts.push_back(labels_[i] + "=\"" + EscapeLabelValue(values[i]) + "\"");
  if (!extra.empty()) parts.push_back(extra);
  if (!parts.empty()) {
    s.push_back('{');
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) s.push_back(',');
      s += parts[i];
    }
    s.push_back('}');
  }
  return s;
}

void Counter::Add(const std::vector<std::string>& values, int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  cells_[Key(values)] += delta;
}

int64_t Counter::Get(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cells_.find(Key(values));
  return it == cells_.end() ? 0 : it->second;
}

int64_t Counter::Total() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (const auto& [key, v] : cells_) total += v;
  return total;
}

void Counter::Expose(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cells_.empty()) return;
  *out += "# TYPE " + name_ + " counter\n";
  for (const auto& [key, v] : cells_) *out += Series("", labels_.empty() ? std::vector<std::string>{} : Unkey(key), "") + " " + std::to_string(v) + "\n";
}

void Gauge::Set(const std::vector<std::string>& values, double v) {
  std::lock_guard<std::mutex> lock(mu_);
  cells_[Key(values)] = v;
}

void Gauge::Reset(std::map<std::vector<std::string>, double> values) {
  std::lock_guard<std::mutex> lock(mu_);
  cells_.clear();
  for (auto& [k, v] : values) cells_[Key(k)] = v;
}

void Gauge::Expose(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cells_.empty()) return;
  *out += "# TYPE " + name_ + " gauge\n";
  for (const auto& [key, v] : cells_)
    *out += Series("", labels_.empty() ? std::vector<std::string>{} : Unkey(key), "") + " " + FormatNumber(v) + "\n";
}

std::vector<double> Histogram::Exponential(double scale, double growth, int n) {
  std::vector<double> b;
  double v = scale;
  for (int i = 0; i < n; ++i) {
    b.push_back(v);
    v *= growth;
  }
  return b;
}

void Histogram::Observe(const std::vector<std::string>& values, double v) {
  std::lock_guard<std::mutex> lock(mu_);
  Cell& c = cells_[Key(values)];
  if (c.counts.empty()) c.counts.assign(bounds_.size() + 1, 0);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++c.counts[i];
  c.sum += v;
  ++c.count;
}

int64_t Histogram::Count(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cells_.find(Key(values));
  return it == cells_.end() ? 0 : it->second.count;
}

double Histogram::Sum(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cells_.find(Key(values));
  return it == cells_.end() ? 0 : it->second.sum;
}

void Histogram::Expose(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cells_.empty()) return;
  *out += "# TYPE " + name_ + " histogram\n";
  for (const auto& [key, c] : cells_) {
    const std::vector<std::string> values = labels_.empty() ? std::vector<std::string>{} : Unkey(key);
    int64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += c.counts[i];
      const std::string le = i < bounds_.size() ? FormatNumber(bounds_[i]) : "+Inf";
      *out += Series("_bucket", values, "le=\"" + le + "\"") + " " + std::to_string(cumulative) + "\n";
    }
    *out += Series("_sum", values, "") + " " + FormatNumber(c.sum) + "\n";
    *out += Series("_count", values, "") + " " + std::to_string(c.count) + "\n";
  }
}

ServingMetrics::ServingMetrics() {
  families_ = {&request_count,       &request_latency,      &runtime_latency,    &request_example_counts,
               &request_example_count_total, &model_warmup_latency, &model_warmup_records_read,
               &queuing_latency,     &wrapped_run_count,    &input_batch_size,   &processed_batch_size,
               &padding_size,        &load_attempt_count,   &load_latency,       &load_latency_by_stage,
               &process_rss_bytes,   &model_memory_bytes,   &plan_cache_misses,  &model_version_state,
               &batch_queue_tasks,   &rest_body_bytes_in_flight, &plan_cache_evictions, &plan_cache_bytes};
}

Counter* ServingMetrics::FindCounter(const std::string& name) {
  for (MetricFamily* f : families_)
    if (f->name() == name) return dynamic_cast<Counter*>(f);
  return nullptr;
}

void ServingMetrics::SetKnownModelFilter(std::function<bool(const std::string&)> is_known) {
  is_known_model_ = std::move(is_known);
}

std::string ServingMetrics::ModelLabel(const std::string& model, bool ok) const {
  if (ok || model.empty() || !is_known_model_ || is_known_model_(model)) return model;
  return std::string(kUnknownModelLabel);
}

void ServingMetrics::CountRequest(const std::string& model, const Status& status, std::string_view api,
                                  std::string_view entrypoint, std::chrono::steady_clock::time_point start) {
  const std::string label = ModelLabel(model, status.ok());
  request_count.Add({label, std::string(StatusCodeName(status.code()))});
  if (status.ok())
    request_latency.Observe(
        {label, std::string(api), std::string(entrypoint)},
        static_cast<double>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count()));
}

void ServingMetrics::AddCollector(std::function<void(ServingMetrics&)> fn) {
  std::lock_guard<std::mutex> lock(collectors_mu_);
  collectors_.push_back(std::move(fn));
}

std::string ServingMetrics::Expose() {
  {
    std::lock_guard<std::mutex> lock(collectors_mu_);
    for (auto& fn : collectors_) fn(*this);
  }
  std::string out;
  for (const MetricFamily* f : families_) f->Expose(&out);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  return out;
}

int64_t ProcessRssBytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace strata::serve
