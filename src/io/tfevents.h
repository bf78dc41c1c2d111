// TensorBoard event files (specs/tf-formats.md §3): TFRecord-framed (never compressed) tensorflow.Event protos.
// One EventFileWriter writes one new file
//   <dir>/events.out.tfevents.<%010d secs>.<host>.<pid>.<n>.v2
// (n counts the writers of this process, so a restarted or second writer never appends to an old file) whose first
// record is Event{wall_time, file_version="brain.Event:2", source_metadata.writer}, flushed at once. Later records:
// scalars as Summary.Value.simple_value (TF1 form, which TensorBoard's Python loader and RustBoard both read),
// histograms as HistogramProto with TF's default bucket limits, text as a DT_STRING tensor with plugin "text", and
// the op graph as Event.graph_def. Steps are the caller's: keep them increasing per tag (§3.7).
//
// Buffered: records are flushed to the operating system when `flush_secs` have passed since the last flush (checked
// at each write), on Flush() and on Close().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata::io {

class TfRecordWriter;

// A NodeDef attribute for WriteGraph (the AttrValue kinds strata uses).
struct GraphAttr {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kDtype, kShapes };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  int dtype = 0;  // tensorflow.DataType number (DT_FLOAT 1, DT_DOUBLE 2, DT_INT32 3, DT_INT64 9, DT_BOOL 10...)
  // list(shape): one entry per output; -1 = unknown dimension; nullopt-like unknown rank = `unknown_rank` true.
  std::vector<std::vector<int64_t>> shapes;
  std::vector<bool> unknown_rank;
};

// A GraphDef node: inputs are "node", "node:k" (output k of node) or "^node".
struct GraphNode {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;
  std::string device;
  std::vector<std::pair<std::string, GraphAttr>> attrs;
};

// TF's default histogram bucket limits (TF's histogram.cc): -DBL_MAX, the negated limits, 0, then 1e-12 growing by
// a factor 1.1 while below 1e20, then DBL_MAX (1551 limits in all).
const std::vector<double>& DefaultHistogramLimits();

struct EventFileWriterOptions {
  double flush_secs = 120;  // TF2's default flush_millis = 120000
  std::string filename_suffix = ".v2";
};

class EventFileWriter {
 public:
  // Creates `dir` if needed and a new event file in it; writes and flushes the file_version event.
  static StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir,
                                                           const EventFileWriterOptions& options = {});
  ~EventFileWriter();  // closes (errors are logged)

  Status WriteScalar(const std::string& tag, int64_t step, double value);
  // Histogram of `values` with TF's default limits (NaNs are left out, and counted in no bucket).
  Status WriteHistogram(const std::string& tag, int64_t step, const float* values, size_t n);
  Status WriteHistogram(const std::string& tag, int64_t step, const std::vector<double>& values);
  // Text rendered as Markdown by TensorBoard's text plugin (tensor DT_STRING rank 0, plugin "text").
  Status WriteText(const std::string& tag, int64_t step, const std::string& text);
  // The op graph (Event.graph_def); `producer` goes to GraphDef.versions.producer.
  Status WriteGraph(const std::vector<GraphNode>& nodes, int64_t step = 0, int producer = 0);

  Status Flush();
  Status Close();

  const std::string& path() const { return path_; }
  int64_t events_written() const { return events_; }

 private:
  EventFileWriter() = default;
  Status WriteEvent(const std::string& serialized_event);

  std::string path_;
  EventFileWriterOptions options_;
  std::unique_ptr<TfRecordWriter> out_;
  double last_flush_ = 0;
  int64_t events_ = 0;
};

// Wall-clock seconds since the Unix epoch (microsecond resolution), as TF's Event.wall_time.
double WallTimeSeconds();

}  // namespace strata::io
