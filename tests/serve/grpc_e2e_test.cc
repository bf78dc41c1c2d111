// End to end over gRPC with stubs generated from our .proto files: tensorflow.serving.PredictionService and
// ModelService, errors included, against specs/tf-serving.md §2.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#if __has_include(<absl/synchronization/mutex.h>)
#include <absl/synchronization/mutex.h>
#define STRATA_TEST_ABSL_MUTEX 1
#endif

#include <filesystem>
#include <future>

#include "e2e_fixture.h"
#include "tensorflow_serving/apis/model_service.grpc.pb.h"
#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace strata::serve {
namespace {

namespace pb = tensorflow::serving;

class GrpcClient {
 public:
  explicit GrpcClient(int port) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args);
    prediction_ = pb::PredictionService::NewStub(channel_);
    model_ = pb::ModelService::NewStub(channel_);
  }
  pb::PredictionService::Stub& prediction() { return *prediction_; }
  pb::ModelService::Stub& model() { return *model_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::PredictionService::Stub> prediction_;
  std::unique_ptr<pb::ModelService::Stub> model_;
};

pb::PredictRequest IrisRequest(std::vector<float> features) {
  pb::PredictRequest req;
  req.mutable_model_spec()->set_name("iris");
  auto& t = (*req.mutable_inputs())["features"];
  t.set_dtype(tensorflow::DT_FLOAT);
  t.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(features.size() / 4));
  t.mutable_tensor_shape()->add_dim()->set_size(4);
  for (float f : features) t.add_float_val(f);
  return req;
}

std::vector<float> Floats(const tensorflow::TensorProto& t) { return {t.float_val().begin(), t.float_val().end()}; }

class GrpcE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    client_grpc_ = std::make_unique<GrpcClient>(server_->grpc_port());
  }
  std::unique_ptr<GrpcClient> client_grpc_;
};

TEST_F(GrpcE2eTest, Predict) {
  grpc::ClientContext ctx;
  pb::PredictResponse resp;
  grpc::Status s = client_grpc_->prediction().Predict(&ctx, IrisRequest({0, 0, 0, 0}), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.model_spec().name(), "iris");
  EXPECT_EQ(resp.model_spec().version().value(), 2);
  EXPECT_EQ(resp.model_spec().signature_name(), "serving_default");
  ASSERT_EQ(resp.outputs().size(), 2u);
  const auto& logits = resp.outputs().at("logits");
  EXPECT_EQ(logits.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(logits.tensor_shape().dim_size(), 2);
  EXPECT_EQ(logits.tensor_shape().dim(0).size(), 1);
  EXPECT_EQ(logits.tensor_shape().dim(1).size(), 3);
  EXPECT_EQ(Floats(logits), (std::vector<float>{1.0f, 0.0f, 1.25f}));
  EXPECT_TRUE(logits.tensor_content().empty());  // typed *_val by default
  EXPECT_EQ(Floats(resp.outputs().at("probabilities")), (std::vector<float>{1.0f, 0.0f, 1.25f}));
}

TEST_F(GrpcE2eTest, PredictVersionsLabelsFiltersAndTensorContent) {
  {  // version 1 via Int64Value, output_filter, tensor_content input
    pb::PredictRequest req = IrisRequest({});
    req.mutable_model_spec()->mutable_version()->set_value(1);
    auto& t = (*req.mutable_inputs())["features"];
    t.mutable_tensor_shape()->mutable_dim(0)->set_size(1);
    const float v[4] = {1, 2, 3, 4};
    t.set_tensor_content(std::string(reinterpret_cast<const char*>(v), sizeof(v)));
    req.add_output_filter("logits");
    grpc::ClientContext ctx;
    pb::PredictResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().Predict(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.model_spec().version().value(), 1);
    ASSERT_EQ(resp.outputs().size(), 1u);
    // [1,2,3,4] @ W + b(shift 0) = [1+2, 2+2-1, -1+3+2+0.25]
    EXPECT_EQ(Floats(resp.outputs().at("logits")), (std::vector<float>{3.0f, 3.0f, 4.25f}));
  }
  {  // label
    pb::PredictRequest req = IrisRequest({0, 0, 0, 0});
    req.mutable_model_spec()->set_version_label("stable");
    grpc::ClientContext ctx;
    pb::PredictResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().Predict(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.model_spec().version().value(), 1);
  }
  {  // a single value is repeated over the whole shape ("constant tensor" clients)
    pb::PredictRequest req;
    req.mutable_model_spec()->set_name("half");
    auto& t = (*req.mutable_inputs())["x"];
    t.set_dtype(tensorflow::DT_FLOAT);
    t.mutable_tensor_shape()->add_dim()->set_size(3);
    t.add_float_val(4.0f);
    grpc::ClientContext ctx;
    pb::PredictResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().Predict(&ctx, req, &resp).ok());
    EXPECT_EQ(Floats(resp.outputs().at("y")), (std::vector<float>{4.0f, 4.0f, 4.0f}));
  }
}

