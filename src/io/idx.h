// IDX files (the MNIST / Fashion-MNIST format), plain or gzip-compressed (detected from the gzip magic):
//   00 00 <type> <ndims> | ndims big-endian uint32 dimensions | items, big-endian, row-major
// type: 08 uint8, 09 int8, 0B int16, 0C int32, 0D float32, 0E float64. Item i is the slice [i, ...] of dim 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/stream.h"
#include "strata/tensor.h"

namespace strata::io {

class IdxReader {
 public:
  // IDX files in use have 1 to 4 dimensions; a header that declares more than this is refused.
  static constexpr int kMaxDims = 8;

  // The header is checked before anything is allocated: at most kMaxDims dimensions, and items (ReadIdx: the whole
  // data) no larger than the file can hold.
  static StatusOr<std::unique_ptr<IdxReader>> Open(const std::string& path);
  // Parses the header from `in` (already decompressed). `max_bytes` bounds the length of the stream (header
  // included) when it is known: the file's size, or what a compressed file can expand to.
  static StatusOr<std::unique_ptr<IdxReader>> FromStream(std::unique_ptr<InputStream> in,
                                                         uint64_t max_bytes = UINT64_MAX);

  DType dtype() const { return dtype_; }
  // All dimensions; dims()[0] is the number of items.
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t num_items() const { return dims_.empty() ? 1 : dims_[0]; }
  // The shape of one item (dims()[1:]).
  Shape item_shape() const;

  // Reads the next item into a new tensor of item_shape(); false when all items have been read.
  StatusOr<bool> ReadItem(Tensor* out);
  // Skips `n` items (fewer at the end); returns how many were skipped.
  StatusOr<int64_t> SkipItems(int64_t n);
  int64_t items_read() const { return next_; }

 private:
  friend StatusOr<Tensor> ReadIdx(const std::string& path);
  IdxReader(std::unique_ptr<InputStream> in, DType dtype, std::vector<int64_t> dims, size_t item_bytes,
            uint64_t max_data_bytes);
  Status ReadExactly(char* dst, size_t n, std::string_view what);

  std::unique_ptr<InputStream> in_;
  DType dtype_;
  std::vector<int64_t> dims_;
  size_t item_bytes_;
  uint64_t max_data_bytes_;  // the most data bytes the stream can hold after the header
  int64_t next_ = 0;
};

// Reads a whole IDX file into one tensor of shape dims().
StatusOr<Tensor> ReadIdx(const std::string& path);

}  // namespace strata::io
