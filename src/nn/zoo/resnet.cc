// ResNet50 (v1, keras.applications.ResNet50; He et al. 2015) and the stem and top shared with ResNet V2
// (resnet_v2.cc). Batch norm epsilon 1.001e-5, momentum 0.99 (Keras defaults otherwise), as in Keras.
#include "nn/zoo/zoo_internal.h"

namespace strata::nn::zoo {
namespace {

constexpr double kBnEpsilon = 1.001e-5;

KerasTensor Bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.epsilon = kBnEpsilon, .name = name})(x);
}

// Keras residual_block_v1: 1x1 (strided), 3x3 'same', 1x1 x4, the shortcut a strided 1x1 projection or the input.
KerasTensor BlockV1(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut, const std::string& n) {
  KerasTensor shortcut = in;
  if (conv_shortcut) {
    shortcut = Conv2D(4 * filters, 1, {.strides = {stride, stride}, .name = n + "_0_conv"})(in);
    shortcut = Bn(shortcut, n + "_0_bn");
  }
  KerasTensor x = Conv2D(filters, 1, {.strides = {stride, stride}, .name = n + "_1_conv"})(in);
  x = Activation("relu", n + "_1_relu")(Bn(x, n + "_1_bn"));
  x = Conv2D(filters, 3, {.padding = "same", .name = n + "_2_conv"})(x);
  x = Activation("relu", n + "_2_relu")(Bn(x, n + "_2_bn"));
  x = Conv2D(4 * filters, 1, {.name = n + "_3_conv"})(x);
  x = Bn(x, n + "_3_bn");
  x = Add(n + "_add")(std::vector<KerasTensor>{shortcut, x});
  return Activation("relu", n + "_out")(x);
}

KerasTensor StackV1(KerasTensor x, int64_t filters, int blocks, int64_t stride1, const std::string& name) {
  x = BlockV1(x, filters, stride1, true, name + "_block1");
  for (int i = 2; i <= blocks; ++i) x = BlockV1(x, filters, 1, false, StrCat(name, "_block", i));
  return x;
}

}  // namespace

KerasTensor ResNetStem(const KerasTensor& in, bool preact, bool use_bias) {
  KerasTensor x = ZeroPadding2D({3, 3, 3, 3}, "conv1_pad")(in);
  x = Conv2D(64, 7, {.strides = {2, 2}, .use_bias = use_bias, .name = "conv1_conv"})(x);
  if (!preact) x = Activation("relu", "conv1_relu")(Bn(x, "conv1_bn"));
  x = ZeroPadding2D({1, 1, 1, 1}, "pool1_pad")(x);
  return MaxPooling2D(3, {.strides = {2, 2}, .name = "pool1_pool"})(x);
}

KerasTensor ResNetTop(KerasTensor x, bool preact, const ApplicationOptions& o) {
  if (preact) x = Activation("relu", "post_relu")(Bn(x, "post_bn"));
  if (!o.include_top) return PoolingHead(x, o);
  x = GlobalAveragePooling2D("avg_pool")(x);
  return Dense(o.classes, {.activation = o.classifier_activation, .name = "predictions"})(x);
}

StatusOr<std::unique_ptr<Model>> ResNetV1(int depth, const ApplicationOptions& o) {
  if (depth != 50) return InvalidArgumentError("ResNet v1 depth must be 50, got ", depth);
  STRATA_RETURN_IF_ERROR(CheckHeadOptions("ResNet50", o));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveInputShape("ResNet50", o, 224));
  KerasTensor in = Input(shape, "input_image");
  KerasTensor x = ResNetStem(in, false, true);
  x = StackV1(x, 64, 3, 1, "conv2");
  x = StackV1(x, 128, 4, 2, "conv3");
  x = StackV1(x, 256, 6, 2, "conv4");
  x = StackV1(x, 512, 3, 2, "conv5");
  return MakeModel(in, ResNetTop(x, false, o), o, "resnet50");
}

}  // namespace strata::nn::zoo
