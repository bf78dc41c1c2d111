// graph::Profiler: per-node events of Session runs as a Chrome trace (Trace Event Format, JSON object form), written
// plain, gzip-compressed, or in the layout TensorBoard's profile plugin reads (plugins/profile/<run>/<host>.trace.json.gz).
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "core/file_util.h"
#include "core/json.h"
#include "strata/graph.h"

namespace strata::graph {
namespace {

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void AppendNumber(std::string* out, double v) {
  char buf[64];
  // Microseconds with nanosecond resolution; integers (byte counts) print without a fraction.
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v < 9e15 && v > -9e15)
    std::snprintf(buf, sizeof(buf), "%" PRId64, static_cast<int64_t>(v));
  else
    std::snprintf(buf, sizeof(buf), "%.3f", v);
  *out += buf;
}

void AppendEvent(std::string* out, const TraceEvent& e) {
  *out += "{\"name\":";
  AppendJsonString(out, e.name);
  *out += ",\"cat\":";
  AppendJsonString(out, e.cat.empty() ? std::string_view("strata") : std::string_view(e.cat));
  *out += ",\"ph\":\"";
  *out += e.ph;
  *out += "\",\"ts\":";
  AppendNumber(out, e.ts_us);
  if (e.ph == 'X') {
    *out += ",\"dur\":";
    AppendNumber(out, e.dur_us);
  }
  *out += ",\"pid\":1,\"tid\":";
  AppendNumber(out, static_cast<double>(e.tid));
  *out += ",\"args\":{";
  bool first = true;
  for (const auto& [k, v] : e.str_args) {
    if (!first) *out += ",";
    first = false;
    AppendJsonString(out, k);
    *out += ":";
    AppendJsonString(out, v);
  }
  for (const auto& [k, v] : e.num_args) {
    if (!first) *out += ",";
    first = false;
    AppendJsonString(out, k);
    *out += ":";
    AppendNumber(out, v);
  }
  *out += "}}";
}

Status WriteGzipFile(const std::string& path, std::string_view data) {
  const std::string tmp = StrCat(path, ".tmp.", getpid());
  gzFile f = gzopen(tmp.c_str(), "wb6");
  if (f == nullptr) return InternalError("cannot create '", tmp, "' for the trace");
  size_t done = 0;
  while (done < data.size()) {
    const unsigned n = static_cast<unsigned>(std::min<size_t>(data.size() - done, 1u << 30));
    if (gzwrite(f, data.data() + done, n) != static_cast<int>(n)) {
      gzclose(f);
      std::remove(tmp.c_str());
      return InternalError("writing the trace to '", tmp, "' failed");
    }
    done += n;
  }
  if (gzclose(f) != Z_OK) {
    std::remove(tmp.c_str());
    return InternalError("closing the trace file '", tmp, "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return InternalError("cannot rename '", tmp, "' to '", path, "'");
  }
  return Status::OK();
}

}  // namespace

Profiler::Profiler() : origin_ns_(SteadyNanos()) {}

double Profiler::NowMicros() const { return static_cast<double>(SteadyNanos() - origin_ns_) / 1000.0; }

void Profiler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  runs_left_ = -1;
  done_ = nullptr;
  active_.store(true);
}

void Profiler::Stop() { active_.store(false); }

void Profiler::StartForRuns(int64_t runs, std::function<void(Profiler&)> done) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_left_ = std::max<int64_t>(runs, 0);
  done_ = std::move(done);
  active_.store(runs_left_ > 0);
}

bool Profiler::BeginRun() {
  if (!active()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_.load() || runs_left_ == 0) return false;
  if (runs_left_ > 0 && --runs_left_ == 0) active_.store(false);
  ++runs_pending_;
  return true;
}

void Profiler::EndRun(std::vector<TraceEvent> events) {
  std::function<void(Profiler&)> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (TraceEvent& e : events) events_.push_back(std::move(e));
    --runs_pending_;
    if (runs_left_ == 0 && runs_pending_ == 0 && done_) done = std::move(done_);
    if (done) done_ = nullptr;
  }
  if (done) done(*this);
}

void Profiler::Add(std::vector<TraceEvent> events) {
  std::lock_guard<std::mutex> lock(mu_);
  for (TraceEvent& e : events) events_.push_back(std::move(e));
}

std::vector<TraceEvent> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

size_t Profiler::num_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

void Profiler::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

std::string Profiler::ChromeTraceJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"strata\"},\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"strata\"}}";
  for (const TraceEvent& e : events_) {
    out += ",\n";
    AppendEvent(&out, e);
  }
  out += "\n]}\n";
  return out;
}

Status Profiler::WriteChromeTrace(const std::string& path) const {
  const std::string json = ChromeTraceJson();
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) return WriteGzipFile(path, json);
  return WriteFileAtomic(path, json);
}

StatusOr<std::string> Profiler::WriteTensorBoardTrace(const std::string& log_dir, const std::string& run) const {
  std::string run_name = run;
  if (run_name.empty()) {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y_%m_%d_%H_%M_%S", &tm);
    run_name = buf;
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof(host), "localhost");
  const std::string dir = JoinPath(JoinPath(JoinPath(log_dir, "plugins"), "profile"), run_name);
  STRATA_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string path = JoinPath(dir, StrCat(host, ".trace.json.gz"));
  STRATA_RETURN_IF_ERROR(WriteChromeTrace(path));
  return path;
}

}  // namespace strata::graph
