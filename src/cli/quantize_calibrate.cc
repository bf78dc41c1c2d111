// Calibration for `strata quantize`: runs the float32 model on the calibration samples with the activations to
// quantize added as outputs, and reduces what they hold to one range each (min/max, or a percentile of a histogram).
#include "cli/quantize_calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>

#include "cli/model_util.h"
#include "io/npy.h"

namespace strata::cli::quant {
namespace {

constexpr int kBins = 4096;

// Running min/max, then (second pass, percentile method) a histogram over [min, max].
struct Collector {
  float min = INFINITY, max = -INFINITY;
  std::vector<int64_t> hist;

  void AddMinMax(const Tensor& t) {
    for (float v : t.values<float>()) {
      if (std::isnan(v)) continue;
      min = std::min(min, v);
      max = std::max(max, v);
    }
  }
  void AddHistogram(const Tensor& t) {
    if (hist.empty()) hist.assign(kBins, 0);
    const double width = (static_cast<double>(max) - min) / kBins;
    for (float v : t.values<float>()) {
      if (std::isnan(v)) continue;
      int b = width > 0 ? static_cast<int>((v - min) / width) : 0;
      hist[std::clamp(b, 0, kBins - 1)]++;
    }
  }
  // The values below the (100 - p)th and above the pth percentile are clipped.
  Range Percentile(double p) const {
    int64_t total = 0;
    for (int64_t c : hist) total += c;
    const double width = (static_cast<double>(max) - min) / kBins;
    const auto cut = static_cast<int64_t>(std::floor(total * (100.0 - p) / 100.0));
    int lo_bin = 0, hi_bin = kBins - 1;
    for (int64_t seen = 0; lo_bin < kBins - 1 && seen + hist[lo_bin] <= cut; ++lo_bin) seen += hist[lo_bin];
    for (int64_t seen = 0; hi_bin > 0 && seen + hist[hi_bin] <= cut; --hi_bin) seen += hist[hi_bin];
    return Range{static_cast<float>(min + width * lo_bin), static_cast<float>(min + width * (hi_bin + 1))};
  }
};

std::string DescribeDims(const PartialShape& s) { return s.ToString(); }

// Rows [begin, end) of a [N, ...] tensor as a fresh tensor.
Tensor Rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape shape = t.shape();
  shape[0] = end - begin;
  Tensor out = Tensor::Empty(t.dtype(), shape);
  const size_t row_bytes = t.byte_size() / static_cast<size_t>(t.dim(0));
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row_bytes, (end - begin) * row_bytes);
  return out;
}

// Runs the model over all calibration batches; `visit` sees each fetched activation.
template <typename F>
Status ForEachBatch(graph::Session& session, const CalibrationData& data, const std::vector<std::string>& values,
                    int64_t num_samples, int64_t batch, F&& visit) {
  for (int64_t begin = 0; begin < num_samples; begin += batch) {
    const int64_t end = std::min(num_samples, begin + batch);
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const auto& [name, t] : data) feeds.emplace_back(name, Rows(t, begin, end));
    std::vector<Tensor> out;
    Status s = session.Run(feeds, values, &out);
    if (!s.ok()) return s.WithContext("calibration samples " + std::to_string(begin) + "-" + std::to_string(end - 1));
    for (size_t i = 0; i < out.size(); ++i) visit(i, out[i]);
  }
  return Status::OK();
}

}  // namespace

