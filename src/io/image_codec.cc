#include "io/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace strata::io {
namespace {

struct TjDeleter {
  void operator()(void* h) const {
    if (h) tjDestroy(h);
  }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

// Height and width of a [H, W] or [H, W, C] uint8 image, and its channels.
Status ImageDims(const Tensor& image, int* h, int* w, int* c, std::string_view codec) {
  if (image.dtype() != DType::kUInt8 || (image.rank() != 2 && image.rank() != 3))
    return InvalidArgumentError(codec, " encoding expects a uint8 image [H, W] or [H, W, C], got ", image.TypeString());
  *h = static_cast<int>(image.dim(0));
  *w = static_cast<int>(image.dim(1));
  *c = image.rank() == 3 ? static_cast<int>(image.dim(2)) : 1;
  if (*h <= 0 || *w <= 0) return InvalidArgumentError(codec, " encoding needs a non-empty image, got ", image.TypeString());
  return Status::OK();
}

Status CheckSize(int64_t h, int64_t w, int64_t c, std::string_view where) {
  if (h <= 0 || w <= 0) return InvalidArgumentError(where, ": image has an empty size ", w, "x", h);
  if (h * w * c > kMaxDecodedImageBytes)
    return InvalidArgumentError(where, ": image of ", w, "x", h, "x", c, " exceeds the decode limit of ",
                                kMaxDecodedImageBytes, " bytes");
  return Status::OK();
}

}  // namespace

ImageFormat SniffImageFormat(std::string_view b) {
  if (b.size() >= 3 && static_cast<uint8_t>(b[0]) == 0xFF && static_cast<uint8_t>(b[1]) == 0xD8 &&
      static_cast<uint8_t>(b[2]) == 0xFF)
    return ImageFormat::kJpeg;
  if (b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels, std::string_view where) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kJpeg: return DecodeJpeg(bytes, channels, where);
    case ImageFormat::kPng: return DecodePng(bytes, channels, where);
    case ImageFormat::kUnknown: break;
  }
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 4); ++i) {
    head += "0123456789abcdef"[static_cast<uint8_t>(bytes[i]) >> 4];
    head += "0123456789abcdef"[static_cast<uint8_t>(bytes[i]) & 15];
    head += ' ';
  }
  return InvalidArgumentError(where, ": not a JPEG or PNG image (", bytes.size(), " bytes, starting ",
                              head.empty() ? "<empty>" : head, ")");
}

StatusOr<Tensor> DecodeJpeg(std::string_view bytes, int channels, std::string_view where) {
  if (channels != 0 && channels != 1 && channels != 3)
    return InvalidArgumentError("JPEG decoding supports channels 0, 1 or 3, got ", channels);
  TjHandle tj(tjInitDecompress());
  if (!tj) return InternalError("tjInitDecompress failed");
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  auto* src = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto n = static_cast<unsigned long>(bytes.size());
  if (tjDecompressHeader3(tj.get(), src, n, &w, &h, &subsamp, &colorspace) != 0)
    return InvalidArgumentError(where, ": corrupt JPEG header (", tjGetErrorStr2(tj.get()), ")");
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    return UnimplementedError(where, ": CMYK/YCCK JPEGs are not supported");
  const int c = channels != 0 ? channels : (colorspace == TJCS_GRAY ? 1 : 3);
  STRATA_RETURN_IF_ERROR(CheckSize(h, w, c, where));
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(DType::kUInt8, Shape{h, w, c}));
  if (tjDecompress2(tj.get(), src, n, out.data<uint8_t>(), w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    const std::string msg = tjGetErrorStr2(tj.get());
    if (msg.find("Premature end") != std::string::npos)
      return DataLossError(where, ": truncated JPEG (", msg, ")");
    return InvalidArgumentError(where, ": corrupt JPEG (", msg, ")");
  }
  return out;
}

namespace {

// libpng reports errors by longjmp. The two functions below that call setjmp hold only trivially destructible
// locals, and no C++ object lives between them and the libpng calls that may jump.
struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t pos;
  char error[200];
};

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "truncated: the data ends early (EOF)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void PngError(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->error, sizeof(src->error), "%s", msg);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

struct PngReadGuard {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReadGuard() {
    if (png) png_destroy_read_struct(&png, &info, nullptr);
  }
};

