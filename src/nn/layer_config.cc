// The built-in layers made from their Layer::GetConfig() arguments (the from_config half of the model config).
// Every argument is checked for its type; an unknown argument is an error (a typo must not become a default).
#include "nn/layer_config.h"

#include <set>

namespace strata::nn::internal {

int64_t ConfigArgs::Int(std::string_view key, std::optional<int64_t> def) {
  const Json* v = Get(key, def.has_value());
  if (v == nullptr) return def.value_or(0);
  if (!v->is_int()) return Fail(key, "an integer", *v), 0;
  return v->as_int();
}

double ConfigArgs::Double(std::string_view key, std::optional<double> def) {
  const Json* v = Get(key, def.has_value());
  if (v == nullptr) return def.value_or(0);
  if (!v->is_number()) return Fail(key, "a number", *v), 0;
  return v->as_double();
}

bool ConfigArgs::Bool(std::string_view key, bool def) {
  const Json* v = Get(key, true);
  if (v == nullptr) return def;
  if (!v->is_bool()) return Fail(key, "true or false", *v), def;
  return v->as_bool();
}

std::string ConfigArgs::String(std::string_view key, std::optional<std::string> def) {
  const Json* v = Get(key, def.has_value());
  if (v == nullptr) return def.value_or("");
  if (!v->is_string()) return Fail(key, "a string", *v), "";
  return v->as_string();
}

std::vector<int64_t> ConfigArgs::Ints(std::string_view key, std::optional<std::vector<int64_t>> def) {
  const Json* v = Get(key, def.has_value());
  if (v == nullptr || v->is_null()) return def.value_or(std::vector<int64_t>{});
  std::vector<int64_t> out;
  if (!v->is_array()) return Fail(key, "an array of integers", *v), out;
  for (const Json& e : v->as_array()) {
    if (!e.is_int()) return Fail(key, "an array of integers", *v), out;
    out.push_back(e.as_int());
  }
  return out;
}

std::vector<float> ConfigArgs::Floats(std::string_view key) {
  const Json* v = Get(key, false);
  std::vector<float> out;
  if (v == nullptr) return out;
  if (!v->is_array()) return Fail(key, "an array of numbers", *v), out;
  for (const Json& e : v->as_array()) {
    if (!e.is_number()) return Fail(key, "an array of numbers", *v), out;
    out.push_back(static_cast<float>(e.as_double()));
  }
  return out;
}

const Json* ConfigArgs::Get(std::string_view key, bool optional) {
  used_.emplace(key);
  const Json* v = config_.Find(key);
  if (v == nullptr && !optional && error_.ok())
    error_ = InvalidArgumentError(where_, ": config needs '", key, "', which is missing");
  return v;
}

void ConfigArgs::Fail(std::string_view key, std::string_view expected, const Json& got) {
  if (!error_.ok()) return;
  std::string text = got.Dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  error_ = InvalidArgumentError(where_, ": config '", key, "' expects ", expected, ", got ", JsonTypeName(got.type()),
                                " ", text);
}

Status ConfigArgs::Finish() const {
  if (!error_.ok()) return error_;
  for (const auto& [key, value] : config_.as_object())
    if (!used_.count(key)) {
      std::vector<std::string> known(used_.begin(), used_.end());
      return InvalidArgumentError(
          where_, ": unknown config argument '", key, "'",
          known.empty() ? std::string("; this class takes none") : StrCat("; expected one of ", StrJoin(known, ", ")));
    }
  return Status::OK();
}

namespace {

using Maker = LayerRef (*)(ConfigArgs& a, const std::string& name);

Conv2DOptions ConvOptions(ConfigArgs& a, const std::string& name, bool depthwise) {
  Conv2DOptions o;
  o.strides = a.Ints("strides", std::vector<int64_t>{1, 1});
  o.padding = a.String("padding", "valid");
  o.dilation_rate = a.Ints("dilation_rate", std::vector<int64_t>{1, 1});
  if (!depthwise) o.groups = a.Int("groups", 1);
  o.activation = a.String("activation", "");
  o.use_bias = a.Bool("use_bias", true);
  o.kernel_initializer = a.String("kernel_initializer", "glorot_uniform");
  o.bias_initializer = a.String("bias_initializer", "zeros");
  o.name = name;
  return o;
}

PoolOptions PoolArgs(ConfigArgs& a, const std::string& name) {
  return {.strides = a.Ints("strides", std::vector<int64_t>{}), .padding = a.String("padding", "valid"), .name = name};
}

const std::pair<const char*, Maker> kMakers[] = {
    {"Dense",
     [](ConfigArgs& a, const std::string& name) {
       const int64_t units = a.Int("units");
       return Dense(units, {.activation = a.String("activation", ""),
                            .use_bias = a.Bool("use_bias", true),
                            .kernel_initializer = a.String("kernel_initializer", "glorot_uniform"),
                            .bias_initializer = a.String("bias_initializer", "zeros"),
                            .name = name});
     }},
    {"Conv2D",
     [](ConfigArgs& a, const std::string& name) {
       const int64_t filters = a.Int("filters");
       std::vector<int64_t> k = a.Ints("kernel_size");
       return Conv2D(filters, std::move(k), ConvOptions(a, name, false));
     }},
    {"DepthwiseConv2D",
     [](ConfigArgs& a, const std::string& name) {
       std::vector<int64_t> k = a.Ints("kernel_size");
       const int64_t mult = a.Int("depth_multiplier", 1);
       return DepthwiseConv2D(std::move(k), mult, ConvOptions(a, name, true));
     }},
    {"MaxPooling2D",
     [](ConfigArgs& a, const std::string& name) {
       std::vector<int64_t> pool = a.Ints("pool_size", std::vector<int64_t>{2, 2});
       return MaxPooling2D(std::move(pool), PoolArgs(a, name));
     }},
    {"AveragePooling2D",
     [](ConfigArgs& a, const std::string& name) {
       std::vector<int64_t> pool = a.Ints("pool_size", std::vector<int64_t>{2, 2});
       return AveragePooling2D(std::move(pool), PoolArgs(a, name));
     }},
    {"GlobalAveragePooling2D",
     [](ConfigArgs& a, const std::string& name) { return GlobalAveragePooling2D(name, a.Bool("keepdims", false)); }},
    {"GlobalMaxPooling2D",
     [](ConfigArgs& a, const std::string& name) { return GlobalMaxPooling2D(name, a.Bool("keepdims", false)); }},
    {"ZeroPadding2D", [](ConfigArgs& a, const std::string& name) { return ZeroPadding2D(a.Ints("padding"), name); }},
    {"Rescaling",
     [](ConfigArgs& a, const std::string& name) {
       const double scale = a.Double("scale");
       return Rescaling(scale, a.Double("offset", 0.0), name);
     }},
    {"Normalization",
     [](ConfigArgs& a, const std::string& name) {
       std::vector<float> mean = a.Floats("mean");
       return Normalization(std::move(mean), a.Floats("variance"), name);
     }},
    {"BatchNormalization",
     [](ConfigArgs& a, const std::string& name) {
       BatchNormOptions o;
       o.momentum = a.Double("momentum", 0.99);
       o.epsilon = a.Double("epsilon", 1e-3);
       o.center = a.Bool("center", true);
       o.scale = a.Bool("scale", true);
       o.name = name;
       return BatchNormalization(o);
     }},
    {"LayerNormalization",
     [](ConfigArgs& a, const std::string& name) { return LayerNormalization(a.Double("epsilon", 1e-3), name); }},
    {"Dropout",
     [](ConfigArgs& a, const std::string& name) {
       const double rate = a.Double("rate");
       return Dropout(rate, name, a.Ints("noise_shape", std::vector<int64_t>{}));
     }},
    {"Flatten", [](ConfigArgs&, const std::string& name) { return Flatten(name); }},
    {"Reshape", [](ConfigArgs& a, const std::string& name) { return Reshape(a.Ints("target_shape"), name); }},
    {"Concatenate", [](ConfigArgs& a, const std::string& name) { return Concatenate(a.Int("axis", -1), name); }},
    {"Add", [](ConfigArgs&, const std::string& name) { return Add(name); }},
    {"Multiply", [](ConfigArgs&, const std::string& name) { return Multiply(name); }},
    {"Activation", [](ConfigArgs& a, const std::string& name) { return Activation(a.String("activation"), name); }},
    {"Embedding",
     [](ConfigArgs& a, const std::string& name) {
       const int64_t input_dim = a.Int("input_dim");
       return Embedding(input_dim, a.Int("output_dim"), name);
     }},
};

}  // namespace

std::optional<StatusOr<LayerRef>> MakeBuiltinLayer(const std::string& class_name, const Json& config,
                                                   const std::string& name, const std::string& where) {
  for (const auto& [cls, make] : kMakers) {
    if (class_name != cls) continue;
    ConfigArgs args(config, where);
    LayerRef layer = make(args, name);
    if (Status s = args.Finish(); !s.ok()) return StatusOr<LayerRef>(s);
    return StatusOr<LayerRef>(std::move(layer));
  }
  return std::nullopt;
}

}  // namespace strata::nn::internal

namespace strata::nn {

std::vector<std::string> BuiltinLayerClasses() {
  std::vector<std::string> out;
  for (const auto& entry : internal::kMakers) out.emplace_back(entry.first);
  return out;
}

}  // namespace strata::nn
