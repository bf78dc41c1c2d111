// TensorBoard event-file writer (see tfevents.h; specs/tf-formats.md §3).
#include "io/tfevents.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/file_util.h"
#include "core/logging.h"
#include "io/tfrecord.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tensorflow/core/framework/summary.pb.h"
#include "tensorflow/core/util/event.pb.h"

namespace strata::io {
namespace {

constexpr char kFileVersion[] = "brain.Event:2";
constexpr char kWriterName[] = "strata.io.tfevents";

std::atomic<int64_t> g_file_counter{0};

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

void FillShape(const std::vector<int64_t>& dims, bool unknown_rank, tensorflow::TensorShapeProto* shape) {
  if (unknown_rank) {
    shape->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims) shape->add_dim()->set_size(d);
}

void FillAttr(const GraphAttr& a, tensorflow::AttrValue* v) {
  using K = GraphAttr::Kind;
  switch (a.kind) {
    case K::kInt:
      v->set_i(a.i);
      break;
    case K::kFloat:
      v->set_f(a.f);
      break;
    case K::kString:
      v->set_s(a.s);
      break;
    case K::kDtype:
      v->set_type(static_cast<tensorflow::DataType>(a.dtype));
      break;
    case K::kInts: {
      auto* l = v->mutable_list();
      for (int64_t x : a.ints) l->add_i(x);
      break;
    }
    case K::kFloats: {
      auto* l = v->mutable_list();
      for (float x : a.floats) l->add_f(x);
      break;
    }
    case K::kStrings: {
      auto* l = v->mutable_list();
      for (const std::string& x : a.strings) l->add_s(x);
      break;
    }
    case K::kShapes: {
      auto* l = v->mutable_list();
      for (size_t k = 0; k < a.shapes.size(); ++k)
        FillShape(a.shapes[k], k < a.unknown_rank.size() && a.unknown_rank[k], l->add_shape());
      break;
    }
  }
}

std::vector<double> MakeDefaultLimits() {
  std::vector<double> pos;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
  pos.push_back(DBL_MAX);
  std::vector<double> all;
  all.reserve(2 * pos.size() + 1);
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
  all.push_back(0.0);
  all.insert(all.end(), pos.begin(), pos.end());
  return all;
}

// TF's Histogram::Add + EncodeToProto(preserve_zero_buckets=false): bucket b = upper_bound(limits, x) counts
// [limits[b-1], limits[b]); runs of empty buckets collapse into one entry whose limit is the run's last.
template <typename T>
void FillHistogram(const T* values, size_t n, tensorflow::HistogramProto* h) {
  const std::vector<double>& limits = DefaultHistogramLimits();
  std::vector<double> counts(limits.size(), 0.0);
  double lo = DBL_MAX, hi = -DBL_MAX, num = 0, sum = 0, sum_sq = 0;
  for (size_t k = 0; k < n; ++k) {
    const double x = static_cast<double>(values[k]);
    if (std::isnan(x)) continue;
    size_t b = std::upper_bound(limits.begin(), limits.end(), x) - limits.begin();
    b = std::min(b, limits.size() - 1);  // +inf and DBL_MAX itself: TF would index past the end
    counts[b] += 1.0;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    num += 1;
    sum += x;
    sum_sq += x * x;
  }
  h->set_min(lo);
  h->set_max(hi);
  h->set_num(num);
  h->set_sum(sum);
  h->set_sum_squares(sum_sq);
  for (size_t i = 0; i < counts.size();) {
    double end = limits[i];
    double count = counts[i];
    ++i;
    if (count <= 0.0) {
      while (i < counts.size() && counts[i] <= 0.0) end = limits[i++];
    }
    h->add_bucket_limit(end);
    h->add_bucket(count);
  }
}

}  // namespace

const std::vector<double>& DefaultHistogramLimits() {
  static const std::vector<double>* limits = new std::vector<double>(MakeDefaultLimits());
  return *limits;
}

double WallTimeSeconds() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(now).count() / 1e6;
}

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir,
                                                                   const EventFileWriterOptions& options) {
  if (dir.empty()) return InvalidArgumentError("EventFileWriter: the log directory is empty");
  Status made = MakeDirs(dir);
  if (!made.ok()) return made.WithContext(StrCat("creating TensorBoard log directory '", dir, "'"));
  const double now = WallTimeSeconds();
  const std::string host = HostName();
  std::string path;
  for (;;) {  // a fresh name: never append to (or truncate) a file another writer made
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%010lld", static_cast<long long>(now));
    path = JoinPath(dir, StrCat("events.out.tfevents.", secs, ".", host, ".", static_cast<int64_t>(getpid()), ".",
                                g_file_counter.fetch_add(1), options.filename_suffix));
    if (!FileExists(path)) break;
  }
  auto w = std::unique_ptr<EventFileWriter>(new EventFileWriter());
  w->path_ = path;
  w->options_ = options;
  auto out = TfRecordWriter::Open(path);
  if (!out.ok()) return std::move(out).status().WithContext("creating TensorBoard event file");
  w->out_ = std::move(*out);
  tensorflow::Event e;
  e.set_wall_time(std::floor(now));  // TF's C++ writer: integer seconds in the file_version event
  e.set_file_version(kFileVersion);
  e.mutable_source_metadata()->set_writer(kWriterName);
  STRATA_RETURN_IF_ERROR(w->WriteEvent(e.SerializeAsString()));
  STRATA_RETURN_IF_ERROR(w->Flush());
  return w;
}

