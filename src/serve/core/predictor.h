// The transport-neutral serving logic shared by REST, gRPC and warmup: resolve a ModelSpec to a servable and a
// signature, validate inputs against it, run (through the batcher when batching is on) and shape the response.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "serve/api/request.h"
#include "serve/core/batcher.h"
#include "serve/core/manager.h"

namespace strata::serve {

class ServingMetrics;

class Predictor {
 public:
  using PredictDone = std::function<void(Status, PredictResponse)>;

  // `batcher` may be null (no batching); `metrics` may be null.
  Predictor(ModelManager* manager, BatchScheduler* batcher, ServingMetrics* metrics)
      : manager_(manager), batcher_(batcher), metrics_(metrics) {}

  // ModelSpec → servable ("ModelSpec has no name specified." for an empty name).
  StatusOr<std::shared_ptr<const Servable>> Resolve(const ModelSpec& spec) const;
  // Signature key → signature (gRPC wording: FAILED_PRECONDITION 'Serving signature key "k" not found.').
  static StatusOr<const SignatureDef*> ResolveSignature(const Servable& servable, const std::string& key);

  // Resolves, validates and runs. `done` runs exactly once, possibly on another thread.
  void Predict(PredictRequest request, PredictDone done);
  // As Predict with the servable already resolved (REST resolves it first to parse JSON by the signature's dtypes).
  void PredictWith(std::shared_ptr<const Servable> servable, PredictRequest request, PredictDone done);

  Status Classify(const ClassifyRequest& request, ClassifyResponse* response);
  Status Regress(const RegressRequest& request, RegressResponse* response);
  // The same with a resolved servable (warmup runs against the version being loaded).
  Status ClassifyWith(const Servable& servable, const ClassifyRequest& request, ClassifyResponse* response);
  Status RegressWith(const Servable& servable, const RegressRequest& request, RegressResponse* response);

  // Checks request inputs against a signature: names (TF Serving's messages plus the closest expected name), then
  // dtype and shape (naming model, version, input, expected and actual). Returns the feeds keyed by graph name.
  static StatusOr<NamedTensors> ValidateInputs(const Servable& servable, const std::string& signature_key,
                                               const SignatureDef& sig, NamedTensors inputs);

  ModelManager* manager() const { return manager_; }
  ServingMetrics* metrics() const { return metrics_; }

 private:
  // Feeds built from tf.Examples for Classify/Regress; `why_not` is the signature's reason when it cannot serve.
  StatusOr<std::vector<Tensor>> RunExamples(const Servable& servable, const std::string& method,
                                            const ModelSpec& spec, const ExampleInput& input,
                                            const std::vector<std::string>& fetch, Deadline deadline);

  ModelManager* manager_;
  BatchScheduler* batcher_;
  ServingMetrics* metrics_;
};

}  // namespace strata::serve
