// Dataset::QualityFilter: drops blank or near-constant images, labels outside [0, num_classes), non-finite values
// and exact duplicates (by SHA-256 of the content), counting each drop per epoch in a QualityStats.
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "data/dataset_impl.h"
#include "io/sha256.h"

namespace strata::data {

QualityCheck QualityCheck::BlankImage(std::string key, double max_stddev) {
  QualityCheck c;
  c.kind = Kind::kBlankImage;
  c.key = std::move(key);
  c.max_stddev = max_stddev;
  return c;
}

QualityCheck QualityCheck::LabelRange(std::string key, int64_t num_classes) {
  QualityCheck c;
  c.kind = Kind::kLabelRange;
  c.key = std::move(key);
  c.num_classes = num_classes;
  return c;
}

QualityCheck QualityCheck::NonFinite(std::string key) {
  QualityCheck c;
  c.kind = Kind::kNonFinite;
  c.key = std::move(key);
  return c;
}

QualityCheck QualityCheck::Duplicate(std::string key) {
  QualityCheck c;
  c.kind = Kind::kDuplicate;
  c.key = std::move(key);
  return c;
}

std::string QualityCheck::name() const {
  switch (kind) {
    case Kind::kBlankImage: return "blank_image";
    case Kind::kLabelRange: return "label_out_of_range";
    case Kind::kNonFinite: return "non_finite";
    case Kind::kDuplicate: return "duplicate";
  }
  return "quality";
}

namespace {

// Values of a numeric tensor as doubles, one at a time.
template <typename Fn>
Status ForEachValue(const Tensor& t, Fn fn) {
  const int64_t n = t.num_elements();
  switch (t.dtype()) {
    case DType::kUInt8: for (int64_t i = 0; i < n; ++i) fn(t.data<uint8_t>()[i]); break;
    case DType::kInt8: for (int64_t i = 0; i < n; ++i) fn(t.data<int8_t>()[i]); break;
    case DType::kInt16: for (int64_t i = 0; i < n; ++i) fn(t.data<int16_t>()[i]); break;
    case DType::kUInt16: for (int64_t i = 0; i < n; ++i) fn(t.data<uint16_t>()[i]); break;
    case DType::kInt32: for (int64_t i = 0; i < n; ++i) fn(t.data<int32_t>()[i]); break;
    case DType::kInt64: for (int64_t i = 0; i < n; ++i) fn(static_cast<double>(t.data<int64_t>()[i])); break;
    case DType::kFloat32: for (int64_t i = 0; i < n; ++i) fn(t.data<float>()[i]); break;
    case DType::kFloat64: for (int64_t i = 0; i < n; ++i) fn(t.data<double>()[i]); break;
    case DType::kFloat16: for (int64_t i = 0; i < n; ++i) fn(static_cast<float>(t.data<Float16>()[i])); break;
    case DType::kBFloat16: for (int64_t i = 0; i < n; ++i) fn(static_cast<float>(t.data<BFloat16>()[i])); break;
    default: return InvalidArgumentError("expected a numeric tensor, got ", t.TypeString());
  }
  return Status::OK();
}

StatusOr<bool> IsBlank(const Tensor& t, double max_stddev) {
  if (max_stddev < 0) max_stddev = t.dtype() == DType::kUInt8 ? 2.0 : 2.0 / 255.0;
  double sum = 0, sum_sq = 0;
  STRATA_RETURN_IF_ERROR(ForEachValue(t, [&](double v) {
    sum += v;
    sum_sq += v * v;
  }));
  const double n = static_cast<double>(std::max<int64_t>(t.num_elements(), 1));
  const double mean = sum / n;
  return std::sqrt(std::max(0.0, sum_sq / n - mean * mean)) <= max_stddev;
}

StatusOr<bool> LabelOutOfRange(const Tensor& t, int64_t num_classes) {
  if (!IsInteger(t.dtype())) return InvalidArgumentError("expected integer labels, got ", t.TypeString());
  bool bad = false;
  STRATA_RETURN_IF_ERROR(ForEachValue(t, [&](double v) { bad = bad || v < 0 || v >= static_cast<double>(num_classes); }));
  return bad;
}

bool HasNonFinite(const Tensor& t) {
  if (!IsFloatingPoint(t.dtype())) return false;
  bool bad = false;
  ForEachValue(t, [&](double v) { bad = bad || !std::isfinite(v); }).IgnoreError();
  return bad;
}

void HashTensor(const std::string& name, const Tensor& t, io::Sha256* h) {
  h->Update(name);
  h->Update(StrCat(":", DTypeName(t.dtype()), t.shape().ToString(), ":"));
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.values<std::string>()) {
      const uint64_t n = s.size();
      h->Update(&n, sizeof(n));
      h->Update(s);
    }
  } else {
    h->Update(t.raw_data(), t.byte_size());
  }
}

