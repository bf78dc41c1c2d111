// Classify and Regress: tf.Examples mapped onto ONNX inputs by feature name (see signature.h, ExampleMapping).
#include <cmath>

#include "serve/core/predictor.h"
#include "serve/metrics.h"

namespace strata::serve {

namespace {

const Feature* FindFeature(const Example& ex, const std::optional<Example>& context, const std::string& name) {
  auto it = ex.find(name);
  if (it != ex.end()) return &it->second;
  if (context) {
    auto c = context->find(name);
    if (c != context->end()) return &c->second;
  }
  return nullptr;
}

std::string_view KindName(Feature::Kind k) {
  switch (k) {
    case Feature::Kind::kBytes: return "bytes_list";
    case Feature::Kind::kFloat: return "float_list";
    case Feature::Kind::kInt64: return "int64_list";
    case Feature::Kind::kNone: return "no value";
  }
  return "?";
}

// Writes feature `f` (k values) into row `row` of `t`.
Status FillRow(const Feature& f, const TensorInfo& in, int64_t k, int64_t row, Tensor* t) {
  auto mismatch = [&]() {
    return InvalidArgumentError("feature '", in.alias, "' is a ", KindName(f.kind), ", but input '", in.alias, "' is ",
                                DTypeName(in.dtype));
  };
  const int64_t base = row * k;
  switch (in.dtype) {
    case DType::kFloat32:
    case DType::kFloat64: {
      if (f.kind != Feature::Kind::kFloat && f.kind != Feature::Kind::kInt64) return mismatch();
      for (int64_t i = 0; i < k; ++i) {
        const double v = f.kind == Feature::Kind::kFloat ? f.floats[i] : static_cast<double>(f.ints[i]);
        if (in.dtype == DType::kFloat32)
          t->data<float>()[base + i] = static_cast<float>(v);
        else
          t->data<double>()[base + i] = v;
      }
      return Status::OK();
    }
    case DType::kInt64:
    case DType::kInt32: {
      if (f.kind != Feature::Kind::kInt64) return mismatch();
      for (int64_t i = 0; i < k; ++i) {
        if (in.dtype == DType::kInt64)
          t->data<int64_t>()[base + i] = f.ints[i];
        else
          t->data<int32_t>()[base + i] = static_cast<int32_t>(f.ints[i]);
      }
      return Status::OK();
    }
    case DType::kString: {
      if (f.kind != Feature::Kind::kBytes) return mismatch();
      for (int64_t i = 0; i < k; ++i) t->data<std::string>()[base + i] = f.bytes[i];
      return Status::OK();
    }
    default:
      return mismatch();
  }
}

double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    case DType::kBFloat16: return static_cast<float>(t.data<BFloat16>()[i]);
    default: return NAN;
  }
}

std::string LabelAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kString: return t.data<std::string>()[i];
    case DType::kInt64: return std::to_string(t.data<int64_t>()[i]);
    case DType::kInt32: return std::to_string(t.data<int32_t>()[i]);
    case DType::kUInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::kInt8: return std::to_string(t.data<int8_t>()[i]);
    case DType::kInt16: return std::to_string(t.data<int16_t>()[i]);
    case DType::kUInt16: return std::to_string(t.data<uint16_t>()[i]);
    case DType::kUInt32: return std::to_string(t.data<uint32_t>()[i]);
    case DType::kUInt64: return std::to_string(t.data<uint64_t>()[i]);
    default: return "";
  }
}

}  // namespace

StatusOr<std::vector<Tensor>> Predictor::RunExamples(const Servable& servable, const std::string& method,
                                                     const ModelSpec& spec, const ExampleInput& input,
                                                     const std::vector<std::string>& fetch, Deadline deadline) {
  const int64_t n = static_cast<int64_t>(input.examples.size());
  if (n == 0) return InvalidArgumentError("Input is empty.");
  auto sig_or = ResolveSignature(servable, spec.signature_name);
  if (!sig_or.ok()) return sig_or.status();
  const SignatureDef& sig = **sig_or;
  NamedTensors feeds;
  const std::vector<TensorInfo>& feature_inputs = sig.examples.FeatureInputs(sig.inputs);
  for (size_t i = 0; i < feature_inputs.size(); ++i) {
    const TensorInfo& in = feature_inputs[i];
    const int64_t k = sig.examples.feature_sizes[i];
    Shape shape;
    shape.PushBack(n);
    for (size_t d = 1; d < in.shape.dims.size(); ++d) shape.PushBack(in.shape.dims[d].value);
    STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(in.dtype, shape));
    for (int64_t row = 0; row < n; ++row) {
      const Feature* f = FindFeature(input.examples[row], input.context, in.alias);
      if (!f)
        return InvalidArgumentError("example ", row, " has no feature '", in.alias, "' (", method, " feeds input '",
                                    in.alias, "' of model '", servable.name(), "' version ", servable.version(),
                                    " from the feature of the same name, ", k, " value", k == 1 ? "" : "s",
                                    " per example)");
      if (static_cast<int64_t>(f->size()) != k)
        return InvalidArgumentError("feature '", in.alias, "' of example ", row, " has ", f->size(),
                                    " values; input '", in.alias, "' of model '", servable.name(), "' version ",
                                    servable.version(), " has shape ", in.shape.ToString(), ", so each example needs ",
                                    k);
      Status s = FillRow(*f, in, k, row, &t);
      if (!s.ok()) return InvalidArgumentError("example ", row, ": ", s.message());
    }
    feeds.emplace_back(in.name, std::move(t));
  }
  if (std::chrono::steady_clock::now() >= deadline)
    return DeadlineExceededError("the request's deadline passed before the model ran");
  std::vector<Tensor> outs;
  STRATA_RETURN_IF_ERROR(servable.Run(feeds, fetch, &outs));
  for (const Tensor& o : outs)
    if (o.rank() < 1 || o.dim(0) != n)
      return InvalidArgumentError(method, ": output of model '", servable.name(), "' has shape ", o.shape().ToString(),
                                  ", expected ", n, " rows (one per example)");
  if (metrics_) {
    metrics_->request_example_counts.Observe({servable.name()}, static_cast<double>(n));
    metrics_->request_example_count_total.Add({servable.name()}, n);
  }
  return outs;
}

