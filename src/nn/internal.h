// Private pieces of the nn library shared by its files.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "strata/nn.h"

namespace strata::nn {
namespace internal {

// One call of a layer on symbolic tensors (or a model input when layer is null).
struct CallNode {
  std::shared_ptr<Layer> layer;
  std::vector<KerasTensor> inputs;
  int num_outputs = 1;
  Status error;  // first error of this call (reported by Model::Build)
  // Model inputs only.
  TensorSpec input_spec;
  std::string input_name;
};

// Keras-style snake_case of a class name: "Conv2D" -> "conv2d", "BatchNormalization" -> "batch_normalization".
std::string SnakeCase(const std::string& type);

// Layer::GetConfig helpers: a JSON array of integers (of floats), and a config object as text.
inline Json JsonInts(const std::vector<int64_t>& v) {
  Json a = Json::MakeArray();
  for (int64_t x : v) a.Append(x);
  return a;
}
inline Json JsonFloats(const std::vector<float>& v) {
  Json a = Json::MakeArray();
  for (float x : v) a.Append(static_cast<double>(x));
  return a;
}
inline StatusOr<std::string> ConfigText(Json::Object fields) { return Json::MakeObject(std::move(fields)).Dump(); }

// ONNX attribute helpers.
inline graph::Attribute AInts(std::vector<int64_t> v) { return graph::Attribute::Ints(std::move(v)); }
inline graph::Attribute AInt(int64_t v) { return graph::Attribute::Int(v); }
inline graph::Attribute AFloat(double v) { return graph::Attribute::Float(static_cast<float>(v)); }
inline graph::Attribute AString(std::string v) { return graph::Attribute::String(std::move(v)); }

}  // namespace internal
}  // namespace strata::nn
