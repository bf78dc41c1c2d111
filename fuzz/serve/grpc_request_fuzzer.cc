// libFuzzer target: gRPC request conversion. The first byte picks the message the rest is parsed as:
//   0: PredictRequest → request struct (TensorProto decoding) → input validation against a signature;
//   1: ClassificationRequest → tf.Example input;
//   2: PredictionLog (a warmup record) → the request inside it;
//   3: ModelServerConfig → model list (HandleReloadConfigRequest's input).
// Tensors are capped at 64 MiB so that shapes cannot exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/api/proto_codec.h"
#include "serve/core/predictor.h"
#include "tensorflow_serving/apis/prediction_log.pb.h"

namespace {

using namespace strata;         // NOLINT
using namespace strata::serve;  // NOLINT

constexpr int64_t kMaxTensorBytes = 64 << 20;

const Servable& FakeServable() {
  // A servable whose signature has float, int64 and string inputs; only its signature is used (no Run).
  static const std::shared_ptr<Servable> s = [] {
    graph::Model m;
    m.opset_imports[""] = 17;
    m.graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(-1), Dim(4)})});
    m.graph.inputs.push_back({"ids", DType::kInt64, PartialShape::Of({Dim(-1)})});
    m.graph.outputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(-1), Dim(4)})});
    auto session = graph::Session::Create(std::make_shared<graph::Model>(m));
    STRATA_CHECK_OK(session.status());
    return Servable::FromSession("fuzz", 1, "/nowhere", std::move(session).value());
  }();
  return *s;
}

void Predict(const tensorflow::serving::PredictRequest& proto) {
  auto req = PredictRequestFromProto(proto, kMaxTensorBytes);
  if (!req.ok()) return;
  tensorflow::serving::PredictResponse out;
  PredictResponse resp;
  resp.model_spec = req->model_spec;
  resp.outputs = req->inputs;
  PredictResponseToProto(resp, req->inputs.size() % 2 == 0, &out);
  const SignatureDef* sig = FakeServable().FindSignature(req->model_spec.signature_name);
  if (sig) (void)Predictor::ValidateInputs(FakeServable(), "serving_default", *sig, std::move(req->inputs));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: {
      tensorflow::serving::PredictRequest p;
      if (p.ParseFromString(bytes)) Predict(p);
      break;
    }
    case 1: {
      tensorflow::serving::ClassificationRequest p;
      if (p.ParseFromString(bytes)) (void)ExampleInputFromProto(p.input());
      break;
    }
    case 2: {
      tensorflow::serving::PredictionLog p;
      if (!p.ParseFromString(bytes)) break;
      if (p.has_predict_log()) Predict(p.predict_log().request());
      if (p.has_classify_log()) (void)ExampleInputFromProto(p.classify_log().request().input());
      if (p.has_regress_log()) (void)ExampleInputFromProto(p.regress_log().request().input());
      break;
    }
    case 3: {
      tensorflow::serving::ModelServerConfig p;
      if (p.ParseFromString(bytes)) (void)ModelConfigsFromProto(p);
      break;
    }
  }
  return 0;
}
