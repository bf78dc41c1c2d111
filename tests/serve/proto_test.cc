// TensorProto conversion (TF's Tensor::FromProto semantics), wire field numbers of our .proto files, and the
// text-format config files of specs/tf-serving.md §3.
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include "serve/api/config_text.h"
#include "serve/api/proto_codec.h"
#include "tensorflow_serving/apis/predict.pb.h"
#include "tensorflow_serving/apis/prediction_log.pb.h"

namespace strata::serve {
namespace {

tensorflow::TensorProto Proto(tensorflow::DataType dtype, std::vector<int64_t> dims) {
  tensorflow::TensorProto p;
  p.set_dtype(dtype);
  for (int64_t d : dims) p.mutable_tensor_shape()->add_dim()->set_size(d);
  return p;
}

TEST(TensorProtoTest, TypedValuesRepeatTheLastValue) {
  auto p = Proto(tensorflow::DT_FLOAT, {2, 3});
  p.add_float_val(1.5f);
  p.add_float_val(2.5f);
  auto t = TensorFromProto(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->ToVector<float>(), (std::vector<float>{1.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f}));
  // No values: zeros. Extra values: ignored.
  auto z = TensorFromProto(Proto(tensorflow::DT_INT64, {3}));
  EXPECT_EQ(z->ToVector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  auto e = Proto(tensorflow::DT_INT32, {1});
  e.add_int_val(7);
  e.add_int_val(8);
  EXPECT_EQ(TensorFromProto(e)->ToVector<int32_t>(), (std::vector<int32_t>{7}));
  auto s = Proto(tensorflow::DT_STRING, {2});
  s.add_string_val("a");
  s.add_string_val(std::string("\0b", 2));
  EXPECT_EQ(TensorFromProto(s)->ToVector<std::string>()[1], std::string("\0b", 2));
  auto h = Proto(tensorflow::DT_HALF, {1});
  h.add_half_val(0x3c00);  // 1.0
  EXPECT_EQ(static_cast<float>(TensorFromProto(h)->data<Float16>()[0]), 1.0f);
  auto u = Proto(tensorflow::DT_UINT64, {1});
  u.add_uint64_val(UINT64_MAX);
  EXPECT_EQ(TensorFromProto(u)->ToVector<uint64_t>()[0], UINT64_MAX);
}

TEST(TensorProtoTest, TensorContent) {
  auto p = Proto(tensorflow::DT_FLOAT, {2});
  const float v[2] = {1.0f, -2.0f};
  p.set_tensor_content(std::string(reinterpret_cast<const char*>(v), 8));
  EXPECT_EQ(TensorFromProto(p)->ToVector<float>(), (std::vector<float>{1.0f, -2.0f}));
  p.set_tensor_content(std::string(7, '\0'));
  auto bad = TensorFromProto(p);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "tensor_content has 7 bytes, but shape [2] of float32 needs 8");
}

TEST(TensorProtoTest, BadProtos) {
  EXPECT_EQ(TensorFromProto(Proto(tensorflow::DT_INVALID, {1})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TensorFromProto(Proto(tensorflow::DT_COMPLEX64, {1})).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(TensorFromProto(Proto(tensorflow::DT_FLOAT, {-1})).status().message(),
            "tensor shape has a negative dimension -1");
  auto unknown = Proto(tensorflow::DT_FLOAT, {});
  unknown.mutable_tensor_shape()->set_unknown_rank(true);
  EXPECT_EQ(TensorFromProto(unknown).status().code(), StatusCode::kInvalidArgument);
  // One value over a huge shape must not allocate it.
  auto huge = Proto(tensorflow::DT_FLOAT, {1 << 20, 1 << 20});
  huge.add_float_val(1);
  EXPECT_NE(TensorFromProto(huge).status().message().find("larger than the"), std::string::npos);
}

TEST(TensorProtoTest, ToProtoTypedOrTensorContent) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2});
  tensorflow::TensorProto p;
  TensorToProto(t, false, &p);
  EXPECT_EQ(p.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(p.tensor_shape().dim_size(), 2);
  EXPECT_EQ(p.tensor_shape().dim(1).size(), 2);
  EXPECT_EQ(p.float_val_size(), 4);
  EXPECT_TRUE(p.tensor_content().empty());
  tensorflow::TensorProto c;
  TensorToProto(t, true, &c);
  EXPECT_EQ(c.float_val_size(), 0);
  EXPECT_EQ(c.tensor_content().size(), 16u);
  EXPECT_EQ(TensorFromProto(c)->ToVector<float>(), t.ToVector<float>());
}

// Field numbers of the wire-compatible protos (specs/tf-serving.md §2.2-2.3), checked through the descriptors.
int Number(const google::protobuf::Descriptor* d, const char* field) {
  const auto* f = d->FindFieldByName(field);
  return f ? f->number() : -1;
}

TEST(ProtoFilesTest, FieldNumbersMatchTheSpec) {
  const auto* req = tensorflow::serving::PredictRequest::descriptor();
  EXPECT_EQ(req->full_name(), "tensorflow.serving.PredictRequest");
  EXPECT_EQ(Number(req, "model_spec"), 1);
  EXPECT_EQ(Number(req, "inputs"), 2);
  EXPECT_EQ(Number(req, "output_filter"), 3);
  EXPECT_EQ(Number(req, "predict_streamed_options"), 5);
  EXPECT_EQ(Number(req, "client_id"), 6);
  EXPECT_EQ(Number(req, "request_options"), 7);
  const auto* resp = tensorflow::serving::PredictResponse::descriptor();
  EXPECT_EQ(Number(resp, "outputs"), 1);
  EXPECT_EQ(Number(resp, "model_spec"), 2);
  const auto* spec = tensorflow::serving::ModelSpec::descriptor();
  EXPECT_EQ(Number(spec, "name"), 1);
  EXPECT_EQ(Number(spec, "version"), 2);
  EXPECT_EQ(Number(spec, "signature_name"), 3);
  EXPECT_EQ(Number(spec, "version_label"), 4);
  const auto* tp = tensorflow::TensorProto::descriptor();
  const std::vector<std::pair<const char*, int>> tensor_fields = {
      {"dtype", 1},       {"tensor_shape", 2}, {"version_number", 3}, {"tensor_content", 4}, {"float_val", 5},
      {"double_val", 6},  {"int_val", 7},      {"string_val", 8},     {"scomplex_val", 9},   {"int64_val", 10},
      {"bool_val", 11},   {"dcomplex_val", 12}, {"half_val", 13},     {"uint32_val", 16},    {"uint64_val", 17}};
  for (const auto& [name, number] : tensor_fields) EXPECT_EQ(Number(tp, name), number) << name;
  EXPECT_TRUE(tp->FindFieldByName("float_val")->is_packed());
  const auto* log = tensorflow::serving::PredictionLog::descriptor();
  EXPECT_EQ(Number(log, "predict_log"), 6);
  EXPECT_EQ(Number(log, "classify_log"), 2);
  EXPECT_EQ(Number(log, "session_run_log"), 5);
  const auto* policy = tensorflow::serving::FileSystemStoragePathSourceConfig::ServableVersionPolicy::descriptor();
  EXPECT_EQ(Number(policy, "latest"), 100);
  EXPECT_EQ(Number(policy, "all"), 101);
  EXPECT_EQ(Number(policy, "specific"), 102);
  const auto* mc = tensorflow::serving::ModelConfig::descriptor();
  EXPECT_EQ(Number(mc, "model_version_policy"), 7);
  EXPECT_EQ(Number(mc, "version_labels"), 8);
  EXPECT_EQ(Number(mc, "logging_config"), 6);
}

TEST(ConfigTextTest, ModelServerConfigFromTheSpec) {
  auto configs = ParseModelServerConfig(R"(
    # models.config
    model_config_list {
      config {
        name: "iris"
        base_path: "/models/iris"
        model_platform: "tensorflow"
        model_version_policy { specific { versions: 2 versions: 3 } }
        version_labels { key: "stable" value: 2 }
        version_labels { key: "canary" value: 3 }
      }
      config: {
        name: 'half',
        base_path: "/models/half";
        model_platform: "onnx"
        model_version_policy { latest { num_versions: 2 } }
      }
    })",
                                        "models.config");
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_EQ(configs->size(), 2u);
  const ModelConfig& iris = (*configs)[0];
  EXPECT_EQ(iris.name, "iris");
  EXPECT_EQ(iris.policy.kind, VersionPolicy::Kind::kSpecific);
  EXPECT_EQ(iris.policy.versions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(iris.labels.at("stable"), 2);
  EXPECT_EQ(iris.labels.at("canary"), 3);
  EXPECT_EQ((*configs)[1].policy.num_versions, 2u);
  EXPECT_EQ((*configs)[1].platform, "onnx");
}

TEST(ConfigTextTest, BadConfigs) {
  auto unknown = ParseModelServerConfig("model_config_list { config { name: \"a\" bogus: 1 } }", "/etc/m.config");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message().rfind("Invalid protobuf file: '/etc/m.config'", 0), 0u);
  EXPECT_NE(unknown.status().message().find("bogus"), std::string::npos);
  auto rel = ParseModelServerConfig(
      "model_config_list { config { name: \"a\" base_path: \"rel\" model_platform: \"tensorflow\" } }", "x");
  EXPECT_EQ(rel.status().message(), "Expected model a to have an absolute path or URI; got base_path()=rel");
  auto dup = ParseModelServerConfig(
      "model_config_list { config { name: \"a\" base_path: \"/a\" model_platform: \"onnx\" } "
      "config { name: \"a\" base_path: \"/b\" model_platform: \"onnx\" } }",
      "x");
  EXPECT_EQ(dup.status().message(), "Illegal to list model a multiple times in config list");
  auto custom = ParseModelServerConfig("custom_model_config { }", "x");
  EXPECT_NE(custom.status().message().find("custom_model_config is not supported"), std::string::npos);
  auto path = ParseModelServerConfig(
      "model_config_list { config { name: \"../x\" base_path: \"/a\" model_platform: \"onnx\" } }", "x");
  EXPECT_EQ(path.status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigTextTest, BatchingParameters) {
  auto o = ParseBatchingParameters(R"(
    max_batch_size { value: 64 }
    batch_timeout_micros { value: 2000 }
    max_enqueued_batches { value: 100 }
    num_batch_threads { value: 8 }
    allowed_batch_sizes: 8
    allowed_batch_sizes: 32
    allowed_batch_sizes: 64
    pad_variable_length_inputs: false)",
                                   "b.config");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_batch_size, 64);
  EXPECT_EQ(o->batch_timeout_micros, 2000);
  EXPECT_EQ(o->max_enqueued_batches, 100);
  EXPECT_EQ(o->num_batch_threads, 8);
  EXPECT_EQ(o->allowed_batch_sizes, (std::vector<int64_t>{8, 32, 64}));
  auto defaults = ParseBatchingParameters("", "empty");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_batch_size, 1000);
  EXPECT_EQ(defaults->batch_timeout_micros, 0);
  EXPECT_EQ(defaults->max_enqueued_batches, 10);
  auto bad = ParseBatchingParameters("max_batch_size { value: 64 } allowed_batch_sizes: 8 allowed_batch_sizes: 32", "b");
  EXPECT_EQ(bad.status().message(),
            "Last entry in allowed_batch_sizes must match max_batch_size; last entry was 32; expected 64");
}

}  // namespace
}  // namespace strata::serve
