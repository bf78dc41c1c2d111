// BatchNormalization and LayerNormalization (Keras defaults: momentum 0.99, epsilon 1e-3).
//
// BatchNormalization over the channel axis (-1). In training (and when the layer is trainable) it emits ONNX
// BatchNormalization with training_mode=1: normalise with the batch statistics, and the running outputs
// (running = running * momentum + batch * (1 - momentum), batch variance biased) become the new moving statistics;
// this is Keras 3's rule (tf.keras's fused kernel uses the unbiased variance for the moving average). Otherwise the
// moving statistics normalise. Rank-4 inputs run channels-first. Synchronized, training emits
// strata.SyncBatchNormalization instead (statistics over every worker's batch).
#include "nn/internal.h"

namespace strata::nn {
namespace {

using internal::AFloat;
using internal::AInt;
using internal::ConfigText;

class BatchNormLayer final : public Layer {
 public:
  explicit BatchNormLayer(BatchNormOptions o) : Layer("BatchNormalization", o.name), o_(std::move(o)) {}
  StatusOr<std::string> GetConfig() const override {
    return ConfigText({{"momentum", o_.momentum}, {"epsilon", o_.epsilon}, {"center", o_.center},
                       {"scale", o_.scale}});
  }
  // 1 when it was not synchronized yet.
  int Synchronize() { return o_.synchronized ? 0 : (o_.synchronized = true, 1); }

  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() < 2 || inputs[0].shape.back() <= 0)
      return InvalidArgumentError("BatchNormalization '", name(), "' needs one input with a known channel axis");
    c_ = inputs[0].shape.back();
    if (o_.scale) AddWeight("gamma", {c_}, Initializer::Ones());
    if (o_.center) AddWeight("beta", {c_}, Initializer::Zeros());
    AddWeight("moving_mean", {c_}, Initializer::Zeros(), false);
    AddWeight("moving_variance", {c_}, Initializer::Ones(), false);
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(TensorSpec s, ctx.SpecOf(in[0]));
    std::string x = in[0].name;
    bool cf = in[0].channels_first;
    if (s.rank() > 2 && !cf) {
      STRATA_ASSIGN_OR_RETURN(x, ctx.ChannelsFirst(in[0]));
      cf = true;
    }
    std::vector<float> ones(c_, 1.0f), zeros(c_, 0.0f);
    const std::string gamma = o_.scale ? ctx.Weight("gamma") : ctx.Constant(Tensor::FromVector(ones));
    const std::string beta = o_.center ? ctx.Weight("beta") : ctx.Constant(Tensor::FromVector(zeros));
    graph::AttributeMap a;
    a["epsilon"] = AFloat(o_.epsilon);
    a["momentum"] = AFloat(o_.momentum);
    const bool train = ctx.training() && trainable();
    if (train && o_.synchronized) {
      // Y, the new moving statistics, and the global mean and 1/std its gradient reads.
      auto outs = ctx.Emit("SyncBatchNormalization",
                           {x, gamma, beta, ctx.Weight("moving_mean"), ctx.Weight("moving_variance")}, std::move(a), 5,
                           graph::kStrataDomain);
      ctx.UpdateState("moving_mean", outs[1]);
      ctx.UpdateState("moving_variance", outs[2]);
      return std::vector<Value>{{outs[0], cf && s.rank() > 2}};
    }
    if (train) a["training_mode"] = AInt(1);
    auto outs = ctx.Emit("BatchNormalization",
                         {x, gamma, beta, ctx.Weight("moving_mean"), ctx.Weight("moving_variance")}, std::move(a),
                         train ? 3 : 1);
    if (train) {
      ctx.UpdateState("moving_mean", outs[1]);
      ctx.UpdateState("moving_variance", outs[2]);
    }
    return std::vector<Value>{{outs[0], cf && s.rank() > 2}};
  }

 private:
  BatchNormOptions o_;
  int64_t c_ = 0;
};

class LayerNormLayer final : public Layer {
 public:
  LayerNormLayer(double epsilon, std::string name) : Layer("LayerNormalization", std::move(name)), epsilon_(epsilon) {}
  StatusOr<std::string> GetConfig() const override { return ConfigText({{"epsilon", epsilon_}}); }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() < 2 || inputs[0].shape.back() <= 0)
      return InvalidArgumentError("LayerNormalization '", name(), "' needs one input with a known last axis");
    AddWeight("gamma", {inputs[0].shape.back()}, Initializer::Ones());
    AddWeight("beta", {inputs[0].shape.back()}, Initializer::Zeros());
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    graph::AttributeMap a;
    a["axis"] = AInt(-1);
    a["epsilon"] = AFloat(epsilon_);
    return std::vector<Value>{
        {ctx.Emit1("LayerNormalization", {x, ctx.Weight("gamma"), ctx.Weight("beta")}, std::move(a)), false}};
  }

 private:
  double epsilon_;
};

}  // namespace

LayerRef BatchNormalization(BatchNormOptions options) {
  return LayerRef(std::make_shared<BatchNormLayer>(std::move(options)));
}
LayerRef SyncBatchNormalization(BatchNormOptions options) {
  options.synchronized = true;
  return BatchNormalization(std::move(options));
}
int SynchronizeBatchNormalization(Model& model) {
  int n = 0;
  for (Layer* layer : model.layers())
    if (auto* bn = dynamic_cast<BatchNormLayer*>(layer)) n += bn->Synchronize();
  return n;
}
LayerRef LayerNormalization(double epsilon, std::string name) {
  return LayerRef(std::make_shared<LayerNormLayer>(epsilon, std::move(name)));
}

}  // namespace strata::nn
