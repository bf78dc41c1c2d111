// safetensors writer and strict reader (see safetensors.h).
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/file_util.h"
#include "core/json.h"

namespace strata::io {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the reference implementation's limit
constexpr char kMetadataKey[] = "__metadata__";

struct TypeName {
  const char* name;
  DType dtype;
};
constexpr TypeName kTypes[] = {
    {"F64", DType::kFloat64}, {"F32", DType::kFloat32}, {"F16", DType::kFloat16}, {"BF16", DType::kBFloat16},
    {"I64", DType::kInt64},   {"I32", DType::kInt32},   {"I16", DType::kInt16},   {"I8", DType::kInt8},
    {"U64", DType::kUInt64},  {"U32", DType::kUInt32},  {"U16", DType::kUInt16},  {"U8", DType::kUInt8},
    {"BOOL", DType::kBool},
};

// One tensor entry of the header, before its data is copied.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

StatusOr<uint64_t> NonNegativeInt(const Json& v, std::string_view what, std::string_view where,
                                  std::string_view tensor) {
  if (!v.is_int() || v.as_int() < 0)
    return DataLossError(where, ": tensor '", tensor, "': ", what, " must be a non-negative integer, got ", v.Dump());
  return static_cast<uint64_t>(v.as_int());
}

StatusOr<Entry> ParseEntry(const std::string& name, const Json& v, std::string_view where) {
  if (!v.is_object())
    return DataLossError(where, ": tensor '", name, "': expected an object {dtype, shape, data_offsets}, got ",
                         v.Dump());
  for (const auto& [k, unused] : v.as_object())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      return DataLossError(where, ": tensor '", name, "': unexpected key '", k,
                           "' (expected dtype, shape, data_offsets)");
  Entry e;
  e.name = name;
  const Json* dtype = v.Find("dtype");
  const Json* shape = v.Find("shape");
  const Json* offsets = v.Find("data_offsets");
  if (!dtype || !shape || !offsets)
    return DataLossError(where, ": tensor '", name, "': missing ",
                         !dtype   ? "dtype"
                         : !shape ? "shape"
                                  : "data_offsets");
  if (!dtype->is_string()) return DataLossError(where, ": tensor '", name, "': dtype must be a string");
  auto t = SafetensorsDTypeFromName(dtype->as_string());
  if (!t.ok()) return DataLossError(where, ": tensor '", name, "': ", t.status().message());
  e.dtype = *t;
  if (!shape->is_array()) return DataLossError(where, ": tensor '", name, "': shape must be an array");
  if (shape->size() > 64) return DataLossError(where, ": tensor '", name, "': ", shape->size(), " dimensions");
  std::vector<int64_t> dims;
  for (const Json& d : shape->as_array()) {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, NonNegativeInt(d, "a dimension", where, name));
    dims.push_back(static_cast<int64_t>(n));
  }
  if (!offsets->is_array() || offsets->size() != 2)
    return DataLossError(where, ": tensor '", name, "': data_offsets must be [begin, end], got ", offsets->Dump());
  STRATA_ASSIGN_OR_RETURN(e.begin, NonNegativeInt((*offsets)[0], "data_offsets[0]", where, name));
  STRATA_ASSIGN_OR_RETURN(e.end, NonNegativeInt((*offsets)[1], "data_offsets[1]", where, name));
  if (e.end < e.begin)
    return DataLossError(where, ": tensor '", name, "': data_offsets [", e.begin, ", ", e.end, "] end before begin");
  // Byte size = elements x dtype size, without overflow (the offsets already bound it by the file size).
  unsigned __int128 bytes = DTypeSize(e.dtype);
  for (int64_t d : dims) {
    bytes *= static_cast<uint64_t>(d);
    if (bytes > (static_cast<unsigned __int128>(1) << 64)) bytes = static_cast<unsigned __int128>(1) << 64;
  }
  if (bytes != e.end - e.begin) {
    const std::string need = bytes == (static_cast<unsigned __int128>(1) << 64) ? std::string("more than 2^64")
                                                                                : StrCat(static_cast<uint64_t>(bytes));
    return DataLossError(where, ": tensor '", name, "': ", dtype->as_string(), " shape ", shape->Dump(), " needs ",
                         need, " bytes, data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin);
  }
  unsigned __int128 nonzero = 1;  // a zero dimension makes any shape empty, but the others must still be sane
  for (int64_t d : dims)
    if (d > 0 && (nonzero *= static_cast<uint64_t>(d)) > (static_cast<unsigned __int128>(1) << 62))
      return DataLossError(where, ": tensor '", name, "': shape ", shape->Dump(), " is too large");
  e.shape = Shape(dims);
  return e;
}

// The JSON model keeps the last of repeated keys; the format forbids them. Scans the (already parsed, so
// well-formed) header text for a key repeated within one object, at any depth. Returns it, or "" when none.
std::string RepeatedKey(std::string_view text) {
  std::vector<std::set<std::string>> objects;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{')
      objects.emplace_back();
    else if (c == '}' && !objects.empty())
      objects.pop_back();
    else if (c == '"') {
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) ++j;
      if (j < text.size() && text[j] == ':' && !objects.empty()) {
        auto key = Json::Parse(text.substr(start, i + 1 - start));
        const std::string k =
            key.ok() && key->is_string() ? key->as_string() : std::string(text.substr(start, i + 1 - start));
        if (!objects.back().insert(k).second) return k;
      }
    }
  }
  return "";
}

}  // namespace

