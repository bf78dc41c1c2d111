// Learning-rate schedules with Keras 3's formulas (specs/tf-formats.md §6.4), evaluated on the host in double.
#include <algorithm>
#include <cmath>

#include "strata/optim.h"

namespace strata::optim {
namespace {

class Constant final : public LearningRateSchedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double operator()(int64_t) const override { return lr_; }
  std::string Describe() const override { return StrCat("constant(", lr_, ")"); }

 private:
  double lr_;
};

class Piecewise final : public LearningRateSchedule {
 public:
  Piecewise(std::vector<int64_t> b, std::vector<double> v) : b_(std::move(b)), v_(std::move(v)) {}
  double operator()(int64_t step) const override {
    for (size_t i = 0; i < b_.size(); ++i)
      if (step <= b_[i]) return v_[i];
    return v_.back();
  }
  std::string Describe() const override { return StrCat("piecewise(boundaries=", b_, ", values=", v_, ")"); }

 private:
  std::vector<int64_t> b_;
  std::vector<double> v_;
};

class Exponential final : public LearningRateSchedule {
 public:
  Exponential(double init, int64_t steps, double rate, bool stair, bool inverse)
      : init_(init), steps_(steps), rate_(rate), stair_(stair), inverse_(inverse) {}
  double operator()(int64_t step) const override {
    double p = static_cast<double>(step) / static_cast<double>(steps_);
    if (stair_) p = std::floor(p);
    return inverse_ ? init_ / (1 + rate_ * p) : init_ * std::pow(rate_, p);
  }
  std::string Describe() const override {
    return StrCat(inverse_ ? "inverse_time" : "exponential", "(initial=", init_, ", decay_steps=", steps_,
                  ", decay_rate=", rate_, stair_ ? ", staircase" : "", ")");
  }

 private:
  double init_;
  int64_t steps_;
  double rate_;
  bool stair_, inverse_;
};

class Polynomial final : public LearningRateSchedule {
 public:
  Polynomial(double init, int64_t steps, double end, double power, bool cycle)
      : init_(init), steps_(steps), end_(end), power_(power), cycle_(cycle) {}
  double operator()(int64_t step) const override {
    double s = static_cast<double>(step), d = static_cast<double>(steps_);
    if (cycle_) {
      d *= step == 0 ? 1.0 : std::ceil(s / d);
    } else {
      s = std::min(s, d);
    }
    return (init_ - end_) * std::pow(1 - s / d, power_) + end_;
  }
  std::string Describe() const override {
    return StrCat("polynomial(initial=", init_, ", decay_steps=", steps_, ", end=", end_, ", power=", power_,
                  cycle_ ? ", cycle" : "", ")");
  }

 private:
  double init_;
  int64_t steps_;
  double end_, power_;
  bool cycle_;
};

class Cosine final : public LearningRateSchedule {
 public:
  Cosine(double init, int64_t steps, double alpha, std::optional<double> target, int64_t warmup)
      : init_(init), steps_(steps), alpha_(alpha), target_(target), warmup_(warmup) {}
  double operator()(int64_t step) const override {
    const double d = static_cast<double>(steps_);
    auto decay = [&](double from, double s) {
      s = std::min(s, d);
      return from * ((1 - alpha_) * 0.5 * (1 + std::cos(M_PI * s / d)) + alpha_);
    };
    if (!target_ || warmup_ <= 0) return decay(init_, static_cast<double>(step));
    const double s = std::min<double>(static_cast<double>(step), static_cast<double>(warmup_) + d);
    if (s < static_cast<double>(warmup_)) return init_ + (*target_ - init_) * s / static_cast<double>(warmup_);
    return decay(*target_, s - static_cast<double>(warmup_));
  }
  std::string Describe() const override {
    return StrCat("cosine(initial=", init_, ", decay_steps=", steps_, ", alpha=", alpha_,
                  target_ ? StrCat(", warmup_target=", *target_, ", warmup_steps=", warmup_) : std::string(), ")");
  }

 private:
  double init_;
  int64_t steps_;
  double alpha_;
  std::optional<double> target_;
  int64_t warmup_;
};

Status CheckSteps(const char* what, int64_t steps) {
  if (steps <= 0) return InvalidArgumentError(what, ": decay_steps must be positive, got ", steps);
  return Status::OK();
}

}  // namespace

Schedule ConstantLR(double learning_rate) { return std::make_shared<Constant>(learning_rate); }

StatusOr<Schedule> PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values) {
  if (values.size() != boundaries.size() + 1)
    return InvalidArgumentError("piecewise schedule: needs one more value than boundaries, got ", boundaries.size(),
                                " boundaries and ", values.size(), " values");
  for (size_t i = 1; i < boundaries.size(); ++i)
    if (boundaries[i] <= boundaries[i - 1])
      return InvalidArgumentError("piecewise schedule: boundaries must increase, got ", boundaries);
  return Schedule(std::make_shared<Piecewise>(std::move(boundaries), std::move(values)));
}

StatusOr<Schedule> ExponentialDecay(double initial, int64_t decay_steps, double decay_rate, bool staircase) {
  STRATA_RETURN_IF_ERROR(CheckSteps("exponential schedule", decay_steps));
  return Schedule(std::make_shared<Exponential>(initial, decay_steps, decay_rate, staircase, false));
}

StatusOr<Schedule> InverseTimeDecay(double initial, int64_t decay_steps, double decay_rate, bool staircase) {
  STRATA_RETURN_IF_ERROR(CheckSteps("inverse-time schedule", decay_steps));
  return Schedule(std::make_shared<Exponential>(initial, decay_steps, decay_rate, staircase, true));
}

StatusOr<Schedule> PolynomialDecay(double initial, int64_t decay_steps, double end, double power, bool cycle) {
  STRATA_RETURN_IF_ERROR(CheckSteps("polynomial schedule", decay_steps));
  return Schedule(std::make_shared<Polynomial>(initial, decay_steps, end, power, cycle));
}

StatusOr<Schedule> CosineDecay(double initial, int64_t decay_steps, double alpha, std::optional<double> warmup_target,
                               int64_t warmup_steps) {
  STRATA_RETURN_IF_ERROR(CheckSteps("cosine schedule", decay_steps));
  if (warmup_steps < 0) return InvalidArgumentError("cosine schedule: warmup_steps must be >= 0, got ", warmup_steps);
  return Schedule(std::make_shared<Cosine>(initial, decay_steps, alpha, warmup_target, warmup_steps));
}

}  // namespace strata::optim
