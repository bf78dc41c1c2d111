// ResNet50V2, ResNet101V2 and ResNet152V2 (keras.applications.resnet_v2; He et al. 2016, pre-activation): one
// builder, the depth picks the block counts. Batch norm epsilon 1.001e-5, as in Keras.
#include "nn/zoo/zoo_internal.h"

namespace strata::nn::zoo {
namespace {

KerasTensor Bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.epsilon = 1.001e-5, .name = name})(x);
}

// Keras residual_block_v2: BN-ReLU pre-activation; 1x1, padded 3x3 (strided), 1x1 x4; the shortcut a 1x1
// projection of the pre-activation (first block) or the input, max-pooled 1x1 with the stride.
KerasTensor BlockV2(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut, const std::string& n) {
  KerasTensor preact = Activation("relu", n + "_preact_relu")(Bn(in, n + "_preact_bn"));
  KerasTensor shortcut = in;
  if (conv_shortcut) {
    shortcut = Conv2D(4 * filters, 1, {.strides = {stride, stride}, .name = n + "_0_conv"})(preact);
  } else if (stride > 1) {
    shortcut = MaxPooling2D(1, {.strides = {stride, stride}})(in);
  }
  KerasTensor x = Conv2D(filters, 1, {.use_bias = false, .name = n + "_1_conv"})(preact);
  x = Activation("relu", n + "_1_relu")(Bn(x, n + "_1_bn"));
  x = ZeroPadding2D({1, 1, 1, 1}, n + "_2_pad")(x);
  x = Conv2D(filters, 3, {.strides = {stride, stride}, .use_bias = false, .name = n + "_2_conv"})(x);
  x = Activation("relu", n + "_2_relu")(Bn(x, n + "_2_bn"));
  x = Conv2D(4 * filters, 1, {.name = n + "_3_conv"})(x);
  return Add(n + "_out")(std::vector<KerasTensor>{shortcut, x});
}

// The stride goes on the last block of a stack, as in Keras's stack_residual_blocks_v2.
KerasTensor StackV2(KerasTensor x, int64_t filters, int blocks, int64_t stride1, const std::string& name) {
  x = BlockV2(x, filters, 1, true, name + "_block1");
  for (int i = 2; i < blocks; ++i) x = BlockV2(x, filters, 1, false, StrCat(name, "_block", i));
  return BlockV2(x, filters, stride1, false, StrCat(name, "_block", blocks));
}

}  // namespace

StatusOr<std::unique_ptr<Model>> ResNetV2(int depth, const ApplicationOptions& o) {
  int b3, b4;  // blocks of conv3 and conv4; conv2 has 3 and conv5 3
  switch (depth) {
    case 50: b3 = 4, b4 = 6; break;
    case 101: b3 = 4, b4 = 23; break;
    case 152: b3 = 8, b4 = 36; break;
    default: return InvalidArgumentError("ResNet V2 depth must be 50, 101 or 152, got ", depth);
  }
  const std::string keras_name = StrCat("ResNet", depth, "V2");
  STRATA_RETURN_IF_ERROR(CheckHeadOptions(keras_name, o));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveInputShape(keras_name, o, 224));
  KerasTensor in = Input(shape, "input_image");
  KerasTensor x = ResNetStem(in, true, true);
  x = StackV2(x, 64, 3, 2, "conv2");
  x = StackV2(x, 128, b3, 2, "conv3");
  x = StackV2(x, 256, b4, 2, "conv4");
  x = StackV2(x, 512, 3, 1, "conv5");
  return MakeModel(in, ResNetTop(x, true, o), o, StrCat("resnet", depth, "v2"));
}

}  // namespace strata::nn::zoo
