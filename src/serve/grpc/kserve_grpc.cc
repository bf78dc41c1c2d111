#include "serve/grpc/kserve_grpc.h"

#include <charconv>
#include <cstring>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "serve/api/kserve_codec.h"
#include "serve/grpc/grpc_services.h"

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;
namespace v2 = inference;

// The protocol's version strings: "" = the default version, else a positive integer.
StatusOr<ModelSpec> SpecFrom(const std::string& name, const std::string& version) {
  if (name.empty()) return InvalidArgumentError("the request names no model (field 'name' / 'model_name' is empty)");
  ModelSpec spec;
  spec.name = name;
  if (!version.empty()) {
    int64_t v = 0;
    auto r = std::from_chars(version.data(), version.data() + version.size(), v);
    if (r.ec != std::errc() || r.ptr != version.data() + version.size() || v <= 0)
      return InvalidArgumentError("model version must be a positive integer or empty (the latest), found '", version,
                                  "'");
    spec.version = v;
  }
  return spec;
}

// Copies one typed contents field into `t`, checking its element count against the shape.
template <typename T, typename Field>
Status FillFrom(const Field& field, const std::string& input, const std::string& datatype, const char* field_name,
                Tensor* t) {
  const int64_t n = t->num_elements();
  if (static_cast<int64_t>(field.size()) != n)
    return InvalidArgumentError("input '", input, "' (", datatype, ", shape ", t->shape().ToString(), ") needs ", n,
                                " elements, contents.", field_name, " holds ", field.size());
  T* out = t->data<T>();
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(field[static_cast<int>(i)]);
  return Status::OK();
}

// The input's elements from its typed contents field (the field of its datatype; the others must be empty).
Status FillFromContents(const v2::InferTensorContents& c, const std::string& input, const std::string& datatype,
                        Tensor* t) {
  switch (t->dtype()) {
    case DType::kBool: return FillFrom<bool>(c.bool_contents(), input, datatype, "bool_contents", t);
    case DType::kInt8: return FillFrom<int8_t>(c.int_contents(), input, datatype, "int_contents", t);
    case DType::kInt16: return FillFrom<int16_t>(c.int_contents(), input, datatype, "int_contents", t);
    case DType::kInt32: return FillFrom<int32_t>(c.int_contents(), input, datatype, "int_contents", t);
    case DType::kInt64: return FillFrom<int64_t>(c.int64_contents(), input, datatype, "int64_contents", t);
    case DType::kUInt8: return FillFrom<uint8_t>(c.uint_contents(), input, datatype, "uint_contents", t);
    case DType::kUInt16: return FillFrom<uint16_t>(c.uint_contents(), input, datatype, "uint_contents", t);
    case DType::kUInt32: return FillFrom<uint32_t>(c.uint_contents(), input, datatype, "uint_contents", t);
    case DType::kUInt64: return FillFrom<uint64_t>(c.uint64_contents(), input, datatype, "uint64_contents", t);
    case DType::kFloat32: return FillFrom<float>(c.fp32_contents(), input, datatype, "fp32_contents", t);
    case DType::kFloat64: return FillFrom<double>(c.fp64_contents(), input, datatype, "fp64_contents", t);
    case DType::kString: {
      const int64_t n = t->num_elements();
      if (c.bytes_contents_size() != n)
        return InvalidArgumentError("input '", input, "' (BYTES, shape ", t->shape().ToString(), ") needs ", n,
                                    " elements, contents.bytes_contents holds ", c.bytes_contents_size());
      for (int64_t i = 0; i < n; ++i) t->data<std::string>()[i] = c.bytes_contents(static_cast<int>(i));
      return Status::OK();
    }
    default:
      return InvalidArgumentError("input '", input, "' (", datatype,
                                  "): this datatype has no typed contents field; send it in raw_input_contents");
  }
}

StatusOr<NamedTensors> InputsFrom(const v2::ModelInferRequest& req) {
  if (req.inputs_size() == 0) return InvalidArgumentError("the request has no inputs");
  const bool raw = req.raw_input_contents_size() > 0;
  if (raw && req.raw_input_contents_size() != req.inputs_size())
    return InvalidArgumentError("raw_input_contents has ", req.raw_input_contents_size(), " entries for ",
                                req.inputs_size(), " inputs; give one per input, in the order of 'inputs'");
  NamedTensors inputs;
  for (int i = 0; i < req.inputs_size(); ++i) {
    const auto& in = req.inputs(i);
    STRATA_ASSIGN_OR_RETURN(DType dtype, DTypeFromV2Datatype(in.datatype()));
    std::vector<int64_t> dims(in.shape().begin(), in.shape().end());
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0 || (d > 0 && count > (int64_t{1} << 40) / d))
        return InvalidArgumentError("input '", in.name(), "': shape dimensions must be non-negative and their ",
                                    "product at most 2^40, found ", Shape(dims).ToString());
      count *= d;
    }
    Tensor t = Tensor::Empty(dtype, Shape(dims));
    if (raw) {
      if (in.has_contents())
        return InvalidArgumentError("input '", in.name(), "' has both contents and raw_input_contents; give one");
      const std::string& bytes = req.raw_input_contents(i);
      if (dtype != DType::kString && bytes.size() != t.byte_size())
        return InvalidArgumentError("input '", in.name(), "' (", in.datatype(), ", shape ", t.shape().ToString(),
                                    ") needs ", t.byte_size(), " bytes, its raw_input_contents entry holds ",
                                    bytes.size());
      STRATA_RETURN_IF_ERROR(V2FillRaw(bytes, in.name(), in.datatype(), &t));
    } else {
      STRATA_RETURN_IF_ERROR(FillFromContents(in.contents(), in.name(), in.datatype(), &t));
    }
    inputs.emplace_back(in.name(), std::move(t));
  }
  return inputs;
}

