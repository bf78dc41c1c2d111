#include "serve/warmup.h"

#include <chrono>

#include "core/file_util.h"
#include "core/logging.h"
#include "io/tfrecord.h"
#include "serve/api/proto_codec.h"
#include "serve/core/predictor.h"
#include "serve/metrics.h"
#include "tensorflow_serving/apis/prediction_log.pb.h"

namespace strata::serve {

namespace {

Status RunPredict(const Servable& servable, const tensorflow::serving::PredictRequest& proto) {
  STRATA_ASSIGN_OR_RETURN(PredictRequest req, PredictRequestFromProto(proto));
  Predictor predictor(nullptr, nullptr, nullptr);
  Status result;
  // Without a batcher PredictWith runs inline; the servable is not shared with anyone yet, so wrap it unowned.
  std::shared_ptr<const Servable> unowned(&servable, [](const Servable*) {});
  predictor.PredictWith(unowned, std::move(req), [&](Status s, PredictResponse) { result = std::move(s); });
  return result;
}

Status RunExamples(const Servable& servable, const tensorflow::serving::ModelSpec& spec,
                   const tensorflow::serving::Input& input, bool classify) {
  STRATA_ASSIGN_OR_RETURN(ExampleInput in, ExampleInputFromProto(input));
  Predictor predictor(nullptr, nullptr, nullptr);
  ModelSpec ms = ModelSpecFromProto(spec);
  if (classify) {
    ClassifyRequest req{ms, std::move(in), NoDeadline()};
    ClassifyResponse resp;
    return predictor.ClassifyWith(servable, req, &resp);
  }
  RegressRequest req{ms, std::move(in), NoDeadline()};
  RegressResponse resp;
  return predictor.RegressWith(servable, req, &resp);
}

[[maybe_unused]] Status RunRecord(const Servable& servable, const tensorflow::serving::PredictionLog& log) {
  using L = tensorflow::serving::PredictionLog;
  switch (log.log_type_case()) {
    case L::kPredictLog:
      return RunPredict(servable, log.predict_log().request());
    case L::kClassifyLog:
      return RunExamples(servable, log.classify_log().request().model_spec(), log.classify_log().request().input(),
                         true);
    case L::kRegressLog:
      return RunExamples(servable, log.regress_log().request().model_spec(), log.regress_log().request().input(),
                         false);
    case L::kMultiInferenceLog: {
      const auto& req = log.multi_inference_log().request();
      for (const auto& task : req.tasks()) {
        const bool classify = task.method_name() == "tensorflow/serving/classify";
        if (!classify && task.method_name() != "tensorflow/serving/regress")
          return UnimplementedError("Unsupported signature method_name in warmup MultiInference task: ",
                                    task.method_name());
        STRATA_RETURN_IF_ERROR(RunExamples(servable, task.model_spec(), req.input(), classify));
      }
      return Status::OK();
    }
    case L::kSessionRunLog:
      return UnimplementedError("Unsupported log_type for warmup: session_run_log");
    case L::kPredictStreamedLog:
      return UnimplementedError("Unsupported log_type for warmup: predict_streamed_log");
    case L::LOG_TYPE_NOT_SET:
      return Status::OK();
  }
  return Status::OK();
}

Status Replay(const Servable& servable, const std::string& path, int iterations, int64_t* records) {
  // Only a regular file: opening a FIFO put here would block the load thread until a writer came.
  if (auto file = RegularFile::Open(path); !file.ok())
    return Status(file.status().code(), StrCat("cannot open warmup file ", path, ": ", file.status().message()));
  auto reader = io::TfRecordReader::Open(path);
  if (!reader.ok())
    return Status(reader.status().code(), StrCat("cannot open warmup file ", path, ": ", reader.status().message()));
  std::string record;
  while (true) {
    auto more = (*reader)->ReadRecord(&record);
    if (!more.ok())
      return DataLossError(more.status().message(), ". Please verify your warmup data is in TFRecord format.");
    if (!*more) break;
    if (++*records > kMaxWarmupRecords)
      return InvalidArgumentError("Number of warmup records exceeds the maximum (", kMaxWarmupRecords, ") at ", path);
    tensorflow::serving::PredictionLog log;
    if (!log.ParseFromString(record))
      return InvalidArgumentError("Failed to parse warmup record ", *records, " of ", path);
    for (int i = 0; i < iterations; ++i) {
      Status s = RunRecord(servable, log);
      if (!s.ok()) return Status(s.code(), StrCat("warmup record ", *records, " of ", path, ": ", s.message()));
    }
  }
  return Status::OK();
}

}  // namespace

Status RunWarmup(const Servable& servable, const WarmupOptions& options, ServingMetrics* metrics) {
  const std::string path = JoinPath(servable.dir(), kWarmupFile);
  if (!options.enabled) return Status::OK();
  if (!FileExists(path)) {
    LogInfo("model ", servable.name(), " version ", servable.version(), ": no warmup data file found at ", path);
    return Status::OK();
  }
  const auto t0 = std::chrono::steady_clock::now();
  int64_t records = 0;
  Status s = Replay(servable, path, std::max(1, options.iterations), &records);
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  if (metrics) {
    const std::string status = s.ok() ? "OK" : std::string(StatusCodeName(s.code()));
    metrics->model_warmup_latency.Observe({servable.dir(), status}, static_cast<double>(us));
    metrics->model_warmup_records_read.Add({servable.dir(), status}, records);
  }
  if (!s.ok()) {
    LogError("model ", servable.name(), " version ", servable.version(), ": warmup failed after ", records,
             " records: ", s.message());
    return s;
  }
  LogInfo("model ", servable.name(), " version ", servable.version(), ": warmup replayed ", records, " record",
          records == 1 ? "" : "s", " from ", path, " (", std::max(1, options.iterations), " iteration",
          options.iterations > 1 ? "s" : "", " each) in ", us / 1000, " ms");
  return Status::OK();
}

}  // namespace strata::serve
