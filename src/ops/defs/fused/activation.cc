#include "ops/defs/fused/activation.h"

#include <cmath>
#include <limits>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

constexpr std::string_view kActivations[] = {"Relu", "LeakyRelu",   "Elu",       "Selu",     "Sigmoid",
                                             "Tanh", "HardSigmoid", "HardSwish", "Softplus", "Clip",
                                             "Abs",  "Neg",         "Sqrt",      "Exp",      "Log"};

template <typename T>
void Apply(const Activation& a, T* x, int64_t n) {
  const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta);
  const std::string_view op = a.op;
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
  };
  if (op.empty()) return;
  if (op == "Relu") return each([](T v) { return v > T(0) ? v : T(0); });
  if (op == "LeakyRelu") return each([&](T v) { return v >= T(0) ? v : alpha * v; });
  if (op == "Elu") return each([&](T v) { return v >= T(0) ? v : alpha * (std::exp(v) - T(1)); });
  if (op == "Selu") return each([&](T v) { return v > T(0) ? beta * v : beta * (alpha * std::exp(v) - alpha); });
  if (op == "Sigmoid") return each([](T v) { return T(1) / (T(1) + std::exp(-v)); });
  if (op == "Tanh") return each([](T v) { return std::tanh(v); });
  if (op == "HardSigmoid") return each([&](T v) { return std::max(T(0), std::min(T(1), alpha * v + beta)); });
  if (op == "HardSwish") return each([](T v) { return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5))); });
  if (op == "Softplus") return each([](T v) { return std::log(std::exp(v) + T(1)); });
  if (op == "Clip") return each([&](T v) { return std::isnan(v) ? v : std::min(beta, std::max(alpha, v)); });
  if (op == "Abs") return each([](T v) { return std::fabs(v); });
  if (op == "Neg") return each([](T v) { return -v; });
  if (op == "Sqrt") return each([](T v) { return std::sqrt(v); });
  if (op == "Exp") return each([](T v) { return std::exp(v); });
  if (op == "Log") return each([](T v) { return std::log(v); });
  STRATA_CHECK(false, "unknown activation ", a.op);
}

}  // namespace

bool IsFusableActivation(std::string_view op) {
  for (std::string_view a : kActivations)
    if (a == op) return true;
  return false;
}

void ActivationDefaults(std::string_view op, float* alpha, float* beta) {
  *alpha = 0;
  *beta = 0;
  if (op == "LeakyRelu") *alpha = 0.01f;
  if (op == "Elu") *alpha = 1.0f;
  if (op == "Selu") {
    *alpha = 1.67326319217681884765625f;
    *beta = 1.05070102214813232421875f;
  }
  if (op == "HardSigmoid") {
    *alpha = 0.2f;
    *beta = 0.5f;
  }
  if (op == "Clip") {
    *alpha = -std::numeric_limits<float>::infinity();
    *beta = std::numeric_limits<float>::infinity();
  }
}

std::optional<Activation> ActivationOfNode(const Node& node, const Tensor* clip_min, const Tensor* clip_max) {
  if (!node.domain.empty() || !IsFusableActivation(node.op_type)) return std::nullopt;
  Activation a;
  a.op = node.op_type;
  ActivationDefaults(a.op, &a.alpha, &a.beta);
  if (a.op == "LeakyRelu" || a.op == "Elu" || a.op == "HardSigmoid" || a.op == "Selu")
    a.alpha = node.GetFloat("alpha", a.alpha);
  if (a.op == "HardSigmoid") a.beta = node.GetFloat("beta", a.beta);
  if (a.op == "Selu") a.beta = node.GetFloat("gamma", a.beta);
  if (a.op == "Clip") {
    if (node.opset < 11) {
      a.alpha = node.GetFloat("min", a.alpha);
      a.beta = node.GetFloat("max", a.beta);
    } else {
      for (auto [t, dst, idx] : {std::tuple{clip_min, &a.alpha, 1}, std::tuple{clip_max, &a.beta, 2}}) {
        if (!node.has_input(idx)) continue;
        if (t == nullptr || t->dtype() != DType::kFloat32 || t->num_elements() != 1) return std::nullopt;
        *dst = t->data<float>()[0];
      }
    }
  }
  return a;
}

StatusOr<Activation> ReadFusedActivation(const Node& node) {
  Activation a;
  a.op = node.GetString("activation", "");
  if (a.op.empty()) return a;
  if (!IsFusableActivation(a.op)) return InvalidArgumentError(node.Describe(), ": unknown activation '", a.op, "'");
  ActivationDefaults(a.op, &a.alpha, &a.beta);
  a.alpha = node.GetFloat("activation_alpha", a.alpha);
  a.beta = node.GetFloat("activation_beta", a.beta);
  return a;
}

void WriteFusedActivation(const Activation& a, AttributeMap* attrs) {
  if (a.op.empty()) return;
  (*attrs)["activation"] = Attribute::String(a.op);
  float alpha, beta;
  ActivationDefaults(a.op, &alpha, &beta);
  if (a.alpha != alpha) (*attrs)["activation_alpha"] = Attribute::Float(a.alpha);
  if (a.beta != beta) (*attrs)["activation_beta"] = Attribute::Float(a.beta);
}

void ApplyActivation(const Activation& a, float* x, int64_t n) { Apply(a, x, n); }
void ApplyActivation(const Activation& a, double* x, int64_t n) { Apply(a, x, n); }

}  // namespace strata::ops
