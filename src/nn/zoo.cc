// The model zoo used by `strata train --model_name`.
#include "nn/internal.h"

namespace strata::nn {

std::vector<std::string> ZooModelNames() { return {"mlp", "cnn_small", "cnn_small_same"}; }

StatusOr<std::unique_ptr<Model>> ZooModel(std::string_view name, std::vector<int64_t> input_shape,
                                          int64_t num_classes) {
  if (num_classes < 2) return InvalidArgumentError("num_classes must be at least 2, got ", num_classes);
  auto in = Input(input_shape, "input_image");
  KerasTensor x;
  if (name == "mlp") {
    x = Flatten()(in);
    x = Dense(256, {.activation = "relu"})(x);
    x = Dense(128, {.activation = "relu"})(x);
  } else if (name == "cnn_small" || name == "cnn_small_same") {
    // Keras defaults: 'valid' padding (26-13-11-5, 1600 features); cnn_small_same pads 'same' (28-14-14-7, 3136).
    const std::string padding = name == "cnn_small" ? "valid" : "same";
    x = Conv2D(32, 3, {.padding = padding, .activation = "relu"})(in);
    x = MaxPooling2D(2)(x);
    x = Conv2D(64, 3, {.padding = padding, .activation = "relu"})(x);
    x = MaxPooling2D(2)(x);
    x = Flatten()(x);
    x = Dense(128, {.activation = "relu"})(x);
    x = Dropout(0.25)(x);
  } else {
    return InvalidArgumentError("unknown model '", name, "'; the zoo has ", ZooModelNames());
  }
  auto logits = Dense(num_classes)(x);
  return std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{"logits", logits}},
                                 std::string(name));
}

}  // namespace strata::nn
