// Conv2D, DepthwiseConv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D,
// ZeroPadding2D. Keras layouts at the API
// (NHWC values, (kh, kw, in/groups, filters) kernels); ONNX NCHW Conv/pool nodes inside, with the kernel transposed
// to (filters, in/groups, kh, kw) in the graph (constant-folded on export). "same" padding is ONNX SAME_UPPER: the
// extra pixel goes bottom/right, as in Keras.
#include "nn/internal.h"

namespace strata::nn {
namespace {

using internal::AInt;
using internal::AInts;
using internal::AString;
using internal::ConfigText;
using internal::JsonInts;

StatusOr<std::string> AutoPad(const std::string& layer, const std::string& padding) {
  if (padding == "valid") return std::string("VALID");
  if (padding == "same") return std::string("SAME_UPPER");
  return InvalidArgumentError("layer '", layer, "': padding must be 'valid' or 'same', got '", padding, "'");
}

Status CheckPair(const std::string& layer, const char* what, const std::vector<int64_t>& v) {
  if (v.size() != 2 || v[0] <= 0 || v[1] <= 0)
    return InvalidArgumentError("layer '", layer, "': ", what, " must be two positive integers, got ", v);
  return Status::OK();
}

class ConvLayer final : public Layer {
 public:
  // depthwise: filters is the depth multiplier and groups = input channels.
  ConvLayer(bool depthwise, int64_t filters, std::vector<int64_t> k, Conv2DOptions o)
      : Layer(depthwise ? "DepthwiseConv2D" : "Conv2D", o.name), depthwise_(depthwise), filters_(filters),
        k_(std::move(k)), o_(std::move(o)) {}

  StatusOr<std::string> GetConfig() const override {
    Json::Object c;
    if (depthwise_) {
      c = {{"kernel_size", JsonInts(k_)}, {"depth_multiplier", filters_}};
    } else {
      c = {{"filters", filters_}, {"kernel_size", JsonInts(k_)}};
    }
    c.emplace_back("strides", JsonInts(o_.strides));
    c.emplace_back("padding", o_.padding);
    c.emplace_back("dilation_rate", JsonInts(o_.dilation_rate));
    if (!depthwise_) c.emplace_back("groups", o_.groups);
    c.emplace_back("activation", o_.activation);
    c.emplace_back("use_bias", o_.use_bias);
    c.emplace_back("kernel_initializer", o_.kernel_initializer);
    c.emplace_back("bias_initializer", o_.bias_initializer);
    return ConfigText(std::move(c));
  }

  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() != 4)
      return InvalidArgumentError(type(), " '", name(), "' expects one (batch, height, width, channels) input, got ",
                                  inputs.empty() ? std::string("none") : inputs[0].ToString());
    STRATA_RETURN_IF_ERROR(CheckPair(name(), "kernel_size", k_));
    STRATA_RETURN_IF_ERROR(CheckPair(name(), "strides", o_.strides));
    STRATA_RETURN_IF_ERROR(CheckPair(name(), "dilation_rate", o_.dilation_rate));
    STRATA_RETURN_IF_ERROR(AutoPad(name(), o_.padding).status());
    in_ = inputs[0].shape[3];
    groups_ = depthwise_ ? in_ : o_.groups;
    if (in_ <= 0) return InvalidArgumentError(type(), " '", name(), "' needs a known channel dimension");
    if (filters_ <= 0) return InvalidArgumentError(type(), " '", name(), "': filters must be positive");
    if (groups_ <= 0 || in_ % groups_ != 0 || (!depthwise_ && filters_ % groups_ != 0))
      return InvalidArgumentError(type(), " '", name(), "': groups ", groups_, " must divide input channels ", in_,
                                  " and filters ", filters_);
    STRATA_ASSIGN_OR_RETURN(Initializer ki, Initializer::FromName(o_.kernel_initializer));
    STRATA_ASSIGN_OR_RETURN(Initializer bi, Initializer::FromName(o_.bias_initializer));
    if (depthwise_) {
      AddWeight("kernel", {k_[0], k_[1], in_, filters_}, ki);
      if (o_.use_bias) AddWeight("bias", {in_ * filters_}, bi);
    } else {
      AddWeight("kernel", {k_[0], k_[1], in_ / groups_, filters_}, ki);
      if (o_.use_bias) AddWeight("bias", {filters_}, bi);
    }
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsFirst(in[0]));
    graph::AttributeMap tp;
    std::string w;
    if (depthwise_) {  // (kh, kw, in, mult) -> (in, mult, kh, kw) -> (in*mult, 1, kh, kw)
      tp["perm"] = AInts({2, 3, 0, 1});
      w = ctx.Emit1("Transpose", {ctx.Weight("kernel")}, std::move(tp));
      w = ctx.Emit1("Reshape", {w, ctx.ConstInts({in_ * filters_, 1, k_[0], k_[1]})});
    } else {  // (kh, kw, in/g, out) -> (out, in/g, kh, kw)
      tp["perm"] = AInts({3, 2, 0, 1});
      w = ctx.Emit1("Transpose", {ctx.Weight("kernel")}, std::move(tp));
    }
    graph::AttributeMap a;
    a["kernel_shape"] = AInts(k_);
    a["strides"] = AInts(o_.strides);
    a["dilations"] = AInts(o_.dilation_rate);
    a["group"] = AInt(groups_);
    a["auto_pad"] = AString(*AutoPad(name(), o_.padding));
    std::vector<std::string> ins{x, w};
    if (o_.use_bias) ins.push_back(ctx.Weight("bias"));
    std::string y = ctx.Emit1("Conv", std::move(ins), std::move(a));
    STRATA_ASSIGN_OR_RETURN(y, EmitActivation(ctx, o_.activation, y, true));
    return std::vector<Value>{{y, true}};
  }

 private:
  bool depthwise_;
  int64_t filters_;
  std::vector<int64_t> k_;
  Conv2DOptions o_;
  int64_t in_ = 0, groups_ = 1;
};