struct DigestHash {
  size_t operator()(const std::string& d) const {
    size_t v;
    std::memcpy(&v, d.data(), sizeof(v));
    return v;
  }
};

class QualityFilterNode final : public internal::DatasetNode {
 public:
  QualityFilterNode(Dataset input, std::vector<QualityCheck> checks, std::shared_ptr<QualityStats> stats)
      : DatasetNode(Describe(checks), {std::move(input)}), checks_(std::move(checks)), stats_(std::move(stats)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorOptions& options) const override {
    STRATA_ASSIGN_OR_RETURN(auto input, MakeInputIterator(0, options));
    return std::unique_ptr<Iterator>(new It(this, std::move(input), options.epoch));
  }

 private:
  static std::string Describe(const std::vector<QualityCheck>& checks) {
    std::vector<std::string> names;
    for (const auto& c : checks) names.push_back(c.name());
    return StrCat("quality_filter(", StrJoin(names, ", "), ")");
  }

  class It final : public Iterator {
   public:
    It(const QualityFilterNode* node, std::unique_ptr<Iterator> input, int64_t epoch)
        : node_(node), input_(std::move(input)), epoch_(epoch) {}

    StatusOr<bool> GetNext(Element* out) override {
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
        if (!more) return false;
        node_->stats_->AddExamined(epoch_);
        auto failed = FirstFailed(*out);
        if (!failed.ok()) return internal::WithElementContext(std::move(failed).status(), "quality_filter", *out);
        if (*failed == nullptr) return true;
        node_->stats_->AddDropped(epoch_, (*failed)->name());
      }
    }

   private:
    // The first check the element fails, or null.
    StatusOr<const QualityCheck*> FirstFailed(const Element& e) {
      for (const QualityCheck& c : node_->checks_) {
        bool drop = false;
        switch (c.kind) {
          case QualityCheck::Kind::kBlankImage: {
            STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(c.key));
            STRATA_ASSIGN_OR_RETURN(drop, IsBlank(t, c.max_stddev));
            break;
          }
          case QualityCheck::Kind::kLabelRange: {
            STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(c.key));
            STRATA_ASSIGN_OR_RETURN(drop, LabelOutOfRange(t, c.num_classes));
            break;
          }
          case QualityCheck::Kind::kNonFinite:
            if (!c.key.empty()) {
              STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(c.key));
              drop = HasNonFinite(t);
            } else {
              for (const auto& [name, t] : e.tensors) drop = drop || HasNonFinite(t);
            }
            break;
          case QualityCheck::Kind::kDuplicate: {
            io::Sha256 h;
            if (!c.key.empty()) {
              STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(c.key));
              HashTensor(c.key, t, &h);
            } else {
              for (const auto& [name, t] : e.tensors) HashTensor(name, t, &h);
            }
            const auto digest = h.Finish();
            // 128 bits of the digest are plenty to tell contents apart and halve the memory per element.
            drop = !seen_.insert(std::string(reinterpret_cast<const char*>(digest.data()), 16)).second;
            break;
          }
        }
        if (drop) return &c;
      }
      return static_cast<const QualityCheck*>(nullptr);
    }

    const QualityFilterNode* node_;
    std::unique_ptr<Iterator> input_;
    int64_t epoch_;
    std::unordered_set<std::string, DigestHash> seen_;  // one epoch's content hashes
  };

  std::vector<QualityCheck> checks_;
  std::shared_ptr<QualityStats> stats_;
};

}  // namespace

Dataset Dataset::QualityFilter(std::vector<QualityCheck> checks, std::shared_ptr<QualityStats> stats) const {
  if (!stats) return internal::ErrorDataset(InvalidArgumentError("quality_filter: a QualityStats is required"));
  for (const auto& c : checks) {
    if (c.kind == QualityCheck::Kind::kLabelRange && c.num_classes <= 0)
      return internal::ErrorDataset(InvalidArgumentError("quality_filter: label_out_of_range needs num_classes > 0"));
    if ((c.kind == QualityCheck::Kind::kBlankImage || c.kind == QualityCheck::Kind::kLabelRange) && c.key.empty())
      return internal::ErrorDataset(InvalidArgumentError("quality_filter: ", c.name(), " needs a tensor key"));
  }
  return internal::MakeDataset<QualityFilterNode>(*this, std::move(checks), std::move(stats));
}

}  // namespace strata::data
