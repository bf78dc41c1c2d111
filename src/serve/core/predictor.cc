#include "serve/core/predictor.h"

#include <algorithm>
#include <set>

#include "serve/metrics.h"

namespace strata::serve {

using Clock = std::chrono::steady_clock;

StatusOr<std::shared_ptr<const Servable>> Predictor::Resolve(const ModelSpec& spec) const {
  if (spec.name.empty()) return InvalidArgumentError("ModelSpec has no name specified.");
  return manager_->Acquire(spec.name, spec.version, spec.version_label);
}

StatusOr<const SignatureDef*> Predictor::ResolveSignature(const Servable& servable, const std::string& key) {
  const SignatureDef* sig = servable.FindSignature(key);
  if (!sig) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : servable.signatures()) keys.push_back(k);
    return FailedPreconditionError("Serving signature key \"", key, "\" not found. (model '", servable.name(),
                                   "' version ", servable.version(), " has ", StrJoin(keys, ", "), ")");
  }
  return sig;
}

namespace {

std::string Braced(const std::vector<std::string>& names) { return StrCat("{", StrJoin(names, ","), "}"); }

std::string ExpectedInputs(const SignatureDef& sig) {
  std::vector<std::string> parts;
  for (const auto& in : sig.inputs)
    parts.push_back(StrCat("'", in.alias, "' ", DTypeName(in.dtype), in.shape.ToString()));
  return StrJoin(parts, ", ");
}

Status CheckNames(const Servable& servable, const SignatureDef& sig, const NamedTensors& inputs) {
  std::vector<std::string> sent, expected, extra, missing;
  std::set<std::string> sent_set;
  for (const auto& [alias, t] : inputs) {
    sent.push_back(alias);
    if (!sent_set.insert(alias).second) return InvalidArgumentError("duplicate input tensor alias: ", alias);
  }
  for (const auto& in : sig.inputs) {
    expected.push_back(in.alias);
    if (!sent_set.count(in.alias)) missing.push_back(in.alias);
  }
  for (const auto& a : sent)
    if (!sig.FindInput(a)) extra.push_back(a);
  if (extra.empty() && missing.empty()) return Status::OK();
  std::sort(sent.begin(), sent.end());
  std::sort(expected.begin(), expected.end());
  std::string hint;
  for (const auto& e : extra) {
    const std::string closest = ClosestName(e, missing.empty() ? expected : missing);
    if (!closest.empty()) hint += StrCat(" Did you mean '", closest, "' instead of '", e, "'?");
  }
  const std::string where = StrCat(" Model '", servable.name(), "' version ", servable.version(), " expects inputs ",
                                   ExpectedInputs(sig), ".");
  if (sent.size() != expected.size())
    return InvalidArgumentError("input size does not match signature: ", sent.size(), "!=", expected.size(), " len(",
                                Braced(sent), ") != len(", Braced(expected), "). Sent extra: ", Braced(extra),
                                ". Missing but required: ", Braced(missing), ".", hint, where);
  return InvalidArgumentError("input tensor alias not found in signature: ", StrJoin(extra, ","),
                              ". Inputs expected to be in the set ", Braced(expected), ".", hint, where);
}

}  // namespace

StatusOr<NamedTensors> Predictor::ValidateInputs(const Servable& servable, const std::string& signature_key,
                                                 const SignatureDef& sig, NamedTensors inputs) {
  STRATA_RETURN_IF_ERROR(CheckNames(servable, sig, inputs));
  NamedTensors feeds;
  feeds.reserve(inputs.size());
  for (auto& [alias, t] : inputs) {
    const TensorInfo* info = sig.FindInput(alias);
    if (!t.defined()) return InvalidArgumentError("input '", alias, "' has no value");
    const bool dtype_ok = info->dtype == DType::kUndefined || t.dtype() == info->dtype;
    if (!dtype_ok || (sig.strict_shapes && !info->shape.Accepts(t.shape()))) {
      return InvalidArgumentError("input '", alias, "' of model '", servable.name(), "' version ", servable.version(),
                                  " (signature '", signature_key, "') expects shape ", info->shape.ToString(),
                                  " and dtype ", DTypeName(info->dtype), " (", TfDataTypeName(TfDataTypeOf(info->dtype)),
                                  "), got shape ", t.shape().ToString(), " and dtype ", DTypeName(t.dtype()), " (",
                                  TfDataTypeName(TfDataTypeOf(t.dtype())), ")");
    }
    feeds.emplace_back(info->name, std::move(t));
  }
  return feeds;
}

void Predictor::Predict(PredictRequest request, PredictDone done) {
  auto servable = Resolve(request.model_spec);
  if (!servable.ok()) return done(servable.status(), {});
  PredictWith(std::move(servable).value(), std::move(request), std::move(done));
}

void Predictor::PredictWith(std::shared_ptr<const Servable> servable, PredictRequest request, PredictDone done) {
  auto sig_or = ResolveSignature(*servable, request.model_spec.signature_name);
  if (!sig_or.ok()) return done(sig_or.status(), {});
  const SignatureDef* sig = *sig_or;
  const std::string sig_key = request.model_spec.signature_name.empty() ? kDefaultSignature
                                                                        : request.model_spec.signature_name;
  auto feeds = ValidateInputs(*servable, sig_key, *sig, std::move(request.inputs));
  if (!feeds.ok()) return done(feeds.status(), {});
  // Output selection by alias.
  std::vector<const TensorInfo*> outputs;
  if (request.output_filter.empty()) {
    for (const auto& o : sig->outputs) outputs.push_back(&o);
  } else {
    std::set<std::string> seen;
    std::vector<std::string> all;
    for (const auto& o : sig->outputs) all.push_back(o.alias);
    for (const std::string& alias : request.output_filter) {
      const TensorInfo* o = sig->FindOutput(alias);
      if (!o)
        return done(InvalidArgumentError("output tensor alias not found in signature: ", alias,
                                         " Outputs expected to be in the set ", Braced(all), "."),
                    {});
      if (!seen.insert(alias).second) return done(InvalidArgumentError("duplicate output tensor alias: ", alias), {});
      outputs.push_back(o);
    }
  }
  std::vector<std::string> fetch;
  for (const TensorInfo* o : outputs) fetch.push_back(o->name);
  if (Clock::now() >= request.deadline)
    return done(DeadlineExceededError("the request's deadline passed before the model ran"), {});

  PredictResponse base;
  base.model_spec.name = servable->name();
  base.model_spec.version = servable->version();
  base.model_spec.signature_name = sig_key;
  const auto t0 = Clock::now();
  auto finish = [this, servable, outputs, base, t0, done = std::move(done)](Status s, std::vector<Tensor> outs) mutable {
    if (metrics_ && s.ok())
      metrics_->runtime_latency.Observe(
          {servable->name(), "Predict", "strata"},
          static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
    if (!s.ok()) {
      if (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kResourceExhausted)
        s = Status(s.code(), StrCat("model '", servable->name(), "' version ", servable->version(), ": ", s.message()));
      return done(std::move(s), {});
    }
    PredictResponse resp = std::move(base);
    for (size_t i = 0; i < outputs.size() && i < outs.size(); ++i)
      resp.outputs.emplace_back(outputs[i]->alias, std::move(outs[i]));
    done(Status::OK(), std::move(resp));
  };
  if (batcher_) {
    batcher_->Schedule(servable, std::move(feeds).value(), std::move(fetch), request.deadline, std::move(finish));
    return;
  }
  std::vector<Tensor> outs;
  Status s = servable->Run(*feeds, fetch, &outs);
  finish(std::move(s), std::move(outs));
}

}  // namespace strata::serve
