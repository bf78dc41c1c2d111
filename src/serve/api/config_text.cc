#include "serve/api/config_text.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "core/file_util.h"
#include "serve/api/proto_codec.h"
#include "tensorflow_serving/config/monitoring_config.pb.h"
#include "tensorflow_serving/config/ssl_config.pb.h"
#include "tensorflow_serving/servables/tensorflow/session_bundle_config.pb.h"

namespace strata::serve {

namespace {

class Collector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty()) first = StrCat("line ", line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string first;
};

Status ParseText(std::string_view text, const std::string& where, google::protobuf::Message* msg) {
  google::protobuf::TextFormat::Parser parser;
  Collector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), msg))
    return InvalidArgumentError("Invalid protobuf file: '", where, "': ", errors.first.empty() ? "parse error"
                                                                                               : errors.first);
  return Status::OK();
}

StatusOr<std::string> ReadConfig(const std::string& path, const char* flag) {
  auto text = ReadFile(path);
  if (!text.ok()) return Status(text.status().code(), StrCat(flag, ": ", text.status().message()));
  return text;
}

}  // namespace

StatusOr<std::vector<ModelConfig>> ParseModelServerConfig(std::string_view text, const std::string& where) {
  tensorflow::serving::ModelServerConfig proto;
  STRATA_RETURN_IF_ERROR(ParseText(text, where, &proto));
  return ModelConfigsFromProto(proto);
}

StatusOr<std::vector<ModelConfig>> ReadModelServerConfigFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadConfig(path, "--model_config_file"));
  return ParseModelServerConfig(text, path);
}

StatusOr<BatchingOptions> ParseBatchingParameters(std::string_view text, const std::string& where) {
  tensorflow::serving::BatchingParameters p;
  STRATA_RETURN_IF_ERROR(ParseText(text, where, &p));
  BatchingOptions o;
  if (p.has_max_batch_size()) o.max_batch_size = p.max_batch_size().value();
  if (p.has_batch_timeout_micros()) o.batch_timeout_micros = p.batch_timeout_micros().value();
  if (p.has_max_enqueued_batches()) o.max_enqueued_batches = p.max_enqueued_batches().value();
  if (p.has_num_batch_threads()) {
    o.num_batch_threads = p.num_batch_threads().value();
    if (o.num_batch_threads < 1)
      return InvalidArgumentError("num_batch_threads must be positive; was ", o.num_batch_threads);
  }
  if (p.has_thread_pool_name()) o.thread_pool_name = p.thread_pool_name().value();
  o.allowed_batch_sizes.assign(p.allowed_batch_sizes().begin(), p.allowed_batch_sizes().end());
  o.pad_variable_length_inputs = p.pad_variable_length_inputs();
  if (p.has_enable_large_batch_splitting()) o.enable_large_batch_splitting = p.enable_large_batch_splitting().value();
  if (p.has_max_execution_batch_size()) o.max_execution_batch_size = p.max_execution_batch_size().value();
  STRATA_RETURN_IF_ERROR(ValidateBatchingOptions(o));
  return o;
}

StatusOr<BatchingOptions> ReadBatchingParametersFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadConfig(path, "--batching_parameters_file"));
  return ParseBatchingParameters(text, path);
}

StatusOr<MonitoringOptions> ReadMonitoringConfigFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadConfig(path, "--monitoring_config_file"));
  tensorflow::serving::MonitoringConfig p;
  STRATA_RETURN_IF_ERROR(ParseText(text, path, &p));
  MonitoringOptions o;
  o.prometheus_enable = p.prometheus_config().enable();
  o.prometheus_path = p.prometheus_config().path();
  return o;
}

StatusOr<SslOptions> ReadSslConfigFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadConfig(path, "--ssl_config_file"));
  tensorflow::serving::SSLConfig p;
  STRATA_RETURN_IF_ERROR(ParseText(text, path, &p));
  return SslOptions{p.server_key(), p.server_cert(), p.custom_ca(), p.client_verify()};
}

}  // namespace strata::serve
