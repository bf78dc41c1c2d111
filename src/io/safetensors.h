// safetensors files (the weights format of Hugging Face and of strata checkpoints): an 8-byte little-endian header
// length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data section, tensors little-endian and row-major, offsets relative to the start of the data section.
//
// The reader is strict: header length against the file size, well-formed JSON object without duplicate keys, known
// dtypes, non-negative integer shapes, offsets in bounds, contiguous and non-overlapping, covering the whole data
// section, byte size = elements x dtype size, BOOL bytes 0 or 1. Errors (DATA_LOSS) name the file and the tensor.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "strata/example.h"
#include "strata/tensor.h"

namespace strata::io {

struct Safetensors {
  NamedTensors tensors;  // in data-section order
  std::map<std::string, std::string> metadata;
  const Tensor* Find(std::string_view name) const;
};

// "F32", "BF16", "I64", "BOOL"...; NotFound-free: InvalidArgument for dtypes safetensors cannot hold (string).
StatusOr<std::string> SafetensorsDTypeName(DType t);
StatusOr<DType> SafetensorsDTypeFromName(std::string_view name);

// The file image. Tensors are laid out by element size (largest first), then by name, after a header padded with
// spaces to a multiple of 8 bytes, so every tensor's data is aligned to its element size. Names must be unique and
// not "__metadata__".
StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors,
                                           const std::map<std::string, std::string>& metadata = {});
// Parses a whole file image; `where` names it in errors.
StatusOr<Safetensors> ParseSafetensors(std::string_view bytes, std::string_view where = "safetensors data");
StatusOr<Safetensors> ReadSafetensors(const std::string& path);
// Writes the file and fsyncs it (not atomic by itself: checkpoints write into a temporary directory).
Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace strata::io