StatusOr<CalibrationData> ReadCalibrationData(const std::vector<std::string>& specs,
                                              const std::vector<graph::ValueInfo>& inputs) {
  if (specs.empty()) return InvalidArgumentError("--calibration: expected FILE.npy or NAME=FILE.npy, got nothing");
  CalibrationData data;
  for (const std::string& spec : specs) {
    std::string name, path = spec;
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    } else if (inputs.size() == 1) {
      name = inputs[0].name;
    } else {
      return InvalidArgumentError("--calibration '", spec, "': the model has ", inputs.size(),
                                  " inputs, so each file must be given as NAME=FILE.npy");
    }
    const auto it =
        std::find_if(inputs.begin(), inputs.end(), [&](const graph::ValueInfo& v) { return v.name == name; });
    if (it == inputs.end())
      return InvalidArgumentError("--calibration '", spec, "': the model has no input '", name, "'");
    STRATA_ASSIGN_OR_RETURN(Tensor t, io::ReadNpy(path));
    const PartialShape& want = it->shape;
    if (t.dtype() != DType::kFloat32 || it->dtype != DType::kFloat32)
      return InvalidArgumentError("calibration data '", path, "' for input '", name, "': expected float32 (input type ",
                                  DTypeName(it->dtype), "), got ", DTypeName(t.dtype()));
    bool ok = want.rank_known && t.rank() == want.rank() && t.rank() >= 1 && t.dim(0) > 0;
    for (int i = 1; ok && i < t.rank(); ++i) ok = !want.dims[i].known() || want.dims[i].value == t.dim(i);
    if (!ok)
      return InvalidArgumentError("calibration data '", path, "' has shape ", t.shape().ToString(),
                                  ", but model input '", name, "' expects ", DescribeDims(want),
                                  " (samples along axis 0, the other dims as declared)");
    data.emplace_back(name, std::move(t));
  }
  for (const graph::ValueInfo& in : inputs) {
    if (std::none_of(data.begin(), data.end(), [&](const auto& kv) { return kv.first == in.name; }))
      return InvalidArgumentError("--calibration: no data for model input '", in.name, "'");
  }
  for (const auto& [name, t] : data)
    if (t.dim(0) != data[0].second.dim(0))
      return InvalidArgumentError("calibration arrays disagree on the sample count: '", data[0].first, "' has ",
                                  data[0].second.dim(0), ", '", name, "' has ", t.dim(0));
  return data;
}

StatusOr<std::map<std::string, Range>> Calibrate(const graph::Model& model, const CalibrationData& data,
                                                 const std::vector<std::string>& values,
                                                 const CalibrationOptions& options) {
  auto calib = std::make_shared<graph::Model>(model);
  std::set<std::string> outputs;
  for (const auto& o : calib->graph.outputs) outputs.insert(o.name);
  for (const std::string& v : values)
    if (outputs.count(v) == 0) calib->graph.outputs.push_back(graph::ValueInfo{v, DType::kFloat32, {}, ""});
  graph::SessionOptions so;
  so.intra_op_threads = options.threads;
  STRATA_ASSIGN_OR_RETURN(auto session, graph::Session::Create(calib, so));
  int64_t n = data[0].second.dim(0);
  if (options.num_samples > 0) n = std::min(n, options.num_samples);
  // A batch dimension fixed by the model decides the batch.
  int64_t batch = options.batch;
  const PartialShape& in0 = session->inputs()[0].shape;
  if (in0.rank_known && in0.rank() >= 1 && in0.dims[0].known()) batch = in0.dims[0].value;
  if (n % batch != 0 && in0.rank_known && in0.rank() >= 1 && in0.dims[0].known()) n -= n % batch;  // whole batches only
  if (n == 0)
    return InvalidArgumentError("calibration data has ", data[0].second.dim(0),
                                " samples, fewer than the model's fixed batch ", batch);

  std::vector<Collector> col(values.size());
  STRATA_RETURN_IF_ERROR(
      ForEachBatch(*session, data, values, n, batch, [&](size_t i, const Tensor& t) { col[i].AddMinMax(t); }));
  if (options.method == CalibrationMethod::kPercentile) {
    STRATA_RETURN_IF_ERROR(
        ForEachBatch(*session, data, values, n, batch, [&](size_t i, const Tensor& t) { col[i].AddHistogram(t); }));
  }
  std::map<std::string, Range> ranges;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(col[i].min <= col[i].max))
      return InvalidArgumentError("calibration saw no finite value of '", values[i], "'");
    Range r = options.method == CalibrationMethod::kPercentile ? col[i].Percentile(options.percentile)
                                                               : Range{col[i].min, col[i].max};
    r.lo = std::min(r.lo, 0.0f);
    r.hi = std::max(r.hi, 0.0f);
    ranges[values[i]] = r;
  }
  return ranges;
}

}  // namespace strata::cli::quant