void AddTensorMetadata(const std::vector<TensorInfo>& infos,
                       google::protobuf::RepeatedPtrField<v2::ModelMetadataResponse::TensorMetadata>* out) {
  for (const TensorInfo& info : infos) {
    auto* m = out->Add();
    m->set_name(info.alias);
    m->set_datatype(std::string(V2DatatypeName(info.dtype)));
    if (!info.shape.rank_known) m->add_shape(-1);
    for (const Dim& d : info.shape.dims) m->add_shape(d.known() ? d.value : -1);
  }
}

}  // namespace

grpc::Status InferenceServiceImpl::ServerLive(grpc::ServerContext*, const v2::ServerLiveRequest*,
                                              v2::ServerLiveResponse* resp) {
  resp->set_live(true);
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ServerReady(grpc::ServerContext*, const v2::ServerReadyRequest*,
                                               v2::ServerReadyResponse* resp) {
  std::string why;
  resp->set_ready(predictor_->manager()->AllReady(&why));
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ModelReady(grpc::ServerContext*, const v2::ModelReadyRequest* req,
                                              v2::ModelReadyResponse* resp) {
  auto spec = SpecFrom(req->name(), req->version());
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  // ready=false, not an error, for a model or version that is unknown or not loaded (as Triton answers).
  resp->set_ready(predictor_->Resolve(*spec).ok());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ServerMetadata(grpc::ServerContext*, const v2::ServerMetadataRequest*,
                                                  v2::ServerMetadataResponse* resp) {
  resp->set_name("strata");
  resp->set_version("0.1.0");
  resp->add_extensions("binary_tensor_data");
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ModelMetadata(grpc::ServerContext*, const v2::ModelMetadataRequest* req,
                                                 v2::ModelMetadataResponse* resp) {
  auto spec = SpecFrom(req->name(), req->version());
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  auto servable = predictor_->Resolve(*spec);
  if (!servable.ok()) return ToGrpcStatus(servable.status());
  auto sig = Predictor::ResolveSignature(**servable, "");
  if (!sig.ok()) return ToGrpcStatus(sig.status());
  resp->set_name(spec->name);
  auto status = predictor_->manager()->GetStatus(spec->name, std::nullopt);
  if (status.ok())
    for (const VersionStatus& v : *status)
      if (v.state == VersionState::kAvailable) resp->add_versions(std::to_string(v.version));
  resp->set_platform("onnx");  // every servable runs on strata's ONNX executor
  AddTensorMetadata((*sig)->inputs, resp->mutable_inputs());
  AddTensorMetadata((*sig)->outputs, resp->mutable_outputs());
  return grpc::Status::OK;
}

grpc::Status InferenceServiceImpl::ModelInfer(grpc::ServerContext* ctx, const v2::ModelInferRequest* req,
                                              v2::ModelInferResponse* resp) {
  const auto start = Clock::now();
  const std::string& model = req->model_name();
  auto count = [&](const Status& s) {
    if (metrics_) metrics_->CountRequest(model, s, "infer", "GRPC", start);
    return ToGrpcStatus(s);
  };
  auto spec = SpecFrom(model, req->model_version());
  if (!spec.ok()) return count(spec.status());
  auto servable = predictor_->Resolve(*spec);
  if (!servable.ok()) return count(servable.status());
  auto inputs = InputsFrom(*req);
  if (!inputs.ok())
    return count(Status(inputs.status().code(), StrCat("model '", model, "': ", inputs.status().message())));
  PredictRequest request;
  request.model_spec = *spec;
  request.deadline = ClientDeadline(ctx);
  request.inputs = std::move(inputs).value();
  for (const auto& o : req->outputs()) request.output_filter.push_back(o.name());
  std::promise<std::pair<Status, PredictResponse>> promise;
  auto future = promise.get_future();
  predictor_->PredictWith(std::move(servable).value(), std::move(request),
                          [&promise](Status s, PredictResponse r) { promise.set_value({std::move(s), std::move(r)}); });
  auto [status, response] = future.get();
  if (!status.ok()) return count(status);
  resp->set_model_name(response.model_spec.name);
  resp->set_model_version(std::to_string(response.model_spec.version.value_or(0)));
  resp->set_id(req->id());
  // Every output in raw_output_contents, as Triton answers; the clients read raw outputs by position.
  for (const auto& [name, t] : response.outputs) {
    auto* o = resp->add_outputs();
    o->set_name(name);
    o->set_datatype(std::string(V2DatatypeName(t.dtype())));
    for (int64_t d : t.shape().ToVector()) o->add_shape(d);
    AppendV2Raw(t, resp->add_raw_output_contents());
  }
  return count(Status::OK());
}

}  // namespace strata::serve
