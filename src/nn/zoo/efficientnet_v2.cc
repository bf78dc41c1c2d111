// EfficientNetV2B0..B3 (keras.applications.efficientnet_v2; Tan & Le 2021): one builder over the B-series block table,
// the variant picks the width/depth coefficients and default size. Batch norm momentum 0.9, epsilon 1e-3 (Keras's
// default); swish activations; squeeze-and-excitation GlobalAveragePooling2D + Reshape + two 1x1 convolutions
// (swish, sigmoid) + Multiply; stochastic depth as Keras does it: Dropout(rate = b * 0.2 / blocks, one mask value
// per sample) before the residual add, the identity at inference. include_preprocessing puts Rescaling(1/255) and
// ImageNet Normalization first for 3 channels (raw 0..255 pixels in), Rescaling(1/128, -1) otherwise.
#include <cmath>

#include "nn/zoo/zoo_internal.h"

namespace strata::nn::zoo {
namespace {

struct Stage {
  bool fused;
  int64_t expand_ratio, input_filters, output_filters, kernel_size, num_repeat;
  double se_ratio;
  int64_t strides;
};

// DEFAULT_BLOCKS_ARGS["efficientnetv2-b0"] (B1..B3 use the same table).
const Stage kStages[] = {{true, 1, 32, 16, 3, 1, 0, 1},      {true, 4, 16, 32, 3, 2, 0, 2},
                         {true, 4, 32, 48, 3, 2, 0, 2},      {false, 4, 48, 96, 3, 3, 0.25, 2},
                         {false, 6, 96, 112, 3, 5, 0.25, 1}, {false, 6, 112, 192, 3, 8, 0.25, 2}};

int64_t RoundFilters(int64_t filters, double width) {
  const double f = filters * width;
  return std::max<int64_t>(8, static_cast<int64_t>(f + 4) / 8 * 8);
}

KerasTensor Bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.momentum = 0.9, .epsilon = 1e-3, .name = name})(x);
}

KerasTensor SqueezeExcite(const KerasTensor& in, int64_t input_filters, int64_t filters, double se_ratio,
                          const std::string& n) {
  const int64_t filters_se = std::max<int64_t>(1, static_cast<int64_t>(input_filters * se_ratio));
  KerasTensor se = GlobalAveragePooling2D(n + "se_squeeze")(in);
  se = Reshape({1, 1, filters}, n + "se_reshape")(se);
  se = Conv2D(filters_se, 1, {.padding = "same", .activation = "swish", .name = n + "se_reduce"})(se);
  se = Conv2D(filters, 1, {.padding = "same", .activation = "sigmoid", .name = n + "se_expand"})(se);
  return Multiply(n + "se_excite")(std::vector<KerasTensor>{in, se});
}

// Keras's MBConvBlock (fused = false) and FusedMBConvBlock (fused = true).
KerasTensor ConvBlock(const KerasTensor& in, const Stage& s, int64_t in_f, int64_t out_f, int64_t strides,
                      double drop_rate, const std::string& n) {
  const int64_t filters = in_f * s.expand_ratio;
  const int64_t k = s.kernel_size;
  KerasTensor x = in;
  if (s.expand_ratio != 1) {
    const int64_t ek = s.fused ? k : 1, es = s.fused ? strides : 1;
    x = Conv2D(filters, ek, {.strides = {es, es}, .padding = "same", .use_bias = false, .name = n + "expand_conv"})(x);
    x = Activation("swish", n + "expand_activation")(Bn(x, n + "expand_bn"));
  }
  if (!s.fused) {
    x = DepthwiseConv2D({k, k}, 1,
                        {.strides = {strides, strides}, .padding = "same", .use_bias = false, .name = n + "dwconv2"})(x);
    x = Activation("swish", n + "activation")(Bn(x, n + "bn"));
  }
  if (s.se_ratio > 0 && s.se_ratio <= 1) x = SqueezeExcite(x, in_f, filters, s.se_ratio, n);
  const bool project_is_main = s.fused && s.expand_ratio == 1;  // fused without expansion: the project conv strides
  const int64_t pk = project_is_main ? k : 1, ps = project_is_main ? strides : 1;
  x = Conv2D(out_f, pk, {.strides = {ps, ps}, .padding = "same", .use_bias = false, .name = n + "project_conv"})(x);
  x = Bn(x, n + "project_bn");
  if (project_is_main) x = Activation("swish", n + "project_activation")(x);
  if (strides == 1 && in_f == out_f) {
    if (drop_rate > 0) x = Dropout(drop_rate, n + "drop", {1, 1, 1})(x);
    x = Add(n + "add")(std::vector<KerasTensor>{x, in});
  }
  return x;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> EfficientNetV2(int variant, const ApplicationOptions& o, double input_pixel_scale) {
  static const double kWidth[] = {1.0, 1.0, 1.1, 1.2}, kDepth[] = {1.0, 1.1, 1.2, 1.4};
  static const int64_t kSize[] = {224, 240, 260, 300};
  if (variant < 0 || variant > 3) return InvalidArgumentError("EfficientNetV2 variant must be B0..B3, got ", variant);
  const std::string keras_name = StrCat("EfficientNetV2B", variant);
  STRATA_RETURN_IF_ERROR(CheckHeadOptions(keras_name, o));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveInputShape(keras_name, o, kSize[variant]));
  const double width = kWidth[variant], depth = kDepth[variant];
  KerasTensor in = Input(shape, "input_image");
  KerasTensor x = in;
  if (o.include_preprocessing) {
    if (shape[2] == 3) {
      x = Rescaling(1.0 / (255 * input_pixel_scale))(x);
      x = Normalization({0.485f, 0.456f, 0.406f},
                        {0.229f * 0.229f, 0.224f * 0.224f, 0.225f * 0.225f})(x);
    } else {
      x = Rescaling(1.0 / (128.0 * input_pixel_scale), -1.0)(x);
    }
  }
  x = Conv2D(RoundFilters(kStages[0].input_filters, width), 3,
             {.strides = {2, 2}, .padding = "same", .use_bias = false, .name = "stem_conv"})(x);
  x = Activation("swish", "stem_activation")(Bn(x, "stem_bn"));
  double total = 0;
  for (const Stage& s : kStages) total += s.num_repeat;  // Keras counts the unscaled repeats
  int b = 0;
  for (int i = 0; i < 6; ++i) {
    const Stage& s = kStages[i];
    int64_t in_f = RoundFilters(s.input_filters, width);
    const int64_t out_f = RoundFilters(s.output_filters, width);
    const int repeats = static_cast<int>(std::ceil(depth * s.num_repeat));
    for (int j = 0; j < repeats; ++j) {
      const int64_t strides = j > 0 ? 1 : s.strides;
      if (j > 0) in_f = out_f;
      x = ConvBlock(x, s, in_f, out_f, strides, 0.2 * b / total, StrCat("block", i + 1, static_cast<char>('a' + j), "_"));
      ++b;
    }
  }
  x = Conv2D(RoundFilters(1280, width), 1, {.padding = "same", .use_bias = false, .name = "top_conv"})(x);
  x = Activation("swish", "top_activation")(Bn(x, "top_bn"));
  if (o.include_top) {
    x = GlobalAveragePooling2D("avg_pool")(x);
    x = Dropout(0.2, "top_dropout")(x);
    x = Dense(o.classes, {.activation = o.classifier_activation, .name = "predictions"})(x);
  } else {
    x = PoolingHead(x, o);
  }
  return MakeModel(in, x, o, StrCat("efficientnetv2-b", variant));
}

}  // namespace strata::nn::zoo
