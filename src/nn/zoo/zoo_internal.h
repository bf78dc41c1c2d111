// Shared pieces of the Keras application builders (one file per family in this folder).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/internal.h"

namespace strata::nn::zoo {

// The input shape Keras's obtain_input_shape would use: options.input_shape or (default_size, default_size, 3);
// rank 3, positive, height and width at least min_size.
StatusOr<std::vector<int64_t>> ResolveInputShape(std::string_view model, const ApplicationOptions& o,
                                                 int64_t default_size, int64_t min_size = 32);
// Checks pooling, classes and the classifier activation.
Status CheckHeadOptions(std::string_view model, const ApplicationOptions& o);
// Without the top: pooling "avg" (GlobalAveragePooling2D "avg_pool"), "max" ("max_pool") or none.
KerasTensor PoolingHead(const KerasTensor& x, const ApplicationOptions& o);
// An unbuilt model over one input, with the output named options.output_name (default predictions / features).
std::unique_ptr<Model> MakeModel(const KerasTensor& in, const KerasTensor& out, const ApplicationOptions& o,
                                 std::string name);

// The families. `depth` picks the ResNet (50, 101, 152); `large` the MobileNetV3; `variant` 0..3 the B-series.
// `input_pixel_scale` (MobileNetV3, EfficientNetV2, with include_preprocessing): the inputs are raw 0..255 pixels
// times this (Keras: 1); the preprocessing layers divide it out, so the layers after them see what Keras's see on raw
// pixels. nn::ZooModel (the strata train CLI, whose pipelines feed pixels / 255) passes 1/255.
StatusOr<std::unique_ptr<Model>> ResNetV2(int depth, const ApplicationOptions& o);
StatusOr<std::unique_ptr<Model>> ResNetV1(int depth, const ApplicationOptions& o);
StatusOr<std::unique_ptr<Model>> MobileNetV3(bool large, const ApplicationOptions& o, double input_pixel_scale = 1.0);
StatusOr<std::unique_ptr<Model>> EfficientNetV2(int variant, const ApplicationOptions& o,
                                                double input_pixel_scale = 1.0);
// The unbuilt model of a name (NotFound for an unknown one); input_pixel_scale as above, positive.
StatusOr<std::unique_ptr<Model>> BuildApplication(std::string_view name, const ApplicationOptions& o,
                                                  double input_pixel_scale = 1.0);

// Shared with resnet_v2.cc: conv1_pad, conv1_conv, [conv1_bn, conv1_relu,] pool1_pad, pool1_pool.
KerasTensor ResNetStem(const KerasTensor& in, bool preact, bool use_bias);
// Shared with resnet_v2.cc: [post_bn, post_relu,] then the classifier (avg_pool + predictions) or pooling.
KerasTensor ResNetTop(KerasTensor x, bool preact, const ApplicationOptions& o);

}  // namespace strata::nn::zoo