class PoolLayer final : public Layer {
 public:
  PoolLayer(std::string type, std::string op, std::vector<int64_t> pool, PoolOptions o)
      : Layer(std::move(type), o.name), op_(std::move(op)), pool_(std::move(pool)), o_(std::move(o)) {}

  StatusOr<std::string> GetConfig() const override {
    if (op_ == "GlobalAveragePool" || op_ == "GlobalMaxPool") return ConfigText({{"keepdims", keepdims_}});
    return ConfigText({{"pool_size", JsonInts(pool_)},
                       {"strides", o_.strides.empty() ? Json() : JsonInts(o_.strides)},
                       {"padding", o_.padding}});
  }

  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() != 4)
      return InvalidArgumentError(type(), " '", name(), "' expects one (batch, height, width, channels) input");
    if (op_ == "AveragePool" || op_ == "MaxPool") {
      if (o_.strides.empty()) o_.strides = pool_;
      STRATA_RETURN_IF_ERROR(CheckPair(name(), "pool_size", pool_));
      STRATA_RETURN_IF_ERROR(CheckPair(name(), "strides", o_.strides));
      return AutoPad(name(), o_.padding).status();
    }
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    if (op_ == "GlobalAveragePool" || op_ == "GlobalMaxPool") return CallGlobal(ctx, in[0]);
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsFirst(in[0]));
    graph::AttributeMap a;
    a["kernel_shape"] = AInts(pool_);
    a["strides"] = AInts(o_.strides);
    a["auto_pad"] = AString(*AutoPad(name(), o_.padding));
    return std::vector<Value>{{ctx.Emit1(op_, {x}, std::move(a)), true}};
  }

  void set_keepdims(bool k) { keepdims_ = k; }

 private:
  StatusOr<std::vector<Value>> CallGlobal(CallContext& ctx, const Value& in) {
    if (!in.channels_first) {  // reduce H, W of an NHWC value: no transposes
      graph::AttributeMap a;
      a["axes"] = AInts({1, 2});
      a["keepdims"] = AInt(keepdims_ ? 1 : 0);
      const char* reduce = op_ == "GlobalAveragePool" ? "ReduceMean" : "ReduceMax";
      return std::vector<Value>{{ctx.Emit1(reduce, {in.name}, std::move(a)), false}};
    }
    const std::string g = ctx.Emit1(op_, {in.name});  // (N, C, 1, 1): channels-first with kept dims
    if (keepdims_) return std::vector<Value>{{g, true}};
    // Squeeze (not Reshape to [0, -1]) keeps the channel count known when the batch size is not.
    return std::vector<Value>{{ctx.Emit1("Squeeze", {g, ctx.ConstInts({2, 3})}), false}};
  }

  std::string op_;
  std::vector<int64_t> pool_;
  PoolOptions o_;
  bool keepdims_ = false;
};

