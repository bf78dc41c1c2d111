// tf.train.Example and tf.train.SequenceExample, and the parse specs that turn them into tensors
// (tf.io.FixedLenFeature, VarLenFeature and RaggedFeature). Wire-compatible with TensorFlow
// (specs/tf-formats.md §2); implemented in src/io over strata's own .proto files in proto/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::io {

// One tf.train.Feature: a list of byte strings, float32 values or int64 values; kNone is an empty list.
struct Feature {
  enum class Kind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };
  Kind kind = Kind::kNone;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;

  static Feature Bytes(std::vector<std::string> v);
  static Feature Floats(std::vector<float> v);
  static Feature Int64s(std::vector<int64_t> v);
  // Number of values in the list of this feature's kind.
  size_t size() const;
  bool operator==(const Feature& o) const;
};
// "bytes_list", "float_list", "int64_list" or "no kind" (the names of the proto fields).
std::string_view FeatureKindName(Feature::Kind kind);

using FeatureMap = std::map<std::string, Feature>;

struct Example {
  FeatureMap features;
  bool operator==(const Example& o) const { return features == o.features; }
};

struct SequenceExample {
  FeatureMap context;
  std::map<std::string, std::vector<Feature>> feature_lists;
  bool operator==(const SequenceExample& o) const {
    return context == o.context && feature_lists == o.feature_lists;
  }
};

// Serialisation is deterministic: map entries in sorted key order, one packed run per numeric list, so equal
// Examples give equal bytes. Parsing accepts everything proto3 allows (packed or unpacked lists, entries in any
// order, a missing key or value, unknown fields; a repeated key keeps the last entry).
std::string SerializeExample(const Example& example);
StatusOr<Example> ParseExample(std::string_view serialized);
std::string SerializeSequenceExample(const SequenceExample& example);
StatusOr<SequenceExample> ParseSequenceExample(std::string_view serialized);

// ---- parse specs ----

// How one feature becomes tensors. dtype selects the list: float32 <-> float_list, int64 <-> int64_list,
// string <-> bytes_list.
struct FeatureSpec {
  enum class Type : uint8_t { kFixedLen, kVarLen };
  std::string key;                // the feature's name in the Example
  std::string output;             // the tensor name it produces (empty: same as key)
  Type type = Type::kFixedLen;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;     // FixedLen: shape of one example's value (row-major); {} is a scalar
  std::optional<Tensor> default_value;  // FixedLen: used when the feature is missing (a scalar is broadcast)
  bool ragged = false;            // VarLen, batched: values + row_splits (true) or padded dense (false)
  std::optional<Tensor> padding_value;  // VarLen padded: scalar filler (default 0 or "")

  static FeatureSpec FixedLen(std::string key, DType dtype, std::vector<int64_t> shape = {},
                              std::optional<Tensor> default_value = std::nullopt);
  static FeatureSpec VarLen(std::string key, DType dtype, bool ragged = false);
  const std::string& output_name() const { return output.empty() ? key : output; }
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Parses one serialized Example. FixedLen gives a tensor of `shape`; VarLen gives a 1-D tensor of all values.
// A missing feature without a default, a wrong list kind or a wrong value count is INVALID_ARGUMENT naming the
// feature and `where` (for example "record 17 of 'train-00000-of-00004.tfrecord'").
StatusOr<NamedTensors> ParseSingleExample(std::string_view serialized, const std::vector<FeatureSpec>& specs,
                                          std::string_view where = "example");
// Parses a batch. FixedLen gives [B, shape...]. VarLen padded gives `name` [B, max_len] filled with the padding
// value plus `name/length` int64 [B]; VarLen ragged gives `name` (all values, flat) plus `name/row_splits` int64
// [B+1]. `where[i]`, if given, names record i in errors.
StatusOr<NamedTensors> ParseExampleBatch(const std::vector<std::string_view>& serialized,
                                         const std::vector<FeatureSpec>& specs,
                                         const std::vector<std::string>& where = {});
// Parses one SequenceExample: context specs as in ParseSingleExample; for sequence (feature_lists) specs a
// FixedLen feature gives [T, shape...] over the T steps and a VarLen one gives `name` (all values of all steps)
// plus `name/row_splits` int64 [T+1]. A missing feature list without a default is an error; with a FixedLen
// default_value it gives T = 0.
StatusOr<NamedTensors> ParseSingleSequenceExample(std::string_view serialized,
                                                  const std::vector<FeatureSpec>& context_specs,
                                                  const std::vector<FeatureSpec>& sequence_specs,
                                                  std::string_view where = "sequence example");

}  // namespace strata::io
