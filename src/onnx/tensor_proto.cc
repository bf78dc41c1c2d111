#include "onnx/tensor_proto.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/file_util.h"

namespace strata::onnx {
namespace {

// The most elements one tensor of a model may have (4 TiB of float32).
constexpr int64_t kMaxElements = int64_t{1} << 40;

// Copies typed repeated-field data into the tensor, checking the element count.
template <typename Field, typename Conv>
Status CopyField(const Field& field, int64_t n, std::string_view what, std::string_view where, Conv conv) {
  if (static_cast<int64_t>(field.size()) != n)
    return InvalidArgumentError(where, ": ", what, " has ", field.size(), " values, the shape needs ", n);
  for (int64_t i = 0; i < n; ++i) conv(i, field.Get(static_cast<int>(i)));
  return Status::OK();
}

// Where a tensor's external data lies: an open regular file and a byte range inside it, checked against the file's
// size. Nothing is read yet, so the caller can check the length against the tensor's size first.
struct ExternalData {
  RegularFile file;
  std::string location;
  int64_t offset = 0;
  int64_t length = 0;
  std::string Describe() const {
    return StrCat("external data '", location, "' [", offset, ", ", offset + length, ") of '", file.path(), "'");
  }
};

StatusOr<ExternalData> OpenExternal(const ::onnx::TensorProto& proto, const std::string& base_dir,
                                    std::string_view where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (end == kv.value().c_str() || *end != '\0' || v < 0 || errno == ERANGE)
        return InvalidArgumentError(where, ": external data ", kv.key(), " '", kv.value(), "' is not a non-negative integer");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty()) return InvalidArgumentError(where, ": external data has no 'location'");
  if (base_dir.empty())
    return InvalidArgumentError(where, ": tensor uses external data '", location,
                                "' but the model was not loaded from a file, so there is no directory to read it from");
  if (!location.empty() && location[0] == '/')
    return PermissionDeniedError(where, ": external data location '", location,
                                 "' is an absolute path; it must be relative to the model's directory");
  const std::string path = JoinPath(base_dir, location);
  if (!PathIsInside(path, base_dir))
    return PermissionDeniedError(where, ": external data location '", location, "' resolves outside the model's directory '",
                                 base_dir, "'");
  auto file = RegularFile::Open(path);
  if (!file.ok()) return Status(file.status()).WithContext(StrCat(where, ": external data"));
  const int64_t size = file->size();
  if (offset > size) return InvalidArgumentError(where, ": external data offset ", offset, " is past the end of '", path,
                                                 "' (", size, " bytes)");
  if (length < 0) length = size - offset;
  if (length > size - offset)
    return InvalidArgumentError(where, ": external data [", offset, ", ", offset, " + ", length,
                                ") runs past the end of '", path, "' (", size, " bytes)");
  return ExternalData{std::move(file).value(), location, offset, length};
}

// How many values the typed field that holds `dtype` has (float_data for float32, ...), and its name; -1 for types
// without one.
int64_t TypedFieldSize(const ::onnx::TensorProto& proto, DType dtype, const char** field) {
  switch (dtype) {
    case DType::kFloat32:
      *field = "float_data";
      return proto.float_data_size();
    case DType::kFloat64:
      *field = "double_data";
      return proto.double_data_size();
    case DType::kInt64:
      *field = "int64_data";
      return proto.int64_data_size();
    case DType::kUInt32:
    case DType::kUInt64:
      *field = "uint64_data";
      return proto.uint64_data_size();
    case DType::kString:
      *field = "string_data";
      return proto.string_data_size();
    case DType::kInt32:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16:
      *field = "int32_data";
      return proto.int32_data_size();
    default:
      return -1;
  }
}

}  // namespace