EventFileWriter::~EventFileWriter() {
  Status s = Close();
  if (!s.ok()) LogError("closing TensorBoard event file '", path_, "': ", s.message());
}

Status EventFileWriter::WriteEvent(const std::string& serialized_event) {
  if (!out_) return FailedPreconditionError("event file '", path_, "' written after Close");
  Status s = out_->Write(serialized_event);
  if (!s.ok()) return s.WithContext(StrCat("writing event file '", path_, "'"));
  ++events_;
  if (WallTimeSeconds() - last_flush_ >= options_.flush_secs) return Flush();
  return Status::OK();
}

Status EventFileWriter::WriteScalar(const std::string& tag, int64_t step, double value) {
  tensorflow::Event e;
  e.set_wall_time(WallTimeSeconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return WriteEvent(e.SerializeAsString());
}

Status EventFileWriter::WriteHistogram(const std::string& tag, int64_t step, const float* values, size_t n) {
  tensorflow::Event e;
  e.set_wall_time(WallTimeSeconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  FillHistogram(values, n, v->mutable_histo());
  return WriteEvent(e.SerializeAsString());
}

Status EventFileWriter::WriteHistogram(const std::string& tag, int64_t step, const std::vector<double>& values) {
  tensorflow::Event e;
  e.set_wall_time(WallTimeSeconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  FillHistogram(values.data(), values.size(), v->mutable_histo());
  return WriteEvent(e.SerializeAsString());
}

Status EventFileWriter::WriteText(const std::string& tag, int64_t step, const std::string& text) {
  tensorflow::Event e;
  e.set_wall_time(WallTimeSeconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_metadata()->set_data_class(tensorflow::DATA_CLASS_TENSOR);
  auto* t = v->mutable_tensor();
  t->set_dtype(tensorflow::DT_STRING);
  t->mutable_tensor_shape();  // rank 0
  t->add_string_val(text);
  return WriteEvent(e.SerializeAsString());
}

Status EventFileWriter::WriteGraph(const std::vector<GraphNode>& nodes, int64_t step, int producer) {
  tensorflow::GraphDef g;
  g.mutable_versions()->set_producer(producer);
  for (const GraphNode& n : nodes) {
    auto* nd = g.add_node();
    nd->set_name(n.name);
    nd->set_op(n.op);
    for (const std::string& in : n.inputs) nd->add_input(in);
    if (!n.device.empty()) nd->set_device(n.device);
    for (const auto& [name, attr] : n.attrs) FillAttr(attr, &(*nd->mutable_attr())[name]);
  }
  tensorflow::Event e;
  e.set_wall_time(WallTimeSeconds());
  e.set_step(step);
  e.set_graph_def(g.SerializeAsString());
  return WriteEvent(e.SerializeAsString());
}

Status EventFileWriter::Flush() {
  if (!out_) return Status::OK();
  last_flush_ = WallTimeSeconds();
  Status s = out_->Flush();
  return s.ok() ? s : s.WithContext(StrCat("flushing event file '", path_, "'"));
}

Status EventFileWriter::Close() {
  if (!out_) return Status::OK();
  Status s = out_->Close();
  out_.reset();
  return s.ok() ? s : s.WithContext(StrCat("closing event file '", path_, "'"));
}

}  // namespace strata::io
