// Plain C++ forms of TF Serving's config protos (ModelServerConfig, BatchingParameters, MonitoringConfig,
// SSLConfig). The text-format parsers live in api/config_text.cc; everything else in the server sees these.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/status.h"

namespace strata::serve {

// FileSystemStoragePathSourceConfig.ServableVersionPolicy
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  uint32_t num_versions = 1;      // latest; 0 means 1
  std::vector<int64_t> versions;  // specific
  bool operator==(const VersionPolicy& o) const {
    return kind == o.kind && num_versions == o.num_versions && versions == o.versions;
  }
  std::string ToString() const;
};

// ModelConfig
struct ModelConfig {
  std::string name;
  std::string base_path;
  std::string platform = "tensorflow";
  VersionPolicy policy;
  std::map<std::string, int64_t> labels;  // version_labels
  bool operator==(const ModelConfig& o) const {
    return name == o.name && base_path == o.base_path && platform == o.platform && policy == o.policy &&
           labels == o.labels;
  }
};

// BatchingParameters, with TF's defaults for omitted fields.
struct BatchingOptions {
  int64_t max_batch_size = 1000;
  int64_t batch_timeout_micros = 0;
  int64_t max_enqueued_batches = 10;
  int64_t num_batch_threads = 0;  // 0 = one per core
  std::string thread_pool_name = "batch_threads";
  std::vector<int64_t> allowed_batch_sizes;
  bool pad_variable_length_inputs = false;
  // TF Serving rejects requests larger than max_batch_size unless this is set; strata splits them by default.
  bool enable_large_batch_splitting = true;
  int64_t max_execution_batch_size = 0;  // 0 = max_batch_size
  // strata extension (--adaptive_batch_timeout): an open batch runs one estimated arrival gap before its timeout
  // (AdaptiveBatchDeadline in batcher.h), at once when requests arrive more slowly than the timeout.
  bool adaptive_batch_timeout = false;
};

struct MonitoringOptions {
  bool prometheus_enable = false;
  std::string prometheus_path;  // empty = /monitoring/prometheus/metrics
};

struct SslOptions {
  std::string server_key;
  std::string server_cert;
  std::string custom_ca;
  bool client_verify = false;
};

// Model names become file-system paths and URL segments: reject '/', '\\', ':', "..", control characters and
// the empty name, with a message that says why.
Status ValidateModelName(const std::string& name);

// The checks TF Serving makes before applying a config (unique names, absolute base paths, known platforms,
// valid policies) plus ValidateModelName. Messages follow TF Serving's where it has one.
Status ValidateModelConfigList(const std::vector<ModelConfig>& configs);

// BatchingParameters rules: positive sizes, allowed_batch_sizes increasing and ending at max_batch_size.
Status ValidateBatchingOptions(const BatchingOptions& options);

}  // namespace strata::serve