void ExpectGrpcError(const grpc::Status& s, grpc::StatusCode code, const std::string& prefix) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_EQ(s.error_message().substr(0, prefix.size()), prefix);
}

TEST_F(GrpcE2eTest, PredictErrors) {
  auto call = [&](const pb::PredictRequest& req) {
    grpc::ClientContext ctx;
    pb::PredictResponse resp;
    return client_grpc_->prediction().Predict(&ctx, req, &resp);
  };
  pb::PredictRequest req = IrisRequest({0, 0, 0, 0});
  req.mutable_model_spec()->set_name("nope");
  ExpectGrpcError(call(req), grpc::StatusCode::NOT_FOUND, "Servable not found for request: Latest(nope)");
  req.mutable_model_spec()->set_name("");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT, "ModelSpec has no name specified.");
  req = IrisRequest({0, 0, 0, 0});
  req.mutable_model_spec()->mutable_version()->set_value(7);
  ExpectGrpcError(call(req), grpc::StatusCode::NOT_FOUND, "Servable not found for request: Specific(iris, 7)");
  req = IrisRequest({0, 0, 0, 0});
  req.mutable_model_spec()->set_version_label("beta");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT, "Unrecognized servable version label: beta");
  req = IrisRequest({0, 0, 0, 0});
  req.mutable_model_spec()->set_signature_name("foo");
  ExpectGrpcError(call(req), grpc::StatusCode::FAILED_PRECONDITION, "Serving signature key \"foo\" not found.");
  req = IrisRequest({0, 0, 0, 0});
  req.add_output_filter("z");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT,
                  "output tensor alias not found in signature: z Outputs expected to be in the set {logits,probabilities}.");
  req = IrisRequest({0, 0, 0, 0});
  req.add_output_filter("logits");
  req.add_output_filter("logits");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT, "duplicate output tensor alias: logits");
  req = IrisRequest({0, 0, 0, 0});
  (*req.mutable_inputs())["featurs"] = req.inputs().at("features");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT,
                  "input size does not match signature: 2!=1 len({features,featurs}) != len({features}). Sent extra: "
                  "{featurs}. Missing but required: {}.");
  req = IrisRequest({0, 0, 0, 0});
  req.mutable_inputs()->erase("features");
  (*req.mutable_inputs())["featurs"] = IrisRequest({0, 0, 0, 0}).inputs().at("features");
  grpc::Status s = call(req);
  ExpectGrpcError(s, grpc::StatusCode::INVALID_ARGUMENT,
                  "input tensor alias not found in signature: featurs. Inputs expected to be in the set {features}.");
  EXPECT_NE(s.error_message().find("Did you mean 'features' instead of 'featurs'?"), std::string::npos);
  // dtype mismatch: model, version, input, expected and actual.
  req = IrisRequest({});
  auto& t = (*req.mutable_inputs())["features"];
  t.set_dtype(tensorflow::DT_INT64);
  t.mutable_tensor_shape()->mutable_dim(0)->set_size(1);
  for (int i = 0; i < 4; ++i) t.add_int64_val(i);
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT,
                  "input 'features' of model 'iris' version 2 (signature 'serving_default') expects shape [batch,4] "
                  "and dtype float32 (DT_FLOAT), got shape [1,4] and dtype int64 (DT_INT64)");
  req = IrisRequest({0, 0, 0, 0});
  (*req.mutable_inputs())["features"].set_tensor_content("abc");
  ExpectGrpcError(call(req), grpc::StatusCode::INVALID_ARGUMENT, "input 'features': tensor_content has 3 bytes");
}

