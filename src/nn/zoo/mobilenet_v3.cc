#include "nn/zoo/zoo_internal.h"
namespace strata::nn::zoo {
StatusOr<std::unique_ptr<Model>> MobileNetV3(bool large, const ApplicationOptions& o) {
  return UnimplementedError("MobileNetV3 is not built yet");
}
}  // namespace strata::nn::zoo
