// The model zoo used by `strata train --model_name`: the small models here and the Keras applications
// (src/nn/zoo/).
#include "nn/internal.h"

namespace strata::nn {

std::vector<std::string> ZooModelNames() {
  std::vector<std::string> names{"mlp", "cnn_small", "cnn_small_same", "resnet18", "resnet50"};
  for (std::string& n : ApplicationNames()) names.push_back(std::move(n));
  return names;
}

namespace zoo {
StatusOr<std::unique_ptr<Model>> BuildApplication(std::string_view name, const ApplicationOptions& o,
                                                  double input_pixel_scale);
}

namespace {

// ResNet-18's basic block (He et al. 2016, as torchvision's resnet18): two 3x3 convolutions with batch norm, the
// shortcut a 1x1 stride-2 projection where the block halves the resolution.
KerasTensor BasicBlock(const KerasTensor& in, int64_t filters, int64_t stride) {
  const Conv2DOptions conv{.strides = {stride, stride}, .padding = "same", .use_bias = false};
  KerasTensor x = Conv2D(filters, 3, conv)(in);
  x = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(x);
  x = Activation("relu")(x);
  x = Conv2D(filters, 3, {.padding = "same", .use_bias = false})(x);
  x = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(x);
  KerasTensor shortcut = in;
  if (stride != 1) {
    shortcut = Conv2D(filters, 1, {.strides = {stride, stride}, .use_bias = false})(in);
    shortcut = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(shortcut);
  }
  return Activation("relu")(Add()(std::vector<KerasTensor>{x, shortcut}));
}

// ResNet-50's bottleneck block (torchvision's resnet50, v1.5: the stride on the 3x3): 1x1 -> 3x3 -> 1x1 (4x the
// filters) convolutions with batch norm; the shortcut a 1x1 projection where the shape changes.
KerasTensor Bottleneck(const KerasTensor& in, int64_t filters, int64_t stride, bool project) {
  const BatchNormOptions bn{.momentum = 0.9, .epsilon = 1e-5};
  KerasTensor x = Conv2D(filters, 1, {.use_bias = false})(in);
  x = Activation("relu")(BatchNormalization(bn)(x));
  x = Conv2D(filters, 3, {.strides = {stride, stride}, .padding = "same", .use_bias = false})(x);
  x = Activation("relu")(BatchNormalization(bn)(x));
  x = Conv2D(4 * filters, 1, {.use_bias = false})(x);
  x = BatchNormalization(bn)(x);
  KerasTensor shortcut = in;
  if (project) {
    shortcut = Conv2D(4 * filters, 1, {.strides = {stride, stride}, .use_bias = false})(in);
    shortcut = BatchNormalization(bn)(shortcut);
  }
  return Activation("relu")(Add()(std::vector<KerasTensor>{x, shortcut}));
}

}  // namespace

StatusOr<std::unique_ptr<Model>> ZooModel(std::string_view name, std::vector<int64_t> input_shape,
                                          int64_t num_classes) {
  if (num_classes < 2) return InvalidArgumentError("num_classes must be at least 2, got ", num_classes);
  for (const std::string& app : ApplicationNames()) {
    if (app != name) continue;
    ApplicationOptions o;
    o.input_shape = std::move(input_shape);
    o.classes = num_classes;
    o.classifier_activation = "linear";
    o.output_name = "logits";
    return zoo::BuildApplication(name, o, 1.0 / 255);  // the CLI's pipelines feed pixels / 255
  }
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
  } else if (name == "resnet18") {
    KerasTensor x0 = Conv2D(64, 7, {.strides = {2, 2}, .padding = "same", .use_bias = false})(in);
    x0 = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(x0);
    x0 = Activation("relu")(x0);
    x = MaxPooling2D(3, {.strides = {2, 2}, .padding = "same"})(x0);
    for (int64_t filters : {64, 128, 256, 512}) {
      x = BasicBlock(x, filters, filters == 64 ? 1 : 2);
      x = BasicBlock(x, filters, 1);
    }
    x = GlobalAveragePooling2D()(x);
  } else if (name == "resnet50") {
    KerasTensor x0 = Conv2D(64, 7, {.strides = {2, 2}, .padding = "same", .use_bias = false})(in);
    x0 = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(x0);
    x0 = Activation("relu")(x0);
    x = MaxPooling2D(3, {.strides = {2, 2}, .padding = "same"})(x0);
    const std::pair<int64_t, int> stages[] = {{64, 3}, {128, 4}, {256, 6}, {512, 3}};
    for (const auto& [filters, blocks] : stages)
      for (int b = 0; b < blocks; ++b) x = Bottleneck(x, filters, b == 0 && filters != 64 ? 2 : 1, b == 0);
    x = GlobalAveragePooling2D()(x);
  } else {
    return InvalidArgumentError("unknown model '", name, "'; the zoo has ", ZooModelNames());
  }
  auto logits = Dense(num_classes)(x);
  return std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{"logits", logits}},
                                 std::string(name));
}

}  // namespace strata::nn
