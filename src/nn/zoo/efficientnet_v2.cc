#include "nn/zoo/zoo_internal.h"
namespace strata::nn::zoo {
StatusOr<std::unique_ptr<Model>> EfficientNetV2(int variant, const ApplicationOptions& o) {
  return UnimplementedError("EfficientNetV2 is not built yet");
}
}  // namespace strata::nn::zoo
