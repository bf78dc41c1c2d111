// JPEG (libjpeg-turbo) and PNG (libpng) decoding and encoding to and from uint8 tensors of shape [H, W, C].
#pragma once

#include <string>
#include <string_view>

#include "strata/tensor.h"

namespace strata::io {

enum class ImageFormat { kUnknown, kJpeg, kPng };
// From the magic bytes: JPEG starts ff d8 ff, PNG starts 89 50 4e 47 0d 0a 1a 0a.
ImageFormat SniffImageFormat(std::string_view bytes);

// Largest decoded image accepted (bytes of H*W*C), so that a forged header cannot make us allocate gigabytes.
inline constexpr int64_t kMaxDecodedImageBytes = int64_t{1} << 30;

// Decodes a JPEG or PNG into uint8 [H, W, C]. `channels`: 0 keeps the stored layout (1 gray, 3 RGB; PNG also 2
// gray+alpha, 4 RGBA), 1, 3 or 4 convert. A corrupt, truncated or unsupported image is INVALID_ARGUMENT (DATA_LOSS
// for truncation) naming `where` and what the decoder found; JPEG warnings (corrupt data) count as errors.
StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels = 0, std::string_view where = "image");
StatusOr<Tensor> DecodeJpeg(std::string_view bytes, int channels = 0, std::string_view where = "image");
StatusOr<Tensor> DecodePng(std::string_view bytes, int channels = 0, std::string_view where = "image");

// Encodes uint8 [H, W, C] (C = 1, 2, 3, 4) or [H, W] as PNG (8-bit, lossless).
StatusOr<std::string> EncodePng(const Tensor& image);
// Encodes uint8 [H, W, C] (C = 1 or 3) or [H, W] as baseline JPEG, 4:2:0 for colour.
StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality = 90);

}  // namespace strata::io