// ZeroPadding2D: ONNX Pad (constant 0) on the channels-first value.
class ZeroPaddingLayer final : public Layer {
 public:
  ZeroPaddingLayer(std::vector<int64_t> padding, std::string name)
      : Layer("ZeroPadding2D", std::move(name)), padding_(std::move(padding)) {}
  StatusOr<std::string> GetConfig() const override { return ConfigText({{"padding", JsonInts(padding_)}}); }

  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() != 1 || inputs[0].rank() != 4)
      return InvalidArgumentError("ZeroPadding2D '", name(), "' expects one (batch, height, width, channels) input");
    bool ok = padding_.size() == 4;
    for (int64_t p : padding_) ok &= p >= 0;
    if (!ok)
      return InvalidArgumentError("ZeroPadding2D '", name(), "': padding must be four non-negative integers {top, ",
                                  "bottom, left, right}, got ", padding_);
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsFirst(in[0]));
    const std::string pads = ctx.ConstInts({0, 0, padding_[0], padding_[2], 0, 0, padding_[1], padding_[3]});
    return std::vector<Value>{{ctx.Emit1("Pad", {x, pads}), true}};
  }

 private:
  std::vector<int64_t> padding_;
};

}  // namespace

LayerRef Conv2D(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options) {
  return LayerRef(std::make_shared<ConvLayer>(false, filters, std::move(kernel_size), std::move(options)));
}
LayerRef DepthwiseConv2D(std::vector<int64_t> kernel_size, int64_t depth_multiplier, Conv2DOptions options) {
  return LayerRef(std::make_shared<ConvLayer>(true, depth_multiplier, std::move(kernel_size), std::move(options)));
}
LayerRef MaxPooling2D(std::vector<int64_t> pool_size, PoolOptions options) {
  return LayerRef(std::make_shared<PoolLayer>("MaxPooling2D", "MaxPool", std::move(pool_size), std::move(options)));
}
LayerRef AveragePooling2D(std::vector<int64_t> pool_size, PoolOptions options) {
  return LayerRef(
      std::make_shared<PoolLayer>("AveragePooling2D", "AveragePool", std::move(pool_size), std::move(options)));
}
LayerRef GlobalAveragePooling2D(std::string name, bool keepdims) {
  PoolOptions o;
  o.name = std::move(name);
  auto l = std::make_shared<PoolLayer>("GlobalAveragePooling2D", "GlobalAveragePool", std::vector<int64_t>{}, o);
  l->set_keepdims(keepdims);
  return LayerRef(std::move(l));
}
LayerRef GlobalMaxPooling2D(std::string name, bool keepdims) {
  PoolOptions o;
  o.name = std::move(name);
  auto l = std::make_shared<PoolLayer>("GlobalMaxPooling2D", "GlobalMaxPool", std::vector<int64_t>{}, o);
  l->set_keepdims(keepdims);
  return LayerRef(std::move(l));
}
LayerRef ZeroPadding2D(std::vector<int64_t> padding, std::string name) {
  return LayerRef(std::make_shared<ZeroPaddingLayer>(std::move(padding), std::move(name)));
}

}  // namespace strata::nn
