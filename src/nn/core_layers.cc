// Dense, Dropout, Flatten, Reshape, Activation, Embedding and the merge layers (Add, Multiply, Concatenate).
#include "nn/internal.h"

namespace strata::nn {
namespace {

using internal::AFloat;
using internal::AInt;
using internal::AInts;
using internal::ConfigText;
using internal::JsonInts;

Status ExpectInputs(const Layer& l, const std::vector<TensorSpec>& inputs, size_t n) {
  if (inputs.size() != n)
    return InvalidArgumentError(l.type(), " '", l.name(), "' expects ", n, " input(s), got ", inputs.size());
  return Status::OK();
}

class DenseLayer final : public Layer {
 public:
  DenseLayer(int64_t units, DenseOptions o) : Layer("Dense", o.name), units_(units), o_(std::move(o)) {}
  StatusOr<std::string> GetConfig() const override {
    return ConfigText({{"units", units_}, {"activation", o_.activation}, {"use_bias", o_.use_bias},
                       {"kernel_initializer", o_.kernel_initializer}, {"bias_initializer", o_.bias_initializer}});
  }

  Status Build(const std::vector<TensorSpec>& inputs) override {
    STRATA_RETURN_IF_ERROR(ExpectInputs(*this, inputs, 1));
    const TensorSpec& in = inputs[0];
    if (in.rank() < 2 || in.shape.back() <= 0)
      return InvalidArgumentError("Dense '", name(), "' needs a known last dimension, got ", in.ToString());
    if (units_ <= 0) return InvalidArgumentError("Dense '", name(), "': units must be positive, got ", units_);
    STRATA_ASSIGN_OR_RETURN(Initializer k, Initializer::FromName(o_.kernel_initializer));
    STRATA_ASSIGN_OR_RETURN(Initializer b, Initializer::FromName(o_.bias_initializer));
    AddWeight("kernel", {in.shape.back(), units_}, k);
    if (o_.use_bias) AddWeight("bias", {units_}, b);
    return Status::OK();
  }

  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    std::string y = ctx.Emit1("MatMul", {x, ctx.Weight("kernel")});
    if (o_.use_bias) y = ctx.Emit1("Add", {y, ctx.Weight("bias")});
    STRATA_ASSIGN_OR_RETURN(y, EmitActivation(ctx, o_.activation, y, false));
    return std::vector<Value>{{y, false}};
  }

