// Layer, LayerRef, Input, initializers and the layout helpers of CallContext.
#include <cctype>
#include <cmath>

#include "core/random.h"
#include "nn/internal.h"

namespace strata::nn {

std::string TensorSpec::ToString() const {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i] < 0 ? std::string("None") : std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

namespace internal {
std::string SnakeCase(const std::string& type) {
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(type[i - 1]));
      if (i > 0 && prev_lower) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace internal

// ---- initializers ----

StatusOr<Initializer> Initializer::FromName(std::string_view name) {
  static const std::pair<std::string_view, Kind> kNames[] = {
      {"zeros", Kind::kZeros},           {"ones", Kind::kOnes},
      {"glorot_uniform", Kind::kGlorotUniform}, {"glorot_normal", Kind::kGlorotNormal},
      {"he_normal", Kind::kHeNormal},    {"he_uniform", Kind::kHeUniform},
      {"lecun_normal", Kind::kLecunNormal}, {"lecun_uniform", Kind::kLecunUniform},
      {"random_normal", Kind::kRandomNormal}, {"random_uniform", Kind::kRandomUniform}};
  for (const auto& [n, k] : kNames)
    if (n == name) return Initializer{k};
  return InvalidArgumentError("unknown initializer '", name,
                              "'; expected zeros, ones, glorot_uniform, glorot_normal, he_normal, he_uniform, "
                              "lecun_normal, lecun_uniform, random_normal or random_uniform");
}

std::pair<double, double> Initializer::Fans(const Shape& s) {
  if (s.rank() == 0) return {1, 1};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  if (s.rank() == 2) return {double(s[0]), double(s[1])};
  double receptive = 1;
  for (int i = 0; i < s.rank() - 2; ++i) receptive *= double(s[i]);
  return {receptive * double(s[s.rank() - 2]), receptive * double(s[s.rank() - 1])};
}

Tensor Initializer::Make(const Shape& shape, Rng& rng) const {
  Tensor t = Tensor::Empty(DType::kFloat32, shape);
  float* p = t.data<float>();
  const int64_t n = t.num_elements();
  const auto [fan_in, fan_out] = Fans(shape);
  // VarianceScaling(scale, mode, distribution).
  auto scaled = [&](double scale, double fan, bool normal) {
    scale /= std::max(1.0, fan);
    if (normal) {
      const double stddev = std::sqrt(scale) / 0.87962566103423978;
      for (int64_t i = 0; i < n; ++i) {
        float z;
        do z = rng.Normal();
        while (std::abs(z) > 2.0f);
        p[i] = static_cast<float>(z * stddev);
      }
    } else {
      const double limit = std::sqrt(3.0 * scale);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((2.0 * rng.UniformDouble() - 1.0) * limit);
    }
  };
  switch (kind) {
    case Kind::kZeros: std::fill_n(p, n, 0.0f); break;
    case Kind::kOnes: std::fill_n(p, n, 1.0f); break;
    case Kind::kConstant: std::fill_n(p, n, static_cast<float>(value)); break;
    case Kind::kGlorotUniform: scaled(1.0, (fan_in + fan_out) / 2, false); break;
    case Kind::kGlorotNormal: scaled(1.0, (fan_in + fan_out) / 2, true); break;
    case Kind::kHeNormal: scaled(2.0, fan_in, true); break;
    case Kind::kHeUniform: scaled(2.0, fan_in, false); break;
    case Kind::kLecunNormal: scaled(1.0, fan_in, true); break;
    case Kind::kLecunUniform: scaled(1.0, fan_in, false); break;
    case Kind::kRandomNormal:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(mean + stddev * rng.Normal());
      break;
    case Kind::kRandomUniform:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(minval + (maxval - minval) * rng.UniformDouble());
      break;
  }
  return t;
}

// ---- layers ----

std::string_view DTypePolicyName(DTypePolicy p) {
  switch (p) {
    case DTypePolicy::kMixedBFloat16: return "mixed_bfloat16";
    case DTypePolicy::kMixedFloat16: return "mixed_float16";
    default: return "float32";
  }
}

StatusOr<DTypePolicy> ParseDTypePolicy(std::string_view text, std::string_view where) {
  if (text == "float32" || text == "none" || text == "fp32") return DTypePolicy::kFloat32;
  if (text == "mixed_bfloat16" || text == "bf16" || text == "bfloat16") return DTypePolicy::kMixedBFloat16;
  if (text == "mixed_float16" || text == "fp16" || text == "float16") return DTypePolicy::kMixedFloat16;
  return InvalidArgumentError(where, " expects float32 (none), mixed_bfloat16 (bf16) or mixed_float16 (fp16), got '",
                              text, "'");
}

StatusOr<std::string> Layer::GetConfig() const {
  return UnimplementedError("layer '", name_, "' (", type_, ") cannot be described in a model config: its class does "
                            "not override Layer::GetConfig (a custom layer: override it and give ModelFromConfig a "
                            "factory for '", type_, "' in custom_objects)");
}

void Layer::AddWeight(std::string local, std::vector<int64_t> shape, Initializer init, bool trainable) {
  WeightSpec w;
  w.name = StrCat(name_, "/", local);
  w.shape = Shape(shape);
  w.init = init;
  w.trainable = trainable && trainable_;
  weights_.push_back(std::move(w));
  declared_trainable_.push_back(trainable);
}

void Layer::set_trainable(bool t) {
  trainable_ = t;
  for (size_t i = 0; i < weights_.size(); ++i) weights_[i].trainable = t && declared_trainable_[i];
}

std::vector<KerasTensor> LayerRef::Call(const std::vector<KerasTensor>& xs) const {
  auto node = std::make_shared<internal::CallNode>();
  node->layer = layer_;
  node->inputs = xs;
  node->num_outputs = layer_ ? layer_->num_outputs() : 1;
  if (!layer_) node->error = InvalidArgumentError("calling an empty LayerRef");
  for (size_t i = 0; i < xs.size() && node->error.ok(); ++i)
    if (!xs[i].defined())
      node->error = InvalidArgumentError(layer_->type(), " called on an undefined tensor (input ", i, ")");
  if (xs.empty() && node->error.ok()) node->error = InvalidArgumentError(layer_->type(), " called with no inputs");
  std::vector<KerasTensor> out;
  for (int i = 0; i < node->num_outputs; ++i) out.push_back(KerasTensor(node, i));
  return out;
}

KerasTensor Input(std::vector<int64_t> shape, std::string name, DType dtype) {
  auto node = std::make_shared<internal::CallNode>();
  node->input_spec.shape.push_back(-1);
  for (int64_t d : shape) node->input_spec.shape.push_back(d);
  node->input_spec.dtype = dtype;
  node->input_name = std::move(name);
  for (int64_t d : shape)
    if (d <= 0) node->error = InvalidArgumentError("Input '", node->input_name, "': dimensions must be positive, got ", shape);
  return KerasTensor(node, 0);
}

// ---- CallContext helpers ----

std::string CallContext::ConstInts(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Constant(Tensor::FromVector<int64_t>(v, Shape{n}));
}

namespace {
// Permutation taking channels-last to channels-first for a rank-r value, and its inverse.
std::vector<int64_t> ToFirstPerm(int r) {
  std::vector<int64_t> p{0, r - 1};
  for (int i = 1; i < r - 1; ++i) p.push_back(i);
  return p;
}
std::vector<int64_t> ToLastPerm(int r) {
  std::vector<int64_t> p{0};
  for (int i = 2; i < r; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
}  // namespace

StatusOr<TensorSpec> CallContext::SpecOf(const Value& v) {
  STRATA_ASSIGN_OR_RETURN(TensorSpec s, PhysicalSpec(v.name));
  if (!v.channels_first || s.rank() < 3) return s;
  TensorSpec out = s;
  const std::vector<int64_t> perm = ToLastPerm(s.rank());
  for (int i = 0; i < s.rank(); ++i) out.shape[i] = s.shape[perm[i]];
  return out;
}

StatusOr<std::string> CallContext::ChannelsLast(const Value& v) {
  if (!v.channels_first) return v.name;
  STRATA_ASSIGN_OR_RETURN(TensorSpec s, PhysicalSpec(v.name));
  graph::AttributeMap a;
  a["perm"] = internal::AInts(ToLastPerm(s.rank()));
  return Emit1("Transpose", {v.name}, std::move(a));
}

StatusOr<std::string> CallContext::ChannelsFirst(const Value& v) {
  if (v.channels_first) return v.name;
  STRATA_ASSIGN_OR_RETURN(TensorSpec s, PhysicalSpec(v.name));
  if (s.rank() < 3) return InvalidArgumentError("layer '", layer_name(), "' needs an input of rank >= 3, got ", s.ToString());
  graph::AttributeMap a;
  a["perm"] = internal::AInts(ToFirstPerm(s.rank()));
  return Emit1("Transpose", {v.name}, std::move(a));
}

StatusOr<std::string> EmitActivation(CallContext& ctx, const std::string& activation, const std::string& x,
                                     bool channels_first) {
  if (activation.empty() || activation == "linear") return x;
  if (activation == "relu") return ctx.Emit1("Relu", {x});
  if (activation == "relu6") {
    return ctx.Emit1("Clip", {x, ctx.Constant(Tensor::Scalar<float>(0.0f)), ctx.Constant(Tensor::Scalar<float>(6.0f))});
  }
  if (activation == "hard_sigmoid") {  // Keras 3: relu6(x + 3) / 6
    graph::AttributeMap a;
    a["alpha"] = internal::AFloat(1.0 / 6.0);
    a["beta"] = internal::AFloat(0.5);
    return ctx.Emit1("HardSigmoid", {x}, std::move(a));
  }
  if (activation == "sigmoid") return ctx.Emit1("Sigmoid", {x});
  if (activation == "tanh") return ctx.Emit1("Tanh", {x});
  if (activation == "hard_swish") return ctx.Emit1("HardSwish", {x});
  if (activation == "silu" || activation == "swish") return ctx.Emit1("Mul", {x, ctx.Emit1("Sigmoid", {x})});
  if (activation == "softmax") {
    graph::AttributeMap a;
    a["axis"] = internal::AInt(channels_first ? 1 : -1);
    return ctx.Emit1("Softmax", {x}, std::move(a));
  }
  if (activation == "gelu") {  // Keras gelu(approximate=False): 0.5 x (1 + erf(x / sqrt(2)))
    const std::string scaled = ctx.Emit1("Mul", {x, ctx.Constant(Tensor::Scalar<float>(float(M_SQRT1_2)))});
    const std::string e = ctx.Emit1("Erf", {scaled});
    const std::string one_plus = ctx.Emit1("Add", {e, ctx.Constant(Tensor::Scalar<float>(1.0f))});
    const std::string half_x = ctx.Emit1("Mul", {x, ctx.Constant(Tensor::Scalar<float>(0.5f))});
    return ctx.Emit1("Mul", {half_x, one_plus});
  }
  return InvalidArgumentError("layer '", ctx.layer_name(), "': unknown activation '", activation,
                              "'; expected relu, relu6, sigmoid, hard_sigmoid, tanh, softmax, gelu, silu, hard_swish or linear");
}

}  // namespace strata::nn