StatusOr<Tensor> TensorFromProto(const ::onnx::TensorProto& proto, const std::string& base_dir,
                                 std::string_view where_in) {
  const std::string where = proto.name().empty() ? std::string(where_in) : StrCat(where_in, " tensor '", proto.name(), "'");
  if (proto.has_segment()) return UnimplementedError(where, ": segmented tensors are not supported");
  auto dtype_or = DTypeFromOnnx(proto.data_type());
  if (!dtype_or.ok()) return Status(dtype_or.status()).WithContext(where);
  const DType dtype = *dtype_or;
  Shape shape;
  long double count = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return InvalidArgumentError(where, ": negative dimension ", d);
    shape.PushBack(d);
    count *= static_cast<long double>(d);
  }
  if (count > static_cast<long double>(kMaxElements))
    return InvalidArgumentError(where, ": shape ", shape.ToString(), " has more than 2^40 elements");
  const int64_t n = shape.NumElements();
  const bool external = proto.data_location() == ::onnx::TensorProto_DataLocation_EXTERNAL;
  // Nothing is allocated before the data present is known to fill the shape: a header that claims 10^12 elements
  // over 16 bytes of data is an error naming the tensor, not an allocation failure.
  const std::string type = StrCat(DTypeName(dtype), shape.ToString());
  if (dtype == DType::kString) {
    if (external) return UnimplementedError(where, ": external string data is not supported");
    if (proto.string_data_size() != n)
      return InvalidArgumentError(where, ": string_data has ", proto.string_data_size(), " values, ", type, " needs ",
                                  n);
    STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
    auto* out = t.data<std::string>();
    for (int64_t i = 0; i < n; ++i) out[i] = proto.string_data(static_cast<int>(i));
    return t;
  }
  const int64_t bytes = n * static_cast<int64_t>(DTypeSize(dtype));
  if (external || proto.has_raw_data()) {
    std::optional<ExternalData> ext;
    if (external) {
      STRATA_ASSIGN_OR_RETURN(ExternalData e, OpenExternal(proto, base_dir, where));
      ext.emplace(std::move(e));
    }
    const int64_t have = ext ? ext->length : static_cast<int64_t>(proto.raw_data().size());
    if (have != bytes)
      return InvalidArgumentError(where, ": raw data has ", have, " bytes, ", type, " needs ", bytes,
                                  ext ? StrCat(" (", ext->Describe(), ")") : std::string());
    STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
    if (ext) {
      Status s = ext->file.ReadAt(ext->offset, static_cast<size_t>(bytes), static_cast<char*>(t.raw_data()));
      if (!s.ok()) return s.WithContext(StrCat(where, ": ", ext->Describe()));
    } else if (bytes) {
      std::memcpy(t.raw_data(), proto.raw_data().data(), static_cast<size_t>(bytes));
    }
    if (dtype == DType::kBool) {
      auto* b = static_cast<uint8_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  const char* field = "";
  const int64_t have = TypedFieldSize(proto, dtype, &field);
  if (have < 0) return UnimplementedError(where, ": element type ", DTypeName(dtype), " is not supported");
  if (have != n) return InvalidArgumentError(where, ": ", field, " has ", have, " values, ", type, " needs ", n);
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  Status s;
  void* d = t.raw_data();
  switch (dtype) {
    case DType::kFloat32:
      s = CopyField(proto.float_data(), n, "float_data", where, [&](int64_t i, float v) { static_cast<float*>(d)[i] = v; });
      break;
    case DType::kFloat64:
      s = CopyField(proto.double_data(), n, "double_data", where, [&](int64_t i, double v) { static_cast<double*>(d)[i] = v; });
      break;
    case DType::kInt64:
      s = CopyField(proto.int64_data(), n, "int64_data", where, [&](int64_t i, int64_t v) { static_cast<int64_t*>(d)[i] = v; });
      break;
    case DType::kUInt32:
      s = CopyField(proto.uint64_data(), n, "uint64_data", where,
                    [&](int64_t i, uint64_t v) { static_cast<uint32_t*>(d)[i] = static_cast<uint32_t>(v); });
      break;
    case DType::kUInt64:
      s = CopyField(proto.uint64_data(), n, "uint64_data", where, [&](int64_t i, uint64_t v) { static_cast<uint64_t*>(d)[i] = v; });
      break;
    case DType::kInt32:
      s = CopyField(proto.int32_data(), n, "int32_data", where, [&](int64_t i, int32_t v) { static_cast<int32_t*>(d)[i] = v; });
      break;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16: {
      // Stored one element per int32 (16-bit floats as their bit patterns).
      const size_t es = DTypeSize(dtype);
      s = CopyField(proto.int32_data(), n, "int32_data", where, [&](int64_t i, int32_t v) {
        if (dtype == DType::kBool) v = v != 0;
        std::memcpy(static_cast<char*>(d) + i * es, &v, es);  // little-endian: the low bytes
      });
      break;
    }
    default:
      s = UnimplementedError(where, ": element type ", DTypeName(dtype), " is not supported");
  }
  if (!s.ok()) return s;
  return t;
}

void TensorToProto(const Tensor& t, ::onnx::TensorProto* proto) {
  proto->set_data_type(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) proto->add_dims(d);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.values<std::string>()) proto->add_string_data(s);
    return;
  }
  proto->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.byte_size()));
}

}  // namespace strata::onnx
