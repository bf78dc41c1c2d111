// Host-side metrics: each step the trainer fetches the model output and the labels and updates these accumulators
// (cheap next to a training step: a batch of class scores), so metrics need no ops and no gradients.
#include <algorithm>
#include <cmath>

#include "nn/internal.h"

namespace strata::nn {
namespace {

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kBool: return t.data<bool>()[i] ? 1.0 : 0.0;
    default: return NAN;
  }
}

Status CheckNumeric(const std::string& metric, const Tensor& t) {
  if (std::isnan(At(Tensor::Zeros(t.dtype(), Shape{1}), 0)))
    return InvalidArgumentError("metric '", metric, "' cannot read ", t.TypeString());
  return Status::OK();
}

// Class-score metrics over rows of y_pred [..., C]: sparse (index labels) or dense (one-hot/probability labels).
class ClassMetric final : public Metric {
 public:
  ClassMetric(std::string name, bool sparse, int k) : name_(std::move(name)), sparse_(sparse), k_(k) {}
  const std::string& name() const override { return name_; }
  void Reset() override { correct_ = 0, total_ = 0; }
  double Result() const override { return total_ > 0 ? correct_ / total_ : 0.0; }
  Status Update(const Tensor& y_true, const Tensor& y_pred) override {
    STRATA_RETURN_IF_ERROR(CheckNumeric(name_, y_true));
    STRATA_RETURN_IF_ERROR(CheckNumeric(name_, y_pred));
    if (y_pred.rank() < 1) return InvalidArgumentError("metric '", name_, "' needs class scores, got ", y_pred.TypeString());
    const int64_t c = y_pred.dim(y_pred.rank() - 1);
    const int64_t rows = c > 0 ? y_pred.num_elements() / c : 0;
    if (sparse_ ? y_true.num_elements() != rows : y_true.num_elements() != y_pred.num_elements())
      return InvalidArgumentError("metric '", name_, "': labels ", y_true.TypeString(), " do not match predictions ",
                                  y_pred.TypeString());
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = 0;
      if (sparse_) {
        label = static_cast<int64_t>(At(y_true, r));
      } else {
        for (int64_t j = 1; j < c; ++j)
          if (At(y_true, r * c + j) > At(y_true, r * c + label)) label = j;
      }
      bool hit = false;
      if (label >= 0 && label < c) {
        const double v = At(y_pred, r * c + label);
        int64_t better = 0, tied_before = 0;
        for (int64_t j = 0; j < c; ++j) {
          const double p = At(y_pred, r * c + j);
          better += p > v;
          tied_before += (p == v && j < label);
        }
        // k = 1 is argmax (first maximum wins ties); top-k counts strictly larger scores.
        hit = k_ == 1 ? (better == 0 && tied_before == 0) : better < k_;
      }
      correct_ += hit;
      total_ += 1;
    }
    return Status::OK();
  }

 private:
  std::string name_;
  bool sparse_;
  int k_;
  double correct_ = 0, total_ = 0;
};

// Elementwise binary metrics: accuracy, precision, recall; and ROC AUC over 200 thresholds (Keras's defaults).
class BinaryMetric final : public Metric {
 public:
  enum class Kind { kAccuracy, kPrecision, kRecall, kAuc };
  BinaryMetric(std::string name, Kind kind, bool logits) : name_(std::move(name)), kind_(kind), logits_(logits) {
    Reset();
  }
  const std::string& name() const override { return name_; }
  void Reset() override {
    tp_ = fp_ = fn_ = tn_ = 0;
    auc_tp_.assign(kThresholds, 0);
    auc_fp_.assign(kThresholds, 0);
    pos_ = neg_ = 0;
  }
  Status Update(const Tensor& y_true, const Tensor& y_pred) override {
    STRATA_RETURN_IF_ERROR(CheckNumeric(name_, y_true));
    STRATA_RETURN_IF_ERROR(CheckNumeric(name_, y_pred));
    if (y_true.num_elements() != y_pred.num_elements())
      return InvalidArgumentError("metric '", name_, "': labels ", y_true.TypeString(), " do not match predictions ",
                                  y_pred.TypeString());
    for (int64_t i = 0; i < y_pred.num_elements(); ++i) {
      double p = At(y_pred, i);
      if (logits_) p = 1.0 / (1.0 + std::exp(-p));
      const bool t = At(y_true, i) > 0.5;
      const bool yes = p > 0.5;
      tp_ += t && yes, fp_ += !t && yes, fn_ += t && !yes, tn_ += !t && !yes;
      if (kind_ == Kind::kAuc) {
        (t ? pos_ : neg_) += 1;
        for (int k = 0; k < kThresholds; ++k)
          if (p > Threshold(k)) (t ? auc_tp_ : auc_fp_)[k] += 1;
      }
    }
    return Status::OK();
  }
  double Result() const override {
    switch (kind_) {
      case Kind::kAccuracy: return tp_ + tn_ + fp_ + fn_ > 0 ? (tp_ + tn_) / (tp_ + tn_ + fp_ + fn_) : 0.0;
      case Kind::kPrecision: return tp_ + fp_ > 0 ? tp_ / (tp_ + fp_) : 0.0;
      case Kind::kRecall: return tp_ + fn_ > 0 ? tp_ / (tp_ + fn_) : 0.0;
      case Kind::kAuc: {
        // Trapezoids over (fpr, tpr) as the threshold rises from below 0 to above 1.
        double auc = 0;
        for (int k = 0; k + 1 < kThresholds; ++k) {
          const double tpr0 = pos_ ? auc_tp_[k] / pos_ : 0, tpr1 = pos_ ? auc_tp_[k + 1] / pos_ : 0;
          const double fpr0 = neg_ ? auc_fp_[k] / neg_ : 0, fpr1 = neg_ ? auc_fp_[k + 1] / neg_ : 0;
          auc += (fpr0 - fpr1) * (tpr0 + tpr1) / 2;
        }
        return auc;
      }
    }
    return 0;
  }