pb::Input Examples(std::vector<std::map<std::string, float>> rows) {
  pb::Input in;
  for (const auto& row : rows) {
    auto* ex = in.mutable_example_list()->add_examples();
    for (const auto& [name, v] : row) (*ex->mutable_features()->mutable_feature())[name].mutable_float_list()->add_value(v);
  }
  return in;
}

// Bytes that are not the method's request message: INVALID_ARGUMENT naming the message type (gRPC's own answer is
// INTERNAL with no message), sent through a generic stub since a generated one only sends well-formed messages.
TEST_F(GrpcE2eTest, UnparsableRequestIsInvalidArgument) {
  auto channel = grpc::CreateChannel(StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  const std::string garbage("\x0a\x64{\"inputs\": 1}", 15);  // field 1, 100 bytes long, but only 13 follow
  for (const auto& [method, type] : std::vector<std::pair<std::string, std::string>>{
           {"/tensorflow.serving.PredictionService/Predict", "PredictRequest"},
           {"/tensorflow.serving.PredictionService/Classify", "ClassificationRequest"},
           {"/tensorflow.serving.PredictionService/GetModelMetadata", "GetModelMetadataRequest"},
           {"/tensorflow.serving.ModelService/GetModelStatus", "GetModelStatusRequest"}}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    const grpc::Status s = done.get_future().get();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << s.error_message();
    EXPECT_EQ(s.error_message(), "could not parse " + type) << method;
  }
  // A well-formed request on the same channel is unaffected.
  grpc::ClientContext ctx;
  pb::PredictResponse resp;
  grpc::Status s = client_grpc_->prediction().Predict(&ctx, IrisRequest({0, 0, 0, 0}), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

#ifdef STRATA_TEST_ABSL_MUTEX
// The server turns off absl::Mutex lock-order checking (Debian's absl runs it on every gRPC lock; a cost per call).
// With it on, taking two mutexes in both orders aborts the process; in a forked child here, it must exit normally.
TEST_F(GrpcE2eTest, AbslDeadlockDetectionIsOffInTheServer) {
  const auto both_orders = [] {
    absl::Mutex a;
    absl::Mutex b;
    {
      absl::MutexLock la(&a);
      absl::MutexLock lb(&b);
    }
    {
      absl::MutexLock lb(&b);
      absl::MutexLock la(&a);
    }
    std::_Exit(0);  // no static destructors: the forked child does not own the server's threads
  };
  EXPECT_EXIT(both_orders(), ::testing::ExitedWithCode(0), "");
}
#endif

// The standard health service, called with hand-encoded grpc.health.v1 messages (HealthCheckRequest{service = 1};
// HealthCheckResponse{status = 1}, SERVING = 1): the whole server and each TF Serving service are SERVING, an
// unknown service is NOT_FOUND, as the health protocol says.
TEST_F(GrpcE2eTest, HealthServiceReportsServing) {
  auto channel = grpc::CreateChannel(StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  auto check = [&](const std::string& service, std::string* response_bytes) {
    const std::string request = service.empty() ? "" : StrCat("\x0a", std::string(1, char(service.size())), service);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice slice(request);
    grpc::ByteBuffer req(&slice, 1), resp;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &req, &resp,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    const grpc::Status s = done.get_future().get();
    std::vector<grpc::Slice> slices;
    response_bytes->clear();
    if (s.ok() && resp.Dump(&slices).ok())
      for (const auto& sl : slices) response_bytes->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    return s;
  };
  for (const std::string service : {"", "tensorflow.serving.PredictionService", "tensorflow.serving.ModelService"}) {
    std::string bytes;
    const grpc::Status s = check(service, &bytes);
    ASSERT_TRUE(s.ok()) << "'" << service << "': " << s.error_code() << " " << s.error_message();
    EXPECT_EQ(bytes, std::string("\x08\x01", 2)) << "'" << service << "' is not SERVING";
  }
  std::string bytes;
  EXPECT_EQ(check("no.such.Service", &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcE2eTest, ClassifyRegressMultiInference) {
  {
    pb::ClassificationRequest req;
    req.mutable_model_spec()->set_name("scorer");
    *req.mutable_input() = Examples({{{"age", 2}, {"spend", 4}}});
    grpc::ClientContext ctx;
    pb::ClassificationResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().Classify(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.result().classifications_size(), 1);
    ASSERT_EQ(resp.result().classifications(0).classes_size(), 2);
    EXPECT_EQ(resp.result().classifications(0).classes(0).label(), "");
    EXPECT_FLOAT_EQ(resp.result().classifications(0).classes(0).score(), 2.0f);
    EXPECT_FLOAT_EQ(resp.result().classifications(0).classes(1).score(), 3.0f);
    EXPECT_EQ(resp.model_spec().name(), "scorer");
    EXPECT_EQ(resp.model_spec().version().value(), 1);
  }
  {
    pb::RegressionRequest req;
    req.mutable_model_spec()->set_name("half");
    *req.mutable_input() = Examples({{{"x", 1.5f}}, {{"x", 3}}});
    grpc::ClientContext ctx;
    pb::RegressionResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().Regress(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.result().regressions_size(), 2);
    EXPECT_FLOAT_EQ(resp.result().regressions(0).value(), 2.75f);
    EXPECT_FLOAT_EQ(resp.result().regressions(1).value(), 3.5f);
  }
  {
    pb::RegressionRequest req;
    req.mutable_model_spec()->set_name("scorer");
    *req.mutable_input() = Examples({{{"age", 2}, {"spend", 4}}});
    grpc::ClientContext ctx;
    pb::RegressionResponse resp;
    ExpectGrpcError(client_grpc_->prediction().Regress(&ctx, req, &resp), grpc::StatusCode::UNIMPLEMENTED,
                    "Regress is not available for model 'scorer'");
  }
  {
    pb::ClassificationRequest req;
    req.mutable_model_spec()->set_name("scorer");
    grpc::ClientContext ctx;
    pb::ClassificationResponse resp;
    ExpectGrpcError(client_grpc_->prediction().Classify(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                    "Input is empty.");
  }
  {
    pb::MultiInferenceRequest req;
    auto* task = req.add_tasks();
    task->mutable_model_spec()->set_name("scorer");
    task->set_method_name("tensorflow/serving/classify");
    *req.mutable_input() = Examples({{{"age", 1}, {"spend", 0}}});
    grpc::ClientContext ctx;
    pb::MultiInferenceResponse resp;
    ASSERT_TRUE(client_grpc_->prediction().MultiInference(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.results_size(), 1);
    EXPECT_FLOAT_EQ(resp.results(0).classification_result().classifications(0).classes(1).score(), -0.5f);
    auto* other = req.add_tasks();
    other->mutable_model_spec()->set_name("half");
    other->set_method_name("tensorflow/serving/regress");
    grpc::ClientContext ctx2;
    ExpectGrpcError(client_grpc_->prediction().MultiInference(&ctx2, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                    "All ModelSpecs in a MultiInferenceRequest must access the same model name.");
  }
}

TEST_F(GrpcE2eTest, GetModelMetadata) {
  pb::GetModelMetadataRequest req;
  req.mutable_model_spec()->set_name("iris");
  req.add_metadata_field("signature_def");
  grpc::ClientContext ctx;
  pb::GetModelMetadataResponse resp;
  ASSERT_TRUE(client_grpc_->prediction().GetModelMetadata(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.model_spec().name(), "iris");
  EXPECT_EQ(resp.model_spec().version().value(), 2);
  const auto& any = resp.metadata().at("signature_def");
  EXPECT_EQ(any.type_url(), "type.googleapis.com/tensorflow.serving.SignatureDefMap");
  pb::SignatureDefMap map;
  ASSERT_TRUE(any.UnpackTo(&map));
  const auto& sig = map.signature_def().at("serving_default");
  EXPECT_EQ(sig.method_name(), "tensorflow/serving/predict");
  const auto& in = sig.inputs().at("features");
  EXPECT_EQ(in.name(), "features");
  EXPECT_EQ(in.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(in.tensor_shape().dim_size(), 2);
  EXPECT_EQ(in.tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(in.tensor_shape().dim(1).size(), 4);
  EXPECT_EQ(sig.outputs().size(), 2u);
  grpc::ClientContext ctx2;
  req.set_metadata_field(0, "graph");
  ExpectGrpcError(client_grpc_->prediction().GetModelMetadata(&ctx2, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                  "Metadata field graph is not supported");
  grpc::ClientContext ctx3;
  req.clear_metadata_field();
  ExpectGrpcError(client_grpc_->prediction().GetModelMetadata(&ctx3, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                  "GetModelMetadataRequest must specify at least one metadata_field");
}

TEST_F(GrpcE2eTest, GetModelStatus) {
  pb::GetModelStatusRequest req;
  req.mutable_model_spec()->set_name("iris");
  grpc::ClientContext ctx;
  pb::GetModelStatusResponse resp;
  ASSERT_TRUE(client_grpc_->model().GetModelStatus(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.model_version_status_size(), 2);
  EXPECT_EQ(resp.model_version_status(0).version(), 2);
  EXPECT_EQ(resp.model_version_status(0).state(), pb::ModelVersionStatus::AVAILABLE);
  EXPECT_EQ(resp.model_version_status(0).status().error_code(), tensorflow::error::OK);
  EXPECT_EQ(resp.model_version_status(1).version(), 1);
  req.mutable_model_spec()->mutable_version()->set_value(1);
  grpc::ClientContext ctx2;
  ASSERT_TRUE(client_grpc_->model().GetModelStatus(&ctx2, req, &resp).ok());
  EXPECT_EQ(resp.model_version_status_size(), 1);
  grpc::ClientContext ctx3;
  ExpectGrpcError(client_grpc_->model().GetModelStatus(&ctx3, pb::GetModelStatusRequest(), &resp),
                  grpc::StatusCode::INVALID_ARGUMENT, "Missing ModelSpec");
  req.mutable_model_spec()->set_name("nope");
  grpc::ClientContext ctx4;
  ExpectGrpcError(client_grpc_->model().GetModelStatus(&ctx4, req, &resp), grpc::StatusCode::NOT_FOUND,
                  "Could not find any versions of model nope");
}

// Runs last in the suite (it changes the model list): HandleReloadConfigRequest replaces the list.
TEST_F(GrpcE2eTest, ZzHandleReloadConfigRequest) {
  pb::ReloadConfigRequest req;
  grpc::ClientContext ctx0;
  pb::ReloadConfigResponse resp;
  ExpectGrpcError(client_grpc_->model().HandleReloadConfigRequest(&ctx0, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                  "ServerModelConfig type not supported by HandleReloadConfigRequest. Only ModelConfigList is "
                  "currently supported");
  // Keep everything but "pair"; add "half2" (a copy of half) and ask for the load counter's increase.
  testing::WriteVersion(base_ + "/half2", 3, testing::HalfModel());
  auto* list = req.mutable_config()->mutable_model_config_list();
  for (const char* m : {"iris", "mlp", "half", "tagger", "scorer", "half2"}) {
    auto* c = list->add_config();
    c->set_name(m);
    c->set_base_path(base_ + "/" + m);
    c->set_model_platform("onnx");
    if (std::string(m) == "iris") {
      c->mutable_model_version_policy()->mutable_all();
      (*c->mutable_version_labels())["stable"] = 1;
      (*c->mutable_version_labels())["canary"] = 2;
    }
  }
  req.add_metric_names(":tensorflow:cc:saved_model:load_attempt_count");
  grpc::ClientContext ctx;
  grpc::Status s = client_grpc_->model().HandleReloadConfigRequest(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.status().error_code(), tensorflow::error::OK);
  ASSERT_EQ(resp.metric_size(), 1);
  EXPECT_EQ(resp.metric(0).int64_value_increase(), 1);  // half2 v3 was loaded before the call returned
  // The call returns once the new model is AVAILABLE.
  auto r = Rest("POST", "/v1/models/half2:predict", R"({"instances": [1.0]})");
  EXPECT_EQ(r.body, R"({"predictions": [2.5]})");
  // The removed model unloads.
  for (int i = 0; i < 400; ++i) {
    r = Rest("GET", "/v1/models/pair");
    if (r.body.find("\"END\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(r.body.find(R"("state": "END")"), std::string::npos) << r.body;
  r = Rest("POST", "/v1/models/pair:predict", R"({"instances": [{"a": [1, 2], "b": [1, 2]}]})");
  EXPECT_EQ(r.status, 404);
}

}  // namespace
}  // namespace strata::serve