const Tensor* Safetensors::Find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

StatusOr<std::string> SafetensorsDTypeName(DType t) {
  for (const TypeName& n : kTypes)
    if (n.dtype == t) return std::string(n.name);
  return InvalidArgumentError("safetensors cannot hold ", DTypeName(t), " tensors");
}

StatusOr<DType> SafetensorsDTypeFromName(std::string_view name) {
  for (const TypeName& n : kTypes)
    if (name == n.name) return n.dtype;
  return InvalidArgumentError("unsupported dtype '", name,
                              "' (expected F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8 or BOOL)");
}

StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order(tensors.size());
  std::set<std::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    order[i] = i;
    const auto& [name, t] = tensors[i];
    if (name == kMetadataKey) return InvalidArgumentError("a tensor cannot be named '", kMetadataKey, "'");
    if (!names.insert(name).second) return InvalidArgumentError("two tensors are named '", name, "'");
    auto type = SafetensorsDTypeName(t.dtype());
    if (!type.ok()) return Status(type.status()).WithContext(StrCat("tensor '", name, "'"));
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t sa = DTypeSize(tensors[a].second.dtype()), sb = DTypeSize(tensors[b].second.dtype());
    return sa != sb ? sa > sb : tensors[a].first < tensors[b].first;
  });
  std::string header = "{";
  if (!metadata.empty()) {
    AppendJsonString(&header, kMetadataKey);
    header += ":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ",";
      first = false;
      AppendJsonString(&header, k);
      header += ":";
      AppendJsonString(&header, v);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    if (header.size() > 1) header += ",";
    AppendJsonString(&header, name);
    header += StrCat(":{\"dtype\":\"", *SafetensorsDTypeName(t.dtype()), "\",\"shape\":[");
    for (int j = 0; j < t.rank(); ++j) header += StrCat(j ? "," : "", t.dim(j));
    header += StrCat("],\"data_offsets\":[", offset, ",", offset + t.byte_size(), "]}");
    offset += t.byte_size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + header.size() + offset);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += header;
  for (size_t i : order) {
    const Tensor& t = tensors[i].second;
    out.append(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
  return out;
}

StatusOr<Safetensors> ParseSafetensors(std::string_view bytes, std::string_view where) {
  if (bytes.size() < 8)
    return DataLossError(where, ": ", bytes.size(), " bytes, shorter than the 8-byte safetensors header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (n > bytes.size() - 8)
    return DataLossError(where, ": header length ", n, " exceeds the ", bytes.size() - 8,
                         " bytes that follow it (truncated file, or not safetensors)");
  if (n > kMaxHeaderBytes) return DataLossError(where, ": header length ", n, " exceeds the 100 MiB limit");
  const std::string_view text = bytes.substr(8, n);
  if (text.empty() || text[0] != '{') return DataLossError(where, ": the header does not start with '{'");
  auto parsed = Json::Parse(text, StrCat(where, " header"));
  if (!parsed.ok()) return DataLossError(parsed.status().message());
  const Json& header = *parsed;
  if (!header.is_object()) return DataLossError(where, ": the header is not a JSON object");
  if (const std::string k = RepeatedKey(text); !k.empty())
    return DataLossError(where, ": key '", k, "' appears twice in one object of the header");
  const std::string_view data = bytes.substr(8 + n);
  Safetensors out;
  std::vector<Entry> entries;
  for (const auto& [key, v] : header.as_object()) {
    if (key == kMetadataKey) {
      if (!v.is_object()) return DataLossError(where, ": __metadata__ must be an object of strings");
      for (const auto& [mk, mv] : v.as_object()) {
        if (!mv.is_string()) return DataLossError(where, ": __metadata__ '", mk, "' is not a string: ", mv.Dump());
        out.metadata[mk] = mv.as_string();
      }
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Entry e, ParseEntry(key, v, where));
    if (e.end > data.size())
      return DataLossError(where, ": tensor '", key, "': data_offsets [", e.begin, ", ", e.end,
                           "] run past the data section of ", data.size(), " bytes");
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const Entry& e : entries) {
    if (e.begin != cursor)
      return DataLossError(where, ": tensor '", e.name, "' starts at data offset ", e.begin, ", expected ", cursor,
                           e.begin < cursor ? " (it overlaps the previous tensor)" : " (a gap before it)");
    cursor = e.end;
  }
  if (cursor != data.size())
    return DataLossError(where, ": the tensors cover ", cursor, " of the ", data.size(),
                         " bytes of the data section (trailing bytes)");
  for (Entry& e : entries) {
    Tensor t = Tensor::Empty(e.dtype, e.shape);
    const char* src = data.data() + e.begin;
    if (e.dtype == DType::kBool) {
      for (uint64_t i = 0; i < e.end - e.begin; ++i)
        if (static_cast<uint8_t>(src[i]) > 1)
          return DataLossError(where, ": tensor '", e.name, "': BOOL element ", i, " is ",
                               static_cast<int>(static_cast<uint8_t>(src[i])), ", expected 0 or 1");
    }
    if (t.byte_size() > 0) std::memcpy(t.raw_data(), src, t.byte_size());
    out.tensors.emplace_back(std::move(e.name), std::move(t));
  }
  return out;
}

StatusOr<Safetensors> ReadSafetensors(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseSafetensors(bytes, path);
}

Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                        const std::map<std::string, std::string>& metadata) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(tensors, metadata));
  return WriteFileAtomic(path, bytes);
}

}  // namespace strata::io