 private:
  static constexpr int kThresholds = 200;
  // Keras: 0 - epsilon, (i+1)/(n-1) for i < n-2, 1 + epsilon.
  static double Threshold(int k) {
    if (k == 0) return -1e-7;
    if (k == kThresholds - 1) return 1 + 1e-7;
    return static_cast<double>(k) / (kThresholds - 1);
  }
  std::string name_;
  Kind kind_;
  bool logits_;
  double tp_, fp_, fn_, tn_, pos_, neg_;
  std::vector<double> auc_tp_, auc_fp_;
};

}  // namespace

StatusOr<std::unique_ptr<Metric>> MakeMetric(std::string_view name, const Loss& loss) {
  const std::string n(name);
  const bool sparse = loss.kind == Loss::Kind::kSparseCategoricalCrossentropy;
  const bool binary_logits = loss.kind == Loss::Kind::kBinaryCrossentropy && loss.from_logits;
  if (n == "accuracy" || n == "acc") {
    if (loss.kind == Loss::Kind::kCustom)
      return InvalidArgumentError("metric '", n, "' is chosen by the loss, and custom loss '", loss.name(),
                                  "' does not say which: name sparse_categorical_accuracy, categorical_accuracy or "
                                  "binary_accuracy");
    if (loss.kind == Loss::Kind::kBinaryCrossentropy)
      return std::unique_ptr<Metric>(new BinaryMetric(n, BinaryMetric::Kind::kAccuracy, binary_logits));
    return std::unique_ptr<Metric>(new ClassMetric(n, sparse, 1));
  }
  if (n == "sparse_categorical_accuracy") return std::unique_ptr<Metric>(new ClassMetric(n, true, 1));
  if (n == "categorical_accuracy") return std::unique_ptr<Metric>(new ClassMetric(n, false, 1));
  if (n == "binary_accuracy")
    return std::unique_ptr<Metric>(new BinaryMetric(n, BinaryMetric::Kind::kAccuracy, binary_logits));
  for (const char* base : {"sparse_top_k_categorical_accuracy", "top_k_categorical_accuracy"}) {
    const std::string b(base);
    if (n.rfind(b, 0) != 0) continue;
    int k = 5;
    if (n.size() > b.size()) {
      if (n[b.size()] != '@') break;
      k = std::atoi(n.c_str() + b.size() + 1);
      if (k <= 0) return InvalidArgumentError("metric '", n, "': k must be a positive integer");
    }
    return std::unique_ptr<Metric>(new ClassMetric(n, b[0] == 's', k));
  }
  if (n == "precision") return std::unique_ptr<Metric>(new BinaryMetric(n, BinaryMetric::Kind::kPrecision, binary_logits));
  if (n == "recall") return std::unique_ptr<Metric>(new BinaryMetric(n, BinaryMetric::Kind::kRecall, binary_logits));
  if (n == "auc") return std::unique_ptr<Metric>(new BinaryMetric(n, BinaryMetric::Kind::kAuc, binary_logits));
  return InvalidArgumentError("unknown metric '", n,
                              "'; expected accuracy, sparse_categorical_accuracy, categorical_accuracy, "
                              "binary_accuracy, [sparse_]top_k_categorical_accuracy[@k], precision, recall or auc");
}

}  // namespace strata::nn
