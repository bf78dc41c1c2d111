// nn::Application: the keras.applications registry (name -> family builder) and the argument checks the families
// share.
#include "nn/zoo/zoo_internal.h"

namespace strata::nn {
namespace zoo {

StatusOr<std::vector<int64_t>> ResolveInputShape(std::string_view model, const ApplicationOptions& o,
                                                 int64_t default_size, int64_t min_size) {
  std::vector<int64_t> shape = o.input_shape;
  if (shape.empty()) shape = {default_size, default_size, 3};
  if (shape.size() != 3 || shape[0] <= 0 || shape[1] <= 0 || shape[2] <= 0)
    return InvalidArgumentError(model, ": input_shape must be three positive integers (height, width, channels), got ",
                                shape);
  if (shape[0] < min_size || shape[1] < min_size)
    return InvalidArgumentError(model, ": input height and width must be at least ", min_size, ", got ", shape);
  return shape;
}

Status CheckHeadOptions(std::string_view model, const ApplicationOptions& o) {
  if (o.include_top && o.classes < 1)
    return InvalidArgumentError(model, ": classes must be positive, got ", o.classes);
  if (!o.include_top && !o.pooling.empty() && o.pooling != "avg" && o.pooling != "max")
    return InvalidArgumentError(model, ": pooling must be empty (none), 'avg' or 'max', got '", o.pooling, "'");
  return Status::OK();
}

KerasTensor PoolingHead(const KerasTensor& x, const ApplicationOptions& o) {
  if (o.pooling == "avg") return GlobalAveragePooling2D("avg_pool")(x);
  if (o.pooling == "max") return GlobalMaxPooling2D("max_pool")(x);
  return x;
}

std::unique_ptr<Model> MakeModel(const KerasTensor& in, const KerasTensor& out, const ApplicationOptions& o,
                                 std::string name) {
  std::string output = o.output_name;
  if (output.empty()) output = o.include_top ? "predictions" : "features";
  return std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{output, out}},
                                 std::move(name));
}

StatusOr<std::unique_ptr<Model>> BuildApplication(std::string_view name, const ApplicationOptions& o,
                                                  double input_pixel_scale) {
  if (!(input_pixel_scale > 0))
    return InvalidArgumentError(name, ": input_pixel_scale must be positive, got ", input_pixel_scale);
  if (name == "ResNet50V2") return ResNetV2(50, o);
  if (name == "ResNet101V2") return ResNetV2(101, o);
  if (name == "ResNet152V2") return ResNetV2(152, o);
  if (name == "ResNet50") return ResNetV1(50, o);
  if (name == "MobileNetV3Large") return MobileNetV3(true, o, input_pixel_scale);
  if (name == "MobileNetV3Small") return MobileNetV3(false, o, input_pixel_scale);
  if (name.size() == 16 && name.substr(0, 15) == "EfficientNetV2B" && name[15] >= '0' && name[15] <= '3')
    return EfficientNetV2(name[15] - '0', o, input_pixel_scale);
  return NotFoundError("unknown application '", name, "'; expected one of ", ApplicationNames());
}

}  // namespace zoo

std::vector<std::string> ApplicationNames() {
  return {"ResNet50V2",       "ResNet101V2",       "ResNet152V2",       "ResNet50",          "MobileNetV3Large",
          "MobileNetV3Small", "EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3"};
}

StatusOr<std::unique_ptr<Model>> Application(std::string_view name, const ApplicationOptions& options,
                                             uint64_t seed) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, zoo::BuildApplication(name, options));
  STRATA_RETURN_IF_ERROR(model->Build(seed));
  if (!options.weights.empty()) STRATA_RETURN_IF_ERROR(LoadKerasWeights(*model, options.weights));
  return model;
}

}  // namespace strata::nn
