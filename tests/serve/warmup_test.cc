// Warmup: assets.extra/tf_serving_warmup_requests (TFRecord of PredictionLog) is replayed while the version is
// LOADING; bad files fail the load with TF Serving's messages.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/file_util.h"
#include "io/tfrecord.h"
#include "serve/metrics.h"
#include "serve/warmup.h"
#include "serve_test_util.h"
#include "strata/onnx.h"
#include "tensorflow_serving/apis/prediction_log.pb.h"

namespace strata::serve {
namespace {

namespace pb = tensorflow::serving;

pb::PredictionLog HalfPredictLog(float x) {
  pb::PredictionLog log;
  auto* req = log.mutable_predict_log()->mutable_request();
  req->mutable_model_spec()->set_name("ignored-the-record-runs-against-the-loading-version");
  auto& t = (*req->mutable_inputs())["x"];
  t.set_dtype(tensorflow::DT_FLOAT);
  t.mutable_tensor_shape()->add_dim()->set_size(1);
  t.add_float_val(x);
  return log;
}

std::shared_ptr<Servable> LoadHalf(const std::string& dir) {
  std::filesystem::create_directories(dir);
  STRATA_CHECK_OK(onnx::SaveModel(testing::HalfModel(), dir + "/model.onnx"));
  auto s = Servable::Load("half", 1, dir, LoadOptions{});
  STRATA_CHECK_OK(s.status());
  return *s;
}

void WriteWarmup(const std::string& dir, const std::vector<std::string>& records) {
  std::string data;
  for (const auto& r : records) io::AppendTfRecord(&data, r);
  std::filesystem::create_directories(dir + "/assets.extra");
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/" + kWarmupFile, data));
}

TEST(WarmupTest, ReplaysRecordsAndCountsThem) {
  const std::string dir = testing::FreshDir("warmup_ok") + "/1";
  auto servable = LoadHalf(dir);
  pb::PredictionLog empty;  // no log type: skipped
  WriteWarmup(dir, {HalfPredictLog(1).SerializeAsString(), HalfPredictLog(2).SerializeAsString(),
                    empty.SerializeAsString()});
  ServingMetrics metrics;
  ASSERT_TRUE(RunWarmup(*servable, {true, 2}, &metrics).ok());
  EXPECT_EQ(metrics.model_warmup_records_read.Get({dir, "OK"}), 3);
  EXPECT_EQ(metrics.model_warmup_latency.Count({dir, "OK"}), 1);
  EXPECT_EQ(servable->session().stats().runs, 4);  // 2 predict records x 2 iterations
  // Disabled: nothing runs.
  EXPECT_TRUE(RunWarmup(*servable, {false, 0}, nullptr).ok());
  EXPECT_EQ(servable->session().stats().runs, 4);
}

TEST(WarmupTest, BadWarmupFilesFailTheLoad) {
  const std::string dir = testing::FreshDir("warmup_bad") + "/1";
  auto servable = LoadHalf(dir);
  // A missing file is fine.
  EXPECT_TRUE(RunWarmup(*servable, {}, nullptr).ok());
  // Not a TFRecord file.
  std::filesystem::create_directories(dir + "/assets.extra");
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/" + kWarmupFile, "this is not a tfrecord file at all"));
  Status s = RunWarmup(*servable, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("Please verify your warmup data is in TFRecord format."), std::string::npos) << s.ToString();
  // A record that is not a PredictionLog.
  WriteWarmup(dir, {std::string("\xff\xff\xff", 3)});
  s = RunWarmup(*servable, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Failed to parse warmup record"), std::string::npos);
  // session_run_log is not supported.
  pb::PredictionLog session_run;
  session_run.mutable_session_run_log();
  WriteWarmup(dir, {session_run.SerializeAsString()});
  s = RunWarmup(*servable, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  // A request that fails (wrong input name) fails the load and says which record.
  pb::PredictionLog wrong = HalfPredictLog(1);
  auto* inputs = wrong.mutable_predict_log()->mutable_request()->mutable_inputs();
  (*inputs)["y"] = inputs->at("x");
  inputs->erase("x");
  WriteWarmup(dir, {HalfPredictLog(1).SerializeAsString(), wrong.SerializeAsString()});
  s = RunWarmup(*servable, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("warmup record 2 of"), std::string::npos) << s.ToString();
  // More than 1000 records.
  std::vector<std::string> many(1001, HalfPredictLog(1).SerializeAsString());
  WriteWarmup(dir, many);
  s = RunWarmup(*servable, {}, nullptr);
  EXPECT_EQ(s.message(), "Number of warmup records exceeds the maximum (1000) at " + dir + "/" + kWarmupFile);
}

}  // namespace
}  // namespace strata::serve

