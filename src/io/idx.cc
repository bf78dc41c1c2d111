#include "io/idx.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

namespace strata::io {
namespace {

StatusOr<DType> IdxType(uint8_t code) {
  switch (code) {
    case 0x08: return DType::kUInt8;
    case 0x09: return DType::kInt8;
    case 0x0B: return DType::kInt16;
    case 0x0C: return DType::kInt32;
    case 0x0D: return DType::kFloat32;
    case 0x0E: return DType::kFloat64;
    default: break;
  }
  return InvalidArgumentError("unknown IDX element type code 0x", "0123456789abcdef"[code >> 4],
                              "0123456789abcdef"[code & 15], " (expected 08, 09, 0B, 0C, 0D or 0E)");
}

// Deflate expands at most 1032:1, so a gzip file of N bytes holds at most about 1032 N bytes of data.
constexpr uint64_t kMaxGzipRatio = 1032;

std::string HexByte(uint8_t b) { return {"0123456789abcdef"[b >> 4], "0123456789abcdef"[b & 15]}; }

// IDX stores multi-byte values big-endian.
void ToHostOrder(char* data, size_t count, size_t width) {
  if (width == 1) return;
  for (size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

}  // namespace

IdxReader::IdxReader(std::unique_ptr<InputStream> in, DType dtype, std::vector<int64_t> dims, size_t item_bytes,
                     uint64_t max_data_bytes)
    : in_(std::move(in)),
      dtype_(dtype),
      dims_(std::move(dims)),
      item_bytes_(item_bytes),
      max_data_bytes_(max_data_bytes) {}

Shape IdxReader::item_shape() const {
  return dims_.empty() ? Shape() : Shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

Status IdxReader::ReadExactly(char* dst, size_t n, std::string_view what) {
  size_t got = 0;
  while (got < n) {
    STRATA_ASSIGN_OR_RETURN(size_t k, in_->Read(dst + got, n - got));
    if (k == 0)
      return DataLossError("IDX file '", in_->name(), "' is truncated: it ends inside ", what, " (", got, " of ", n,
                           " bytes)");
    got += k;
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<IdxReader>> IdxReader::Open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(Compression sniffed, SniffFileCompression(path));
  STRATA_ASSIGN_OR_RETURN(auto file, OpenFileInput(path));
  // The file's size bounds the data; a gzip member expands at most about 1032 times (deflate's limit).
  uint64_t max_bytes = UINT64_MAX;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    max_bytes =
        sniffed == Compression::kGzip ? (size < (uint64_t{1} << 50) ? size * kMaxGzipRatio + 4096 : UINT64_MAX) : size;
  }
  // Only gzip is expected; an IDX magic (00 00 ..) never looks like a zlib header.
  return FromStream(
      sniffed == Compression::kGzip ? DecompressingInput(std::move(file), Compression::kGzip) : std::move(file),
      max_bytes);
}

StatusOr<std::unique_ptr<IdxReader>> IdxReader::FromStream(std::unique_ptr<InputStream> in, uint64_t max_bytes) {
  unsigned char magic[4] = {};
  size_t got = 0;
  while (got < 4) {
    STRATA_ASSIGN_OR_RETURN(size_t k, in->Read(reinterpret_cast<char*>(magic) + got, 4 - got));
    if (k == 0) break;
    got += k;
  }
  if (got < 4 || magic[0] != 0 || magic[1] != 0)
    return InvalidArgumentError("'", in->name(), "' is not an IDX file: expected the magic 00 00 <type> <ndims>, got ",
                                got, " bytes starting ", static_cast<int>(magic[0]), " ", static_cast<int>(magic[1]));
  auto dtype_or = IdxType(magic[2]);
  if (!dtype_or.ok()) return Status(dtype_or.status()).WithContext(StrCat("IDX file '", in->name(), "'"));
  const DType dtype = *dtype_or;
  const int ndims = magic[3];
  if (ndims > kMaxDims)
    return InvalidArgumentError("IDX file '", in->name(), "' declares ", ndims, " dimensions (magic 00 00 ",
                                HexByte(magic[2]), " ", HexByte(magic[3]), "); IDX files have at most ", kMaxDims,
                                " (MNIST's have 1 or 3)");
  std::vector<int64_t> dims(ndims);
  size_t item_elems = 1;
  for (int i = 0; i < ndims; ++i) {
    unsigned char b[4];
    size_t have = 0;
    while (have < 4) {
      STRATA_ASSIGN_OR_RETURN(size_t k, in->Read(reinterpret_cast<char*>(b) + have, 4 - have));
      if (k == 0) return DataLossError("IDX file '", in->name(), "' is truncated inside its header");
      have += k;
    }
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
    if (i > 0) {
      if (dims[i] > 0 && item_elems > (size_t{1} << 34) / static_cast<size_t>(dims[i]))
        return InvalidArgumentError("IDX file '", in->name(), "' has items larger than 16 GiB: dims ", dims);
      item_elems *= static_cast<size_t>(dims[i]);
    }
  }
  const size_t item_bytes = item_elems * DTypeSize(dtype);
  const uint64_t header_bytes = 4 + 4 * static_cast<uint64_t>(ndims);
  const uint64_t max_data = max_bytes > header_bytes ? max_bytes - header_bytes : 0;
  const int64_t items = ndims == 0 ? 1 : dims[0];
  if (items > 0 && item_bytes > max_data)
    return InvalidArgumentError("IDX file '", in->name(), "' declares items of ", DTypeName(dtype),
                                Shape(std::vector<int64_t>(dims.begin() + std::min(ndims, 1), dims.end())).ToString(),
                                " (", item_bytes, " bytes each), but the file holds at most ", max_data,
                                " bytes of data");
  return std::unique_ptr<IdxReader>(new IdxReader(std::move(in), dtype, std::move(dims), item_bytes, max_data));
}

StatusOr<bool> IdxReader::ReadItem(Tensor* out) {
  if (next_ >= num_items()) return false;
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype_, item_shape()));
  STRATA_RETURN_IF_ERROR(ReadExactly(static_cast<char*>(t.raw_data()), item_bytes_, StrCat("item ", next_)));
  ToHostOrder(static_cast<char*>(t.raw_data()), static_cast<size_t>(t.num_elements()), DTypeSize(dtype_));
  ++next_;
  *out = std::move(t);
  return true;
}

StatusOr<int64_t> IdxReader::SkipItems(int64_t n) {
  const int64_t k = std::clamp<int64_t>(n, 0, num_items() - next_);
  const uint64_t bytes = static_cast<uint64_t>(k) * item_bytes_;
  STRATA_ASSIGN_OR_RETURN(uint64_t skipped, in_->Skip(bytes));
  if (skipped < bytes)
    return DataLossError("IDX file '", in_->name(), "' is truncated: it ends inside item ",
                         next_ + static_cast<int64_t>(skipped / std::max<size_t>(item_bytes_, 1)));
  next_ += k;
  return k;
}

StatusOr<Tensor> ReadIdx(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto reader, IdxReader::Open(path));
  // items * item_bytes, without overflow, against what the file can hold: checked before the tensor is allocated.
  const uint64_t items = static_cast<uint64_t>(reader->num_items());
  const uint64_t item_bytes = reader->item_bytes_;
  if (item_bytes > 0 && items > reader->max_data_bytes_ / item_bytes)
    return InvalidArgumentError("IDX file '", path, "' declares dims ", Shape(reader->dims()).ToString(), " of ",
                                DTypeName(reader->dtype()), " (", items, " items of ", item_bytes,
                                " bytes), more than the at most ", reader->max_data_bytes_,
                                " bytes of data the file holds");
  STRATA_ASSIGN_OR_RETURN(Tensor all, Tensor::Create(reader->dtype(), Shape(reader->dims())));
  const size_t bytes = all.byte_size();
  STRATA_RETURN_IF_ERROR(reader->ReadExactly(static_cast<char*>(all.raw_data()), bytes, "its data"));
  ToHostOrder(static_cast<char*>(all.raw_data()), static_cast<size_t>(all.num_elements()), DTypeSize(reader->dtype()));
  return all;
}

}  // namespace strata::io
