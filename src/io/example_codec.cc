// tf.train.Example / SequenceExample <-> bytes, through the classes protoc generates from proto/ (the only files
// that include them are this one and example_parse.cc).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "io/example_proto.h"
#include "strata/example.h"

namespace strata::io {

Feature Feature::Bytes(std::vector<std::string> v) {
  Feature f;
  f.kind = Kind::kBytes;
  f.bytes_list = std::move(v);
  return f;
}

Feature Feature::Floats(std::vector<float> v) {
  Feature f;
  f.kind = Kind::kFloat;
  f.float_list = std::move(v);
  return f;
}

Feature Feature::Int64s(std::vector<int64_t> v) {
  Feature f;
  f.kind = Kind::kInt64;
  f.int64_list = std::move(v);
  return f;
}

size_t Feature::size() const {
  switch (kind) {
    case Kind::kBytes: return bytes_list.size();
    case Kind::kFloat: return float_list.size();
    case Kind::kInt64: return int64_list.size();
    case Kind::kNone: break;
  }
  return 0;
}

bool Feature::operator==(const Feature& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kBytes: return bytes_list == o.bytes_list;
    case Kind::kFloat: return float_list == o.float_list;
    case Kind::kInt64: return int64_list == o.int64_list;
    case Kind::kNone: break;
  }
  return true;
}

std::string_view FeatureKindName(Feature::Kind kind) {
  switch (kind) {
    case Feature::Kind::kBytes: return "bytes_list";
    case Feature::Kind::kFloat: return "float_list";
    case Feature::Kind::kInt64: return "int64_list";
    case Feature::Kind::kNone: break;
  }
  return "no kind";
}

namespace {

void ToProto(const Feature& f, tensorflow::Feature* p) {
  switch (f.kind) {
    case Feature::Kind::kBytes: {
      auto* list = p->mutable_bytes_list();
      for (const auto& s : f.bytes_list) list->add_value(s);
      break;
    }
    case Feature::Kind::kFloat: p->mutable_float_list()->mutable_value()->Add(f.float_list.begin(), f.float_list.end()); break;
    case Feature::Kind::kInt64: p->mutable_int64_list()->mutable_value()->Add(f.int64_list.begin(), f.int64_list.end()); break;
    case Feature::Kind::kNone: break;
  }
}

Feature FromProto(const tensorflow::Feature& p) {
  switch (p.kind_case()) {
    case tensorflow::Feature::kBytesList: return Feature::Bytes({p.bytes_list().value().begin(), p.bytes_list().value().end()});
    case tensorflow::Feature::kFloatList: return Feature::Floats({p.float_list().value().begin(), p.float_list().value().end()});
    case tensorflow::Feature::kInt64List: return Feature::Int64s({p.int64_list().value().begin(), p.int64_list().value().end()});
    case tensorflow::Feature::KIND_NOT_SET: break;
  }
  return Feature();
}

void ToProto(const FeatureMap& m, tensorflow::Features* p) {
  auto* map = p->mutable_feature();
  for (const auto& [key, f] : m) ToProto(f, &(*map)[key]);
}

FeatureMap FromProto(const tensorflow::Features& p) {
  FeatureMap m;
  for (const auto& [key, f] : p.feature()) m.emplace(key, FromProto(f));
  return m;
}

}  // namespace

std::string SerializeDeterministic(const google::protobuf::MessageLite& msg) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string SerializeExample(const Example& example) {
  tensorflow::Example p;
  ToProto(example.features, p.mutable_features());
  return SerializeDeterministic(p);
}

StatusOr<Example> ParseExample(std::string_view serialized) {
  tensorflow::Example p;
  if (serialized.size() > INT32_MAX || !p.ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    return InvalidArgumentError("cannot parse a tf.train.Example from ", serialized.size(), " bytes");
  Example e;
  e.features = FromProto(p.features());
  return e;
}

std::string SerializeSequenceExample(const SequenceExample& example) {
  tensorflow::SequenceExample p;
  ToProto(example.context, p.mutable_context());
  auto* lists = p.mutable_feature_lists()->mutable_feature_list();
  for (const auto& [key, steps] : example.feature_lists) {
    auto& list = (*lists)[key];
    for (const Feature& f : steps) ToProto(f, list.add_feature());
  }
  return SerializeDeterministic(p);
}

StatusOr<SequenceExample> ParseSequenceExample(std::string_view serialized) {
  tensorflow::SequenceExample p;
  if (serialized.size() > INT32_MAX || !p.ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    return InvalidArgumentError("cannot parse a tf.train.SequenceExample from ", serialized.size(), " bytes");
  SequenceExample e;
  e.context = FromProto(p.context());
  for (const auto& [key, list] : p.feature_lists().feature_list()) {
    auto& steps = e.feature_lists[key];
    for (const auto& f : list.feature()) steps.push_back(FromProto(f));
  }
  return e;
}

}  // namespace strata::io