Status Predictor::Classify(const ClassifyRequest& request, ClassifyResponse* response) {
  STRATA_ASSIGN_OR_RETURN(auto servable, Resolve(request.model_spec));
  return ClassifyWith(*servable, request, response);
}

Status Predictor::Regress(const RegressRequest& request, RegressResponse* response) {
  STRATA_ASSIGN_OR_RETURN(auto servable, Resolve(request.model_spec));
  return RegressWith(*servable, request, response);
}

Status Predictor::ClassifyWith(const Servable& servable, const ClassifyRequest& request, ClassifyResponse* response) {
  STRATA_ASSIGN_OR_RETURN(const SignatureDef* sig, ResolveSignature(servable, request.model_spec.signature_name));
  if (!sig->examples.classify)
    return UnimplementedError("Classify is not available for model '", servable.name(), "' version ",
                              servable.version(), " signature '", request.model_spec.signature_name.empty()
                                                                       ? kDefaultSignature
                                                                       : request.model_spec.signature_name,
                              "': ", sig->examples.classify_why_not, ". Use Predict instead.");
  std::vector<std::string> fetch = {sig->FindOutput(sig->examples.scores_output)->name};
  if (!sig->examples.classes_output.empty()) fetch.push_back(sig->FindOutput(sig->examples.classes_output)->name);
  STRATA_ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                          RunExamples(servable, "Classify", request.model_spec, request.input, fetch, request.deadline));
  const Tensor& scores = outs[0];
  const int64_t n = scores.dim(0);
  const int64_t k = scores.rank() >= 2 ? scores.num_elements() / std::max<int64_t>(n, 1) : 1;
  if (outs.size() > 1 && outs[1].num_elements() != scores.num_elements())
    return InvalidArgumentError("Classify: classes output has shape ", outs[1].shape().ToString(),
                                " but scores output has shape ", scores.shape().ToString());
  response->classifications.assign(n, {});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      response->classifications[i].emplace_back(outs.size() > 1 ? LabelAt(outs[1], i * k + j) : std::string(),
                                                static_cast<float>(ValueAt(scores, i * k + j)));
  response->model_spec = {servable.name(), servable.version(), "",
                          request.model_spec.signature_name.empty() ? kDefaultSignature
                                                                    : request.model_spec.signature_name};
  return Status::OK();
}

Status Predictor::RegressWith(const Servable& servable, const RegressRequest& request, RegressResponse* response) {
  STRATA_ASSIGN_OR_RETURN(const SignatureDef* sig, ResolveSignature(servable, request.model_spec.signature_name));
  if (!sig->examples.regress)
    return UnimplementedError("Regress is not available for model '", servable.name(), "' version ",
                              servable.version(), " signature '", request.model_spec.signature_name.empty()
                                                                       ? kDefaultSignature
                                                                       : request.model_spec.signature_name,
                              "': ", sig->examples.regress_why_not, ". Use Predict instead.");
  std::vector<std::string> fetch = {sig->FindOutput(sig->examples.regress_output)->name};
  STRATA_ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                          RunExamples(servable, "Regress", request.model_spec, request.input, fetch, request.deadline));
  const Tensor& out = outs[0];
  const int64_t n = out.dim(0);
  if (out.num_elements() != n)
    return InvalidArgumentError("Regress: output of model '", servable.name(), "' has shape ", out.shape().ToString(),
                                "; regression needs one value per example");
  response->values.resize(n);
  for (int64_t i = 0; i < n; ++i) response->values[i] = static_cast<float>(ValueAt(out, i));
  response->model_spec = {servable.name(), servable.version(), "",
                          request.model_spec.signature_name.empty() ? kDefaultSignature
                                                                    : request.model_spec.signature_name};
  return Status::OK();
}

}  // namespace strata::serve