struct PngInfo {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
};

// Reads the header and sets up the conversions to 8-bit samples with `want` channels (0: as stored).
bool PngSetup(png_structp png, png_infop info, int want, PngInfo* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, png_get_error_ptr(png), PngRead);
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  const bool trns = png_get_valid(png, info, PNG_INFO_tRNS);
  const bool color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
  const bool alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || trns;
  if (want == 0) want = (color ? 3 : 1) + (alpha ? 1 : 0);
  const bool want_color = want >= 3, want_alpha = want == 2 || want == 4;
  if (depth == 16) png_set_scale_16(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (!color && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (trns && want_alpha) png_set_tRNS_to_alpha(png);
  if (alpha && !want_alpha) png_set_strip_alpha(png);
  if (!color && want_color) png_set_gray_to_rgb(png);
  if (color && !want_color) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
  if (!alpha && want_alpha) png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out->width = png_get_image_width(png, info);
  out->height = png_get_image_height(png, info);
  out->channels = png_get_channels(png, info);
  return true;
}

bool PngReadRows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

StatusOr<Tensor> DecodePng(std::string_view bytes, int channels, std::string_view where) {
  if (channels < 0 || channels > 4) return InvalidArgumentError("PNG decoding supports channels 0 to 4, got ", channels);
  PngSource src{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0, {0}};
  PngReadGuard g;
  g.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, PngError, PngWarning);
  g.info = g.png ? png_create_info_struct(g.png) : nullptr;
  if (!g.info) return InternalError("cannot create a PNG decoder");
  png_structp png = g.png;
  png_infop info = g.info;
  PngInfo dims;
  auto failure = [&](std::string_view stage) -> Status {
    const std::string msg = src.error;
    if (msg.find("EOF") != std::string::npos || msg.find("truncat") != std::string::npos)
      return DataLossError(where, ": truncated PNG (", msg, ")");
    return InvalidArgumentError(where, ": corrupt PNG ", stage, " (", msg, ")");
  };
  if (!PngSetup(png, info, channels, &dims)) return failure("header");
  STRATA_RETURN_IF_ERROR(CheckSize(dims.height, dims.width, dims.channels, where));
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(DType::kUInt8, Shape{dims.height, dims.width, dims.channels}));
  std::vector<png_bytep> rows(dims.height);
  const size_t stride = static_cast<size_t>(dims.width) * dims.channels;
  for (png_uint_32 y = 0; y < dims.height; ++y) rows[y] = out.data<uint8_t>() + y * stride;
  if (!PngReadRows(png, info, rows.data())) return failure("data");
  return out;
}

StatusOr<std::string> EncodePng(const Tensor& image) {
  int h, w, c;
  STRATA_RETURN_IF_ERROR(ImageDims(image, &h, &w, &c, "PNG"));
  if (c < 1 || c > 4) return InvalidArgumentError("PNG encoding supports 1 to 4 channels, got ", c);
  static constexpr png_uint_32 kFormats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  png_image img;
  std::memset(&img, 0, sizeof(img));
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(w);
  img.height = static_cast<png_uint_32>(h);
  img.format = kFormats[c];
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, image.data<uint8_t>(), 0, nullptr))
    return InternalError("PNG encoding failed: ", img.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, image.data<uint8_t>(), 0, nullptr))
    return InternalError("PNG encoding failed: ", img.message);
  out.resize(size);
  return out;
}

StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality) {
  int h, w, c;
  STRATA_RETURN_IF_ERROR(ImageDims(image, &h, &w, &c, "JPEG"));
  if (c != 1 && c != 3) return InvalidArgumentError("JPEG encoding supports 1 or 3 channels, got ", c);
  if (quality < 1 || quality > 100) return InvalidArgumentError("JPEG quality must be in [1, 100], got ", quality);
  TjHandle tj(tjInitCompress());
  if (!tj) return InternalError("tjInitCompress failed");
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj.get(), image.data<uint8_t>(), w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                  c == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0) != 0) {
    tjFree(buf);
    return InternalError("JPEG encoding failed: ", tjGetErrorStr2(tj.get()));
  }
  std::string out(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  return out;
}

}  // namespace strata::io