 private:
  int64_t units_;
  DenseOptions o_;
};

class DropoutLayer final : public Layer {
 public:
  DropoutLayer(double rate, std::string name, std::vector<int64_t> noise_shape)
      : Layer("Dropout", std::move(name)), rate_(rate), noise_shape_(std::move(noise_shape)) {}
  StatusOr<std::string> GetConfig() const override {
    return ConfigText({{"rate", rate_}, {"noise_shape", JsonInts(noise_shape_)}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (!(rate_ >= 0 && rate_ <= 1)) return InvalidArgumentError("Dropout '", name(), "': rate must be in [0, 1], got ", rate_);
    STRATA_RETURN_IF_ERROR(ExpectInputs(*this, inputs, 1));
    if (noise_shape_.empty()) return Status::OK();
    bool per_sample = static_cast<int>(noise_shape_.size()) == inputs[0].rank() - 1;
    for (int64_t d : noise_shape_) per_sample &= d == 1;
    if (!per_sample)
      return UnimplementedError("Dropout '", name(), "': noise_shape must be empty or all ones (one mask value per ",
                                "sample) for input ", inputs[0].ToString(), ", got ", noise_shape_);
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    if (!ctx.training() || rate_ == 0) return in;
    graph::AttributeMap a;
    a["rate"] = AFloat(rate_);
    // Layers differ by a salt from their name, so two dropout layers never share a mask.
    uint64_t h = 1469598103934665603ULL;
    for (char c : name()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    a["seed_salt"] = AInt(static_cast<int64_t>(h >> 1));
    if (noise_shape_.empty()) {
      auto outs = ctx.Emit("SeededDropout", {in[0].name, ctx.StepSeed()}, std::move(a), 2, "strata");
      return std::vector<Value>{{outs[0], in[0].channels_first}};
    }
    // One scaled keep/drop value per sample: dropout of a (batch, 1, ..., 1) tensor of ones, times x.
    const std::string batch = ctx.Emit1("Slice", {ctx.Emit1("Shape", {in[0].name}), ctx.ConstInts({0}), ctx.ConstInts({1})});
    std::vector<int64_t> ones(noise_shape_.size(), 1);
    graph::AttributeMap cat;
    cat["axis"] = AInt(0);
    const std::string shape = ctx.Emit1("Concat", {batch, ctx.ConstInts(ones)}, std::move(cat));
    graph::AttributeMap value;
    value["value"] = graph::Attribute::TensorValue(Tensor::FromVector<float>({1.0f}, Shape{1}));
    const std::string mask_in = ctx.Emit1("ConstantOfShape", {shape}, std::move(value));
    auto outs = ctx.Emit("SeededDropout", {mask_in, ctx.StepSeed()}, std::move(a), 2, "strata");
    return std::vector<Value>{{ctx.Emit1("Mul", {in[0].name, outs[0]}), in[0].channels_first}};
  }

 private:
  double rate_;
  std::vector<int64_t> noise_shape_;
};

class ReshapeLayer final : public Layer {
 public:
  // target empty: Flatten.
  ReshapeLayer(std::string type, std::vector<int64_t> target, std::string name)
      : Layer(std::move(type), std::move(name)), target_(std::move(target)) {}
  StatusOr<std::string> GetConfig() const override {
    if (target_.empty()) return ConfigText({});
    return ConfigText({{"target_shape", JsonInts(target_)}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override { return ExpectInputs(*this, inputs, 1); }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    std::vector<int64_t> shape{0};
    if (target_.empty()) {
      STRATA_ASSIGN_OR_RETURN(TensorSpec s, ctx.SpecOf(in[0]));
      int64_t n = 1;
      for (int i = 1; i < s.rank(); ++i) {
        if (s.shape[i] < 0) return InvalidArgumentError("Flatten '", name(), "' needs known dimensions, got ", s.ToString());
        n *= s.shape[i];
      }
      shape.push_back(n);
    } else {
      shape.insert(shape.end(), target_.begin(), target_.end());
    }
    return std::vector<Value>{{ctx.Emit1("Reshape", {x, ctx.ConstInts(shape)}), false}};
  }

 private:
  std::vector<int64_t> target_;
};

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(std::string activation, std::string name)
      : Layer("Activation", std::move(name)), activation_(std::move(activation)) {}
  StatusOr<std::string> GetConfig() const override { return ConfigText({{"activation", activation_}}); }
  Status Build(const std::vector<TensorSpec>& inputs) override { return ExpectInputs(*this, inputs, 1); }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string y, EmitActivation(ctx, activation_, in[0].name, in[0].channels_first));
    if (y == in[0].name) y = ctx.Emit1("Identity", {y});
    return std::vector<Value>{{y, in[0].channels_first}};
  }

 private:
  std::string activation_;
};

class EmbeddingLayer final : public Layer {
 public:
  EmbeddingLayer(int64_t input_dim, int64_t output_dim, std::string name)
      : Layer("Embedding", std::move(name)), input_dim_(input_dim), output_dim_(output_dim) {}
  StatusOr<std::string> GetConfig() const override {
    return ConfigText({{"input_dim", input_dim_}, {"output_dim", output_dim_}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    STRATA_RETURN_IF_ERROR(ExpectInputs(*this, inputs, 1));
    if (!IsInteger(inputs[0].dtype))
      return InvalidArgumentError("Embedding '", name(), "' needs integer inputs, got ", DTypeName(inputs[0].dtype));
    if (input_dim_ <= 0 || output_dim_ <= 0)
      return InvalidArgumentError("Embedding '", name(), "': input_dim and output_dim must be positive, got ", input_dim_,
                                  " and ", output_dim_);
    Initializer init{Initializer::Kind::kRandomUniform};
    AddWeight("embeddings", {input_dim_, output_dim_}, init);
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    graph::AttributeMap a;
    a["axis"] = AInt(0);
    return std::vector<Value>{{ctx.Emit1("Gather", {ctx.Weight("embeddings"), x}, std::move(a)), false}};
  }

 private:
  int64_t input_dim_, output_dim_;
};

// Add / Multiply / Concatenate: inputs keep their layout when they all share it.
class MergeLayer final : public Layer {
 public:
  MergeLayer(std::string type, std::string op, int64_t axis, std::string name)
      : Layer(std::move(type), std::move(name)), op_(std::move(op)), axis_(axis) {}
  StatusOr<std::string> GetConfig() const override {
    if (op_ != "Concat") return ConfigText({});
    return ConfigText({{"axis", axis_}});
  }
  Status Build(const std::vector<TensorSpec>& inputs) override {
    if (inputs.size() < 2)
      return InvalidArgumentError(type(), " '", name(), "' needs at least 2 inputs, got ", inputs.size());
    for (const TensorSpec& s : inputs)
      if (s.rank() != inputs[0].rank())
        return InvalidArgumentError(type(), " '", name(), "' inputs must have the same rank, got ", inputs[0].ToString(),
                                    " and ", s.ToString());
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    bool all_first = true;
    for (const Value& v : in) all_first &= v.channels_first;
    STRATA_ASSIGN_OR_RETURN(TensorSpec s0, ctx.SpecOf(in[0]));
    const int rank = s0.rank();
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    std::vector<std::string> xs;
    for (const Value& v : in) {
      if (all_first) {
        xs.push_back(v.name);
      } else {
        STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(v));
        xs.push_back(x);
      }
    }
    if (op_ != "Concat") {
      std::string y = xs[0];
      for (size_t i = 1; i < xs.size(); ++i) y = ctx.Emit1(op_, {y, xs[i]});
      return std::vector<Value>{{y, all_first}};
    }
    if (axis < 0 || axis >= rank)
      return InvalidArgumentError("Concatenate '", name(), "': axis ", axis_, " is out of range for rank ", rank);
    if (all_first && rank >= 3) {  // logical axis -> physical axis in N,C,spatial...
      axis = axis == rank - 1 ? 1 : axis == 0 ? 0 : axis + 1;
    }
    graph::AttributeMap a;
    a["axis"] = AInt(axis);
    return std::vector<Value>{{ctx.Emit1("Concat", xs, std::move(a)), all_first && rank >= 3}};
  }

 private:
  std::string op_;
  int64_t axis_;
};

}  // namespace

LayerRef Dense(int64_t units, DenseOptions options) {
  return LayerRef(std::make_shared<DenseLayer>(units, std::move(options)));
}
LayerRef Dropout(double rate, std::string name, std::vector<int64_t> noise_shape) {
  return LayerRef(std::make_shared<DropoutLayer>(rate, std::move(name), std::move(noise_shape)));
}
LayerRef Flatten(std::string name) {
  return LayerRef(std::make_shared<ReshapeLayer>("Flatten", std::vector<int64_t>{}, std::move(name)));
}
LayerRef Reshape(std::vector<int64_t> target_shape, std::string name) {
  if (target_shape.empty()) target_shape = {-1};
  return LayerRef(std::make_shared<ReshapeLayer>("Reshape", std::move(target_shape), std::move(name)));
}
LayerRef Activation(std::string activation, std::string name) {
  return LayerRef(std::make_shared<ActivationLayer>(std::move(activation), std::move(name)));
}
LayerRef Embedding(int64_t input_dim, int64_t output_dim, std::string name) {
  return LayerRef(std::make_shared<EmbeddingLayer>(input_dim, output_dim, std::move(name)));
}
LayerRef Add(std::string name) { return LayerRef(std::make_shared<MergeLayer>("Add", "Add", 0, std::move(name))); }
LayerRef Multiply(std::string name) {
  return LayerRef(std::make_shared<MergeLayer>("Multiply", "Mul", 0, std::move(name)));
}
LayerRef Concatenate(int64_t axis, std::string name) {
  return LayerRef(std::make_shared<MergeLayer>("Concatenate", "Concat", axis, std::move(name)));
}

}  // namespace strata::nn
