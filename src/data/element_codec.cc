// Binary element encoding for the file cache:
//   u32 tensor count, then per tensor: name, u8 dtype, u8 rank, rank x i64 dims, values
//     (numbers: raw little-endian bytes; strings: each as u64 length + bytes)
//   u32 metadata rows, then per row: u32 entries, each key + value
// where a name/key/value is u64 length + bytes. All integers little-endian.
#include <cstring>

#include "data/dataset_impl.h"

namespace strata::data::internal {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

void PutString(std::string* out, std::string_view s) {
  Put<uint64_t>(out, s.size());
  out->append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  template <typename T>
  Status Get(T* v) {
    if (b_.size() - pos_ < sizeof(T)) return Short(sizeof(T));
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::OK();
  }
  Status GetBytes(size_t n, const char** p) {
    if (b_.size() - pos_ < n) return Short(n);
    *p = b_.data() + pos_;
    pos_ += n;
    return Status::OK();
  }
  Status GetString(std::string* s) {
    uint64_t n = 0;
    STRATA_RETURN_IF_ERROR(Get(&n));
    const char* p = nullptr;
    STRATA_RETURN_IF_ERROR(GetBytes(static_cast<size_t>(std::min<uint64_t>(n, SIZE_MAX)), &p));
    s->assign(p, static_cast<size_t>(n));
    return Status::OK();
  }
  bool done() const { return pos_ == b_.size(); }
  size_t left() const { return b_.size() - pos_; }

 private:
  Status Short(size_t want) const {
    return DataLossError("cached element is damaged: needs ", want, " more bytes at byte ", pos_, " of ", b_.size());
  }
  std::string_view b_;
  size_t pos_ = 0;
};

}  // namespace

void SerializeElement(const Element& e, std::string* out) {
  out->clear();
  Put<uint32_t>(out, static_cast<uint32_t>(e.tensors.size()));
  for (const auto& [name, t] : e.tensors) {
    PutString(out, name);
    Put<uint8_t>(out, static_cast<uint8_t>(t.dtype()));
    Put<uint8_t>(out, static_cast<uint8_t>(t.rank()));
    for (int64_t d : t.shape()) Put<int64_t>(out, d);
    if (t.dtype() == DType::kString) {
      for (const std::string& s : t.values<std::string>()) PutString(out, s);
    } else {
      out->append(static_cast<const char*>(t.raw_data()), t.byte_size());
    }
  }
  Put<uint32_t>(out, static_cast<uint32_t>(e.metadata.size()));
  for (const Metadata& m : e.metadata) {
    Put<uint32_t>(out, static_cast<uint32_t>(m.size()));
    for (const auto& [k, v] : m) {
      PutString(out, k);
      PutString(out, v);
    }
  }
}

Status DeserializeElement(std::string_view bytes, Element* out) {
  Reader r(bytes);
  out->tensors.clear();
  out->metadata.clear();
  uint32_t count = 0;
  STRATA_RETURN_IF_ERROR(r.Get(&count));
  for (uint32_t i = 0; i < count; ++i) {
    std::string name;
    uint8_t dtype = 0, rank = 0;
    STRATA_RETURN_IF_ERROR(r.GetString(&name));
    STRATA_RETURN_IF_ERROR(r.Get(&dtype));
    STRATA_RETURN_IF_ERROR(r.Get(&rank));
    const auto type = static_cast<DType>(dtype);
    if (DTypeSize(type) == 0)
      return DataLossError("cached element is damaged: unknown dtype ", static_cast<int>(dtype));
    Shape shape;
    uint64_t elements = 1;
    for (int d = 0; d < rank; ++d) {
      int64_t dim = 0;
      STRATA_RETURN_IF_ERROR(r.Get(&dim));
      if (dim < 0 || (dim > 0 && elements > (uint64_t{1} << 40) / static_cast<uint64_t>(dim)))
        return DataLossError("cached element is damaged: tensor '", name, "' has impossible dimension ", dim);
      elements *= static_cast<uint64_t>(dim);
      shape.PushBack(dim);
    }
    // Each value takes at least its width (numbers) or its 8-byte length (strings) in the encoding.
    const uint64_t min_bytes = elements * (type == DType::kString ? 8 : DTypeSize(type));
    if (min_bytes > r.left())
      return DataLossError("cached element is damaged: tensor '", name, "' needs ", min_bytes, " bytes, ", r.left(),
                           " are left");
    STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(type, shape));
    if (type == DType::kString) {
      for (std::string& s : t.mutable_values<std::string>()) STRATA_RETURN_IF_ERROR(r.GetString(&s));
    } else {
      const char* p = nullptr;
      STRATA_RETURN_IF_ERROR(r.GetBytes(t.byte_size(), &p));
      if (t.byte_size()) std::memcpy(t.raw_data(), p, t.byte_size());
    }
    out->tensors.emplace_back(std::move(name), std::move(t));
  }
  uint32_t rows = 0;
  STRATA_RETURN_IF_ERROR(r.Get(&rows));
  for (uint32_t i = 0; i < rows; ++i) {
    uint32_t n = 0;
    STRATA_RETURN_IF_ERROR(r.Get(&n));
    Metadata m;
    for (uint32_t j = 0; j < n; ++j) {
      std::string k, v;
      STRATA_RETURN_IF_ERROR(r.GetString(&k));
      STRATA_RETURN_IF_ERROR(r.GetString(&v));
      m.emplace(std::move(k), std::move(v));
    }
    out->metadata.push_back(std::move(m));
  }
  if (!r.done()) return DataLossError("cached element is damaged: ", r.left(), " unexpected trailing bytes");
  return Status::OK();
}

}  // namespace strata::data::internal
