// Loss: Keras losses emitted as strata training ops (each with its fused gradient op).
#include "nn/internal.h"
#include "nn/model_impl.h"

namespace strata::nn {

StatusOr<Loss> Loss::FromName(std::string_view name, bool from_logits) {
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy(from_logits);
  if (name == "categorical_crossentropy") return CategoricalCrossentropy(from_logits);
  if (name == "binary_crossentropy") return BinaryCrossentropy(from_logits);
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (name == "huber") return Huber();
  return InvalidArgumentError("unknown loss '", name,
                              "'; expected sparse_categorical_crossentropy, categorical_crossentropy, "
                              "binary_crossentropy, mean_squared_error (mse), mean_absolute_error (mae) or huber");
}

std::string Loss::name() const {
  switch (kind) {
    case Kind::kSparseCategoricalCrossentropy: return "sparse_categorical_crossentropy";
    case Kind::kCategoricalCrossentropy: return "categorical_crossentropy";
    case Kind::kBinaryCrossentropy: return "binary_crossentropy";
    case Kind::kMeanSquaredError: return "mean_squared_error";
    case Kind::kMeanAbsoluteError: return "mean_absolute_error";
    case Kind::kHuber: return "huber";
    case Kind::kCustom: return custom_name.empty() ? "custom_loss" : custom_name;
  }
  return "loss";
}

namespace {

// A custom loss's nodes under `prefix`, its result checked and renamed `prefix` (an Identity).
StatusOr<std::string> EmitCustom(const Loss& loss, graph::Graph* g, const std::string& y_pred,
                                 const std::string& y_true, const std::string& prefix) {
  if (!loss.custom) return InvalidArgumentError("custom loss '", loss.name(), "' has no function");
  graph::Builder b(g, prefix);
  const size_t nodes_before = g->nodes.size();
  StatusOr<std::string> value = loss.custom(b, y_pred, y_true);
  if (!value.ok()) return Status(value.status()).WithContext(StrCat("custom loss '", loss.name(), "'"));
  bool produced = false;
  for (size_t i = nodes_before; i < g->nodes.size() && !produced; ++i)
    for (const std::string& out : g->nodes[i].outputs) produced |= out == *value;
  if (!produced)
    return InvalidArgumentError("custom loss '", loss.name(), "' returned '", *value,
                                "', which is not an output of a node it emitted (return the loss value's name)");
  graph::Node id;
  id.name = prefix;
  id.op_type = "Identity";
  id.opset = kOnnxOpset;
  id.inputs = {*value};
  id.outputs = {prefix};
  g->nodes.push_back(std::move(id));
  return prefix;
}

}  // namespace

StatusOr<std::string> Loss::Emit(graph::Graph* g, const std::string& y_pred, const std::string& y_true,
                                 const std::string& prefix) const {
  if (kind == Kind::kCustom) return EmitCustom(*this, g, y_pred, y_true, prefix);
  auto node = [&](std::string op, std::string domain, std::vector<std::string> ins, std::string out) {
    graph::Node n;
    n.name = out;
    n.op_type = std::move(op);
    n.domain = std::move(domain);
    n.opset = n.domain.empty() ? kOnnxOpset : 1;
    n.inputs = std::move(ins);
    n.outputs = {out};
    g->nodes.push_back(std::move(n));
    return &g->nodes.back();
  };
  std::string labels = y_true;
  if (kind != Kind::kSparseCategoricalCrossentropy) {
    graph::Node* c = node("Cast", "", {y_true}, prefix + "/labels_float");
    c->attrs["to"] = internal::AInt(1);  // FLOAT
    labels = c->outputs[0];
  }
  graph::Node* n = nullptr;
  switch (kind) {
    case Kind::kSparseCategoricalCrossentropy:
    case Kind::kCategoricalCrossentropy:
      n = node("SoftmaxCrossEntropyWithLogits", "strata", {y_pred, labels}, prefix);
      n->attrs["from_logits"] = internal::AInt(from_logits ? 1 : 0);
      break;
    case Kind::kBinaryCrossentropy:
      n = node("SigmoidCrossEntropyWithLogits", "strata", {y_pred, labels}, prefix);
      n->attrs["from_logits"] = internal::AInt(from_logits ? 1 : 0);
      break;
    case Kind::kCustom:  // handled above
    case Kind::kMeanSquaredError:
    case Kind::kMeanAbsoluteError:
    case Kind::kHuber:
      n = node("RegressionLoss", "strata", {y_pred, labels}, prefix);
      n->attrs["kind"] = internal::AString(kind == Kind::kMeanSquaredError  ? "mse"
                                           : kind == Kind::kMeanAbsoluteError ? "mae"
                                                                              : "huber");
      n->attrs["delta"] = internal::AFloat(delta);
      break;
  }
  return n->outputs[0];
}

}  // namespace strata::nn
