// Dataset::RebalanceClasses: moves the class distribution toward a target, for long-tailed data. With r_c =
// target_c / initial_c (initial given, or estimated from the labels seen so far with add-one smoothing):
//   undersample: keep an element of class c with probability r_c / max r (rejection sampling, as TF's
//                rejection_resample); the output follows the target, at the cost of dropping head-class data;
//   oversample:  emit it ⌊m_c⌋ or ⌈m_c⌉ times (expected m_c = r_c / min r >= 1, repeat-factor sampling); keeps every
//                element and repeats tail classes; put a Shuffle after it to spread the copies.
// Random choices are a pure function of (seed, epoch).
#include <algorithm>
#include <cmath>

#include "core/random.h"
#include "data/dataset_impl.h"

namespace strata::data {
namespace {

StatusOr<int64_t> LabelOf(const Element& e, const std::string& key, int64_t num_classes) {
  STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(key));
  if (t.num_elements() != 1 || !IsInteger(t.dtype()))
    return InvalidArgumentError("rebalance_classes: label '", key, "' must be an integer scalar, got ", t.TypeString());
  int64_t v = 0;
  switch (t.dtype()) {
    case DType::kInt64: v = t.data<int64_t>()[0]; break;
    case DType::kInt32: v = t.data<int32_t>()[0]; break;
    case DType::kUInt8: v = t.data<uint8_t>()[0]; break;
    default: return InvalidArgumentError("rebalance_classes: label dtype ", DTypeName(t.dtype()), " is not supported");
  }
  if (v < 0 || v >= num_classes)
    return InvalidArgumentError("rebalance_classes: label ", v, " is outside [0, ", num_classes, ")");
  return v;
}

class RebalanceNode final : public internal::DatasetNode {
 public:
  RebalanceNode(Dataset input, RebalanceOptions options)
      : DatasetNode(StrCat("rebalance_classes(", options.mode == RebalanceOptions::Mode::kUndersample ? "undersample" : "oversample",
                           ")"),
                    {std::move(input)}),
        options_(std::move(options)),
        seed_(options_.seed ? *options_.seed : internal::RandomSeed()) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(
        new It(this, std::move(input), internal::MixSeeds(seed_, static_cast<uint64_t>(options.epoch))));
  }

 private:
  class It final : public Iterator {
   public:
    It(const RebalanceNode* node, std::unique_ptr<Iterator> input, uint64_t seed)
        : node_(node), input_(std::move(input)), rng_(seed), seen_(node->options_.num_classes, 0) {}

    StatusOr<bool> GetNext(Element* out) override {
      if (repeats_ > 0) {
        --repeats_;
        *out = pending_;
        return true;
      }
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
        if (!more) return false;
        auto label = LabelOf(*out, node_->options_.label, node_->options_.num_classes);
        if (!label.ok()) return internal::WithElementContext(std::move(label).status(), "rebalance_classes", *out);
        ++seen_[*label];
        ++total_;
        const std::vector<double> r = Ratios();
        const double rc = r[*label];
        if (node_->options_.mode == RebalanceOptions::Mode::kUndersample) {
          const double top = *std::max_element(r.begin(), r.end());
          if (top > 0 && rng_.UniformDouble() < rc / top) return true;
          continue;
        }
        double low = 0;
        for (double x : r)
          if (x > 0 && (low == 0 || x < low)) low = x;
        const double m = low > 0 ? rc / low : 0;
        int64_t copies = static_cast<int64_t>(std::floor(m));
        if (rng_.UniformDouble() < m - std::floor(m)) ++copies;
        if (copies == 0) continue;
        repeats_ = copies - 1;
        if (repeats_ > 0) pending_ = *out;
        return true;
      }
    }

   private:
    // target_c / initial_c for every class (0 where the target is 0).
    std::vector<double> Ratios() const {
      const auto& o = node_->options_;
      const auto c = static_cast<size_t>(o.num_classes);
      std::vector<double> r(c);
      for (size_t k = 0; k < c; ++k) {
        const double target = o.target.empty() ? 1.0 / static_cast<double>(c) : o.target[k];
        const double initial = o.initial.empty() ? (seen_[k] + 1.0) / (total_ + static_cast<double>(c)) : o.initial[k];
        r[k] = initial > 0 ? target / initial : 0;
      }
      return r;
    }

    const RebalanceNode* node_;
    std::unique_ptr<Iterator> input_;
    Rng rng_;
    std::vector<int64_t> seen_;
    int64_t total_ = 0;
    Element pending_;
    int64_t repeats_ = 0;
  };

  RebalanceOptions options_;
  uint64_t seed_;
};

Status CheckDistribution(const std::vector<double>& d, int64_t num_classes, const char* what) {
  if (d.empty()) return Status::OK();
  if (static_cast<int64_t>(d.size()) != num_classes)
    return InvalidArgumentError("rebalance_classes: ", what, " has ", d.size(), " entries for ", num_classes, " classes");
  double sum = 0;
  for (double x : d) {
    if (!(x >= 0) || std::isinf(x)) return InvalidArgumentError("rebalance_classes: ", what, " must be finite and >= 0");
    sum += x;
  }
  if (std::abs(sum - 1.0) > 1e-3) return InvalidArgumentError("rebalance_classes: ", what, " must sum to 1, sums to ", sum);
  return Status::OK();
}

}  // namespace

Dataset Dataset::RebalanceClasses(RebalanceOptions options) const {
  if (options.num_classes <= 0)
    return internal::ErrorDataset(InvalidArgumentError("rebalance_classes: num_classes must be > 0"));
  Status s = CheckDistribution(options.target, options.num_classes, "target");
  if (s.ok()) s = CheckDistribution(options.initial, options.num_classes, "initial");
  if (!s.ok()) return internal::ErrorDataset(std::move(s));
  return internal::MakeDataset<RebalanceNode>(*this, std::move(options));
}

}  // namespace strata::data
