// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the tensor format of the command line.
#pragma once

#include <string>
#include <string_view>

#include "strata/tensor.h"

namespace strata::io {

// Parses a whole .npy file image. Supports little-endian bool, int8..int64, uint8..uint64, float16, float32 and
// float64, C or Fortran order. `where` names the source in error messages.
StatusOr<Tensor> ParseNpy(std::string_view bytes, std::string_view where = "npy data");
StatusOr<Tensor> ReadNpy(const std::string& path);
// Serialises a tensor (not bfloat16 or string: numpy has no such dtype) as a version 1.0 .npy image.
StatusOr<std::string> SerializeNpy(const Tensor& t);
Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace strata::io
