// Reading layer arguments from a model config (src/nn/layer_config.cc, src/nn/model_config.cc).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "nn/internal.h"

namespace strata::nn::internal {

// Typed reads of one layer's config object that record the first error ("<where>: config 'units' expects an
// integer, got string \"10\""). A missing argument takes `def`, or is an error without one; Finish() also rejects
// arguments nobody read.
class ConfigArgs {
 public:
  ConfigArgs(const Json& config, std::string where) : config_(config), where_(std::move(where)) {}
  int64_t Int(std::string_view key, std::optional<int64_t> def = std::nullopt);
  double Double(std::string_view key, std::optional<double> def = std::nullopt);
  bool Bool(std::string_view key, bool def);
  std::string String(std::string_view key, std::optional<std::string> def = std::nullopt);
  // null is the default (an empty list when there is none).
  std::vector<int64_t> Ints(std::string_view key, std::optional<std::vector<int64_t>> def = std::nullopt);
  std::vector<float> Floats(std::string_view key);  // required
  Status Finish() const;

 private:
  const Json* Get(std::string_view key, bool optional);
  void Fail(std::string_view key, std::string_view expected, const Json& got);
  const Json& config_;
  std::string where_;
  Status error_;
  std::set<std::string, std::less<>> used_;
};

// A built-in layer from its class name and config; nullopt when the class is not built in.
std::optional<StatusOr<LayerRef>> MakeBuiltinLayer(const std::string& class_name, const Json& config,
                                                   const std::string& name, const std::string& where);

}  // namespace strata::nn::internal
