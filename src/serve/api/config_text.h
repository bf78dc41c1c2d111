// TF Serving's text-format config files (protobuf text format, parsed in full: an unknown field fails the file)
// into the plain structs of core/config.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "serve/core/config.h"

namespace strata::serve {

// --model_config_file: ModelServerConfig with a model_config_list. Errors start "Invalid protobuf file: '<path>'"
// as TF Serving's and add the parser's line:column message.
StatusOr<std::vector<ModelConfig>> ParseModelServerConfig(std::string_view text, const std::string& where);
StatusOr<std::vector<ModelConfig>> ReadModelServerConfigFile(const std::string& path);

// --batching_parameters_file: BatchingParameters, TF's defaults for omitted fields.
StatusOr<BatchingOptions> ParseBatchingParameters(std::string_view text, const std::string& where);
StatusOr<BatchingOptions> ReadBatchingParametersFile(const std::string& path);

// --monitoring_config_file: MonitoringConfig.
StatusOr<MonitoringOptions> ReadMonitoringConfigFile(const std::string& path);

// --ssl_config_file: SSLConfig.
StatusOr<SslOptions> ReadSslConfigFile(const std::string& path);

}  // namespace strata::serve
