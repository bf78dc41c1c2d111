// Rescaling and Normalization (Keras preprocessing layers that live inside a model, e.g. MobileNetV3's and
// EfficientNetV2's include_preprocessing). Neither has weights; both keep the value's layout.
#include <cmath>

#include "nn/internal.h"

namespace strata::nn {
namespace {

class RescalingLayer final : public Layer {
 public:
  RescalingLayer(double scale, double offset, std::string name)
      : Layer("Rescaling", std::move(name)), scale_(scale), offset_(offset) {}
  StatusOr<std::string> GetConfig() const override {
    return internal::ConfigText({{"scale", scale_}, {"offset", offset_}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || !IsFloatingPoint(inputs[0].dtype))
      return InvalidArgumentError("Rescaling '", name(), "' expects one float input");
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    std::string y = ctx.Emit1("Mul", {in[0].name, ctx.Constant(Tensor::Scalar<float>(static_cast<float>(scale_)))});
    if (offset_ != 0) y = ctx.Emit1("Add", {y, ctx.Constant(Tensor::Scalar<float>(static_cast<float>(offset_)))});
    return std::vector<Value>{{y, in[0].channels_first}};
  }

 private:
  double scale_, offset_;
};

class NormalizationLayer final : public Layer {
 public:
  NormalizationLayer(std::vector<float> mean, std::vector<float> variance, std::string name)
      : Layer("Normalization", std::move(name)), mean_(std::move(mean)), variance_(std::move(variance)) {}
  StatusOr<std::string> GetConfig() const override {
    return internal::ConfigText({{"mean", internal::JsonFloats(mean_)}, {"variance", internal::JsonFloats(variance_)}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() < 2 || !IsFloatingPoint(inputs[0].dtype))
      return InvalidArgumentError("Normalization '", name(), "' expects one float input of rank >= 2");
    const int64_t c = inputs[0].shape.back();
    if (mean_.size() != variance_.size() || static_cast<int64_t>(mean_.size()) != c)
      return InvalidArgumentError("Normalization '", name(), "': mean and variance must have one value per channel (",
                                  c, "), got ", mean_.size(), " and ", variance_.size());
    for (float v : variance_)
      if (!(v >= 0)) return InvalidArgumentError("Normalization '", name(), "': variances must be >= 0, got ", v);
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(TensorSpec s, ctx.SpecOf(in[0]));
    const int64_t c = static_cast<int64_t>(mean_.size());
    std::vector<int64_t> dims{c};
    if (in[0].channels_first)
      for (int i = 2; i < s.rank(); ++i) dims.push_back(1);  // (C, 1, 1) broadcasts over N, C, H, W
    std::vector<float> inv_std(c);
    for (int64_t i = 0; i < c; ++i) inv_std[i] = 1.0f / std::max(std::sqrt(variance_[i]), 1e-7f);
    const std::string centered = ctx.Emit1("Sub", {in[0].name, ctx.Constant(Tensor::FromVector(mean_, Shape(dims)))});
    const std::string y = ctx.Emit1("Mul", {centered, ctx.Constant(Tensor::FromVector(inv_std, Shape(dims)))});
    return std::vector<Value>{{y, in[0].channels_first}};
  }

 private:
  std::vector<float> mean_, variance_;
};

}  // namespace

LayerRef Rescaling(double scale, double offset, std::string name) {
  return LayerRef(std::make_shared<RescalingLayer>(scale, offset, std::move(name)));
}
LayerRef Normalization(std::vector<float> mean, std::vector<float> variance, std::string name) {
  return LayerRef(std::make_shared<NormalizationLayer>(std::move(mean), std::move(variance), std::move(name)));
}

}  // namespace strata::nn
