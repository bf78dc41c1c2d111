// MobileNetV3Large and MobileNetV3Small (keras.applications.mobilenet_v3; Howard et al. 2019): one builder, the
// block tables below. Batch norm epsilon 1e-3, momentum 0.999; stride-2 depthwise convolutions get Keras's
// correct_pad ZeroPadding2D and 'valid' padding; squeeze-and-excitation is GlobalAveragePooling2D(keepdims) + two
// 1x1 convolutions + hard_sigmoid + Multiply. include_preprocessing puts Rescaling(1/127.5, -1) first (raw 0..255
// pixels in).
#include "nn/zoo/zoo_internal.h"

namespace strata::nn::zoo {
namespace {

// Keras's _depth: round to a multiple of 8, not below 8 and not more than 10% down.
int64_t Depth(double v, int64_t divisor = 8) {
  int64_t d = std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (d < 0.9 * v) d += divisor;
  return d;
}

KerasTensor Bn(const KerasTensor& x, const std::string& name) {
  return BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}

struct Block {
  double expansion;
  int64_t filters;  // before alpha
  bool wide_kernel;  // the model's kernel (5, or 3 when minimalistic); else 3
  int64_t stride;
  bool se;          // squeeze-and-excitation (unless minimalistic)
  bool use_model_activation;  // hard_swish (relu when minimalistic); else relu
};

// Keras's stack_fn tables.
const std::vector<Block> kLarge = {
    {1, 16, false, 1, false, false},  {4, 24, false, 2, false, false},  {3, 24, false, 1, false, false},
    {3, 40, true, 2, true, false},    {3, 40, true, 1, true, false},    {3, 40, true, 1, true, false},
    {6, 80, false, 2, false, true},   {2.5, 80, false, 1, false, true}, {2.3, 80, false, 1, false, true},
    {2.3, 80, false, 1, false, true}, {6, 112, false, 1, true, true},   {6, 112, false, 1, true, true},
    {6, 160, true, 2, true, true},    {6, 160, true, 1, true, true},    {6, 160, true, 1, true, true}};
const std::vector<Block> kSmall = {
    {1, 16, false, 2, true, false},       {72.0 / 16, 24, false, 2, false, false}, {88.0 / 24, 24, false, 1, false, false},
    {4, 40, true, 2, true, true},         {6, 40, true, 1, true, true},            {6, 40, true, 1, true, true},
    {3, 48, true, 1, true, true},         {3, 48, true, 1, true, true},            {6, 96, true, 2, true, true},
    {6, 96, true, 1, true, true},         {6, 96, true, 1, true, true}};

struct Ctx {
  int64_t kernel;
  std::string activation;
  bool se;
  double alpha;
};

KerasTensor SqueezeExcite(const KerasTensor& in, int64_t filters, const std::string& p) {
  KerasTensor x = GlobalAveragePooling2D(p + "squeeze_excite_avg_pool", true)(in);
  x = Conv2D(Depth(filters * 0.25), 1, {.padding = "same", .name = p + "squeeze_excite_conv"})(x);
  x = Activation("relu", p + "squeeze_excite_relu")(x);
  x = Conv2D(filters, 1, {.padding = "same", .name = p + "squeeze_excite_conv_1"})(x);
  x = Activation("hard_sigmoid")(x);
  return Multiply(p + "squeeze_excite_mul")(std::vector<KerasTensor>{in, x});
}

// Keras's _inverted_res_block; `in_shape` is the block input's (H, W, C).
KerasTensor InvertedResBlock(const KerasTensor& in, std::vector<int64_t>& hwc, const Block& b, int id, const Ctx& c) {
  const int64_t infilters = hwc[2];
  const int64_t filters = Depth(b.filters * c.alpha);
  const int64_t k = b.wide_kernel ? c.kernel : 3;
  const std::string act = b.use_model_activation ? c.activation : "relu";
  std::string p = "expanded_conv_";
  KerasTensor x = in;
  if (id) {
    p = StrCat("expanded_conv_", id, "_");
    x = Conv2D(Depth(infilters * b.expansion), 1, {.padding = "same", .use_bias = false, .name = p + "expand"})(x);
    x = Activation(act)(Bn(x, p + "expand_bn"));
  }
  if (b.stride == 2) {  // imagenet_utils.correct_pad: ((k/2 - 1 + h%2, k/2), (k/2 - 1 + w%2, k/2))
    const int64_t adj_h = 1 - hwc[0] % 2, adj_w = 1 - hwc[1] % 2;
    x = ZeroPadding2D({k / 2 - adj_h, k / 2, k / 2 - adj_w, k / 2}, p + "depthwise_pad")(x);
    hwc[0] = (hwc[0] + k / 2 - adj_h + k / 2 - k) / 2 + 1;
    hwc[1] = (hwc[1] + k / 2 - adj_w + k / 2 - k) / 2 + 1;
  }
  x = DepthwiseConv2D({k, k}, 1,
                      {.strides = {b.stride, b.stride}, .padding = b.stride == 1 ? "same" : "valid", .use_bias = false,
                       .name = p + "depthwise"})(x);
  x = Activation(act)(Bn(x, p + "depthwise_bn"));
  if (b.se && c.se) x = SqueezeExcite(x, Depth(infilters * b.expansion), p);
  x = Conv2D(filters, 1, {.padding = "same", .use_bias = false, .name = p + "project"})(x);
  x = Bn(x, p + "project_bn");
  if (b.stride == 1 && infilters == filters) x = Add(p + "add")(std::vector<KerasTensor>{in, x});
  hwc[2] = filters;
  return x;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> MobileNetV3(bool large, const ApplicationOptions& o, double input_pixel_scale) {
  const std::string keras_name = large ? "MobileNetV3Large" : "MobileNetV3Small";
  STRATA_RETURN_IF_ERROR(CheckHeadOptions(keras_name, o));
  if (!(o.alpha > 0)) return InvalidArgumentError(keras_name, ": alpha must be positive, got ", o.alpha);
  if (!(o.dropout_rate >= 0 && o.dropout_rate < 1))
    return InvalidArgumentError(keras_name, ": dropout_rate must be in [0, 1), got ", o.dropout_rate);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveInputShape(keras_name, o, 224));
  const Ctx c{o.minimalistic ? 3 : 5, o.minimalistic ? "relu" : "hard_swish", !o.minimalistic, o.alpha};
  KerasTensor in = Input(shape, "input_image");
  KerasTensor x = in;
  if (o.include_preprocessing) x = Rescaling(1.0 / (127.5 * input_pixel_scale), -1.0)(x);
  x = Conv2D(16, 3, {.strides = {2, 2}, .padding = "same", .use_bias = false, .name = "conv"})(x);
  x = Activation(c.activation)(Bn(x, "conv_bn"));
  std::vector<int64_t> hwc{(shape[0] + 1) / 2, (shape[1] + 1) / 2, 16};
  const std::vector<Block>& blocks = large ? kLarge : kSmall;
  for (size_t i = 0; i < blocks.size(); ++i) x = InvertedResBlock(x, hwc, blocks[i], static_cast<int>(i), c);
  const int64_t last_conv_ch = Depth(hwc[2] * 6.0);
  int64_t last_point_ch = large ? 1280 : 1024;
  if (o.alpha > 1.0) last_point_ch = Depth(last_point_ch * o.alpha);
  x = Conv2D(last_conv_ch, 1, {.padding = "same", .use_bias = false, .name = "conv_1"})(x);
  x = Activation(c.activation)(Bn(x, "conv_1_bn"));
  if (o.include_top) {
    x = GlobalAveragePooling2D("", true)(x);
    x = Conv2D(last_point_ch, 1, {.padding = "same", .name = "conv_2"})(x);
    x = Activation(c.activation)(x);
    if (o.dropout_rate > 0) x = Dropout(o.dropout_rate)(x);
    x = Conv2D(o.classes, 1, {.padding = "same", .name = "logits"})(x);
    x = Flatten()(x);
    x = Activation(o.classifier_activation, "predictions")(x);
  } else {
    x = PoolingHead(x, o);
  }
  return MakeModel(in, x, o, keras_name);
}

}  // namespace strata::nn::zoo
