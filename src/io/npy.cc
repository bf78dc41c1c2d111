#include "io/npy.h"

#include <cstring>
#include <vector>

#include "core/file_util.h"

namespace strata::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct NpyType {
  const char* descr;  // without the byte-order character
  DType dtype;
};
constexpr NpyType kTypes[] = {
    {"b1", DType::kBool},    {"i1", DType::kInt8},    {"i2", DType::kInt16},   {"i4", DType::kInt32},
    {"i8", DType::kInt64},   {"u1", DType::kUInt8},   {"u2", DType::kUInt16},  {"u4", DType::kUInt32},
    {"u8", DType::kUInt64},  {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
};

// Finds `'key':` in the header dict and returns the text after the colon, trimmed.
StatusOr<std::string_view> HeaderValue(std::string_view header, std::string_view key, std::string_view where) {
  const std::string quoted1 = StrCat("'", key, "'");
  const std::string quoted2 = StrCat("\"", key, "\"");
  size_t pos = header.find(quoted1);
  size_t len = quoted1.size();
  if (pos == std::string_view::npos) {
    pos = header.find(quoted2);
    len = quoted2.size();
  }
  if (pos == std::string_view::npos)
    return InvalidArgumentError(where, ": .npy header has no '", key, "' entry: ", header);
  size_t colon = header.find(':', pos + len);
  if (colon == std::string_view::npos) return InvalidArgumentError(where, ": malformed .npy header: ", header);
  std::string_view rest = header.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

StatusOr<Shape> ParseShapeTuple(std::string_view text, std::string_view where) {
  if (text.empty() || text.front() != '(') return InvalidArgumentError(where, ": .npy 'shape' is not a tuple");
  const size_t close = text.find(')');
  if (close == std::string_view::npos) return InvalidArgumentError(where, ": .npy 'shape' tuple is not closed");
  std::string_view inner = text.substr(1, close - 1);
  Shape shape;
  size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == ',')) ++i;
    if (i >= inner.size()) break;
    int64_t v = 0;
    size_t digits = 0;
    while (i < inner.size() && inner[i] >= '0' && inner[i] <= '9') {
      if (v > (int64_t{1} << 50)) return InvalidArgumentError(where, ": .npy dimension too large");
      v = v * 10 + (inner[i] - '0');
      ++i;
      ++digits;
    }
    while (i < inner.size() && inner[i] == 'L') ++i;  // Python 2 longs
    if (digits == 0) return InvalidArgumentError(where, ": .npy 'shape' has a non-integer entry: ", text);
    shape.PushBack(v);
  }
  return shape;
}

// Converts Fortran (column-major) element order to C order in place.
Tensor FortranToC(const Tensor& src) {
  Tensor dst = Tensor::Empty(src.dtype(), src.shape());
  const int rank = src.rank();
  const size_t esize = DTypeSize(src.dtype());
  const int64_t n = src.num_elements();
  std::vector<int64_t> idx(rank, 0);
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  // Walk the source in Fortran order (first index fastest) and compute the C-order offset.
  for (int64_t f = 0; f < n; ++f) {
    int64_t c = 0;
    for (int k = 0; k < rank; ++k) c = c * src.dim(k) + idx[k];
    std::memcpy(d + c * esize, s + f * esize, esize);
    for (int k = 0; k < rank; ++k) {
      if (++idx[k] < src.dim(k)) break;
      idx[k] = 0;
    }
  }
  return dst;
}

}  // namespace

StatusOr<Tensor> ParseNpy(std::string_view bytes, std::string_view where) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    return InvalidArgumentError(where, ": not a .npy file (expected the magic bytes \\x93NUMPY, file has ", bytes.size(),
                                " bytes)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidArgumentError(where, ": truncated .npy header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return UnimplementedError(where, ": .npy format version ", major, " is not supported (expected 1, 2 or 3)");
  }
  if (header_start + header_len > bytes.size()) return InvalidArgumentError(where, ": truncated .npy header");
  std::string_view header = bytes.substr(header_start, header_len);

  STRATA_ASSIGN_OR_RETURN(std::string_view descr_text, HeaderValue(header, "descr", where));
  if (descr_text.size() < 2 || (descr_text[0] != '\'' && descr_text[0] != '"'))
    return InvalidArgumentError(where, ": .npy 'descr' is not a string (structured dtypes are not supported)");
  const size_t descr_end = descr_text.find(descr_text[0], 1);
  if (descr_end == std::string_view::npos) return InvalidArgumentError(where, ": malformed .npy 'descr'");
  std::string_view descr = descr_text.substr(1, descr_end - 1);
  if (descr.size() < 2) return InvalidArgumentError(where, ": malformed .npy 'descr' '", descr, "'");
  const char order = descr[0];
  std::string_view code = descr.substr(1);
  DType dtype = DType::kUndefined;
  for (const auto& t : kTypes)
    if (code == t.descr) dtype = t.dtype;
  if (dtype == DType::kUndefined)
    return UnimplementedError(where, ": .npy dtype '", descr,
                              "' is not supported (expected bool, int8-64, uint8-64, float16, float32 or float64)");
  if (order == '>' && DTypeSize(dtype) > 1)
    return UnimplementedError(where, ": big-endian .npy data ('", descr, "') is not supported; save it little-endian");

  STRATA_ASSIGN_OR_RETURN(std::string_view fortran_text, HeaderValue(header, "fortran_order", where));
  const bool fortran = fortran_text.substr(0, 4) == "True";
  STRATA_ASSIGN_OR_RETURN(std::string_view shape_text, HeaderValue(header, "shape", where));
  STRATA_ASSIGN_OR_RETURN(Shape shape, ParseShapeTuple(shape_text, where));

  const size_t data_start = header_start + header_len;
  // Overflow-safe size check.
  long double want = static_cast<long double>(DTypeSize(dtype));
  for (int64_t d : shape) want *= static_cast<long double>(d);
  if (want != static_cast<long double>(bytes.size() - data_start))
    return InvalidArgumentError(where, ": .npy data size mismatch: shape ", shape.ToString(), " of ", DTypeName(dtype),
                                " needs ", static_cast<double>(want), " bytes, file has ", bytes.size() - data_start);
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  if (t.byte_size() > 0) std::memcpy(t.raw_data(), bytes.data() + data_start, t.byte_size());
  if (dtype == DType::kBool) {
    uint8_t* b = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.num_elements(); ++i) b[i] = b[i] != 0;
  }
  if (fortran && t.rank() > 1) return FortranToC(t);
  return t;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseNpy(bytes, path);
}

StatusOr<std::string> SerializeNpy(const Tensor& t) {
  const char* code = nullptr;
  for (const auto& e : kTypes)
    if (e.dtype == t.dtype()) code = e.descr;
  if (code == nullptr)
    return UnimplementedError("cannot write a ", DTypeName(t.dtype()), " tensor as .npy (numpy has no such dtype)");
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i) {
    shape += std::to_string(t.dim(i));
    if (t.rank() == 1 || i + 1 < t.rank()) shape += ",";
    if (i + 1 < t.rank()) shape += " ";
  }
  shape += ")";
  const char order = DTypeSize(t.dtype()) == 1 ? '|' : '<';
  std::string header = StrCat("{'descr': '", order, code, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so that magic + len + header + '\n' is a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) return InvalidArgumentError("tensor rank too large for a .npy v1 header");
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.raw_data()), t.byte_size());
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& t) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, SerializeNpy(t));
  return WriteFileAtomic(path, bytes);
}

}  // namespace strata::io
