// Dataset::SampleFromDatasets: each element comes from input i with probability weights[i] (normalised over the
// inputs not yet exhausted). The choices are a pure function of (seed) or, with rerandomize_each_iteration, of
// (seed, epoch).
#include <cmath>
#include <numeric>

#include "core/random.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

class SampleNode final : public internal::DatasetNode {
 public:
  SampleNode(std::vector<Dataset> inputs, SampleOptions options, std::vector<double> weights)
      : DatasetNode(StrCat("sample_from_datasets(", inputs.size(), " inputs)"), std::move(inputs)),
        options_(std::move(options)),
        weights_(std::move(weights)),
        fixed_seed_(options_.seed ? *options_.seed : internal::RandomSeed()) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    std::vector<std::unique_ptr<Iterator>> its;
    for (const Dataset& d : inputs()) {
      STRATA_ASSIGN_OR_RETURN(auto it, d.node()->MakeIterator(options));
      its.push_back(std::move(it));
    }
    uint64_t seed = fixed_seed_;
    if (options_.rerandomize_each_iteration)
      seed = options_.seed ? internal::MixSeeds(*options_.seed, static_cast<uint64_t>(options.epoch)) : internal::RandomSeed();
    return std::unique_ptr<Iterator>(new It(this, std::move(its), seed));
  }

 private:
  class It final : public Iterator {
   public:
    It(const SampleNode* node, std::vector<std::unique_ptr<Iterator>> inputs, uint64_t seed)
        : node_(node), inputs_(std::move(inputs)), weights_(node->weights_), rng_(seed) {}

    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
        if (done_ || total <= 0) return false;
        double u = rng_.UniformDouble() * total;
        size_t pick = 0;
        for (size_t i = 0; i < weights_.size(); ++i) {
          if (weights_[i] <= 0) continue;
          pick = i;  // the last positive weight also absorbs rounding at the top end
          if (u < weights_[i]) break;
          u -= weights_[i];
        }
        auto more = inputs_[pick]->GetNext(out);
        if (!more.ok()) return std::move(more).status().WithContext(StrCat("sample_from_datasets input ", pick));
        if (*more) return true;
        if (node_->options_.stop_on_empty_dataset) {
          done_ = true;
          return false;
        }
        weights_[pick] = 0;  // exhausted: sample among the others
      }
    }

   private:
    const SampleNode* node_;
    std::vector<std::unique_ptr<Iterator>> inputs_;
    std::vector<double> weights_;
    Rng rng_;
    bool done_ = false;
  };

  SampleOptions options_;
  std::vector<double> weights_;
  uint64_t fixed_seed_;
};

}  // namespace

Dataset Dataset::SampleFromDatasets(std::vector<Dataset> datasets, SampleOptions options) {
  if (datasets.empty()) return internal::ErrorDataset(InvalidArgumentError("sample_from_datasets: no datasets given"));
  std::vector<double> weights = options.weights;
  if (weights.empty()) weights.assign(datasets.size(), 1.0);
  if (weights.size() != datasets.size())
    return internal::ErrorDataset(InvalidArgumentError("sample_from_datasets: ", weights.size(), " weights for ",
                                                       datasets.size(), " datasets"));
  for (double w : weights)
    if (!(w >= 0) || std::isinf(w))
      return internal::ErrorDataset(InvalidArgumentError("sample_from_datasets: weights must be finite and >= 0, got ",
                                                         weights));
  return internal::MakeDataset<SampleNode>(std::move(datasets), std::move(options), std::move(weights));
}

}  // namespace strata::data
