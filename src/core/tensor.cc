#include <algorithm>
#include <new>

#include "strata/tensor.h"

namespace strata {

StatusOr<std::shared_ptr<Buffer>> Buffer::Allocate(Allocator* alloc, size_t bytes, DType dtype, int64_t count) {
  STRATA_ASSIGN_OR_RETURN(void* p, alloc->Allocate(bytes));
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = p;
  b->bytes_ = bytes;
  b->alloc_ = alloc;
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(p);
    for (int64_t i = 0; i < count; ++i) new (s + i) std::string();
    b->strings_ = count;
  }
  return b;
}

std::shared_ptr<Buffer> Buffer::Borrow(void* data, size_t bytes, std::shared_ptr<void> keepalive) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = data;
  b->bytes_ = bytes;
  b->keepalive_ = std::move(keepalive);
  return b;
}

Buffer::~Buffer() {
  if (strings_ > 0) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < strings_; ++i) s[i].~basic_string();
  }
  if (alloc_ != nullptr) alloc_->Free(data_, bytes_);
}

StatusOr<Tensor> Tensor::Create(DType dtype, const Shape& shape, Allocator* alloc) {
  if (dtype == DType::kUndefined) return InvalidArgumentError("cannot create a tensor of undefined element type");
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgumentError("cannot create a tensor of negative dimension: shape ", shape.ToString());
    if (__builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 48))
      return ResourceExhaustedError("cannot create a tensor of shape ", shape.ToString(), ": too many elements");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(DTypeSize(dtype)), &bytes))
    return ResourceExhaustedError("cannot create a tensor of shape ", shape.ToString(), ": too many bytes");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  const int64_t n = shape.NumElements();
  STRATA_ASSIGN_OR_RETURN(t.buffer_, Buffer::Allocate(alloc, static_cast<size_t>(n) * DTypeSize(dtype), dtype, n));
  return t;
}

Tensor Tensor::Empty(DType dtype, const Shape& shape) {
  auto t = Create(dtype, shape);
  STRATA_CHECK(t.ok(), t.status().ToString());
  return std::move(t).value();
}

Tensor Tensor::Zeros(DType dtype, const Shape& shape) {
  Tensor t = Empty(dtype, shape);
  if (dtype != DType::kString) std::memset(t.raw_data(), 0, t.byte_size());
  return t;
}

Tensor Tensor::Wrap(DType dtype, const Shape& shape, void* data, std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buffer_ = Buffer::Borrow(data, static_cast<size_t>(shape.NumElements()) * DTypeSize(dtype), std::move(keepalive));
  return t;
}

StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (shape.NumElements() != num_elements())
    return InvalidArgumentError("cannot reshape ", TypeString(), " (", num_elements(), " elements) to ",
                                shape.ToString(), " (", shape.NumElements(), " elements)");
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

void Tensor::CopyFrom(const Tensor& src) {
  STRATA_CHECK(src.dtype_ == dtype_ && src.num_elements() == num_elements(), "CopyFrom ", src.TypeString(), " into ",
               TypeString());
  if (dtype_ == DType::kString) {
    const auto* s = src.data<std::string>();
    auto* d = data<std::string>();
    std::copy(s, s + num_elements(), d);
  } else if (byte_size() > 0 && raw_data() != src.raw_data()) {
    std::memmove(raw_data(), src.raw_data(), byte_size());
  }
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t = Empty(dtype_, shape_);
  t.CopyFrom(*this);
  return t;
}

std::string Tensor::TypeString() const { return StrCat(DTypeName(dtype_), shape_.ToString()); }

namespace {
template <typename T>
void AppendValues(const Tensor& t, int64_t n, std::string* out) {
  const T* d = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if (i) *out += ", ";
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      internal::AppendPiece(out, static_cast<float>(d[i]));
    } else if constexpr (std::is_same_v<T, std::string>) {
      *out += '"';
      *out += d[i];
      *out += '"';
    } else {
      internal::AppendPiece(out, d[i]);
    }
  }
}
}  // namespace

std::string Tensor::DebugString(int max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  std::string out = TypeString() + " {";
  const int64_t n = std::min<int64_t>(num_elements(), max_elements);
  switch (dtype_) {
    case DType::kFloat32: AppendValues<float>(*this, n, &out); break;
    case DType::kFloat64: AppendValues<double>(*this, n, &out); break;
    case DType::kFloat16: AppendValues<Float16>(*this, n, &out); break;
    case DType::kBFloat16: AppendValues<BFloat16>(*this, n, &out); break;
    case DType::kInt8: AppendValues<int8_t>(*this, n, &out); break;
    case DType::kUInt8: AppendValues<uint8_t>(*this, n, &out); break;
    case DType::kInt16: AppendValues<int16_t>(*this, n, &out); break;
    case DType::kUInt16: AppendValues<uint16_t>(*this, n, &out); break;
    case DType::kInt32: AppendValues<int32_t>(*this, n, &out); break;
    case DType::kUInt32: AppendValues<uint32_t>(*this, n, &out); break;
    case DType::kInt64: AppendValues<int64_t>(*this, n, &out); break;
    case DType::kUInt64: AppendValues<uint64_t>(*this, n, &out); break;
    case DType::kBool: AppendValues<bool>(*this, n, &out); break;
    case DType::kString: AppendValues<std::string>(*this, n, &out); break;
    case DType::kUndefined: break;
  }
  if (num_elements() > n) out += ", ...";
  out += "}";
  return out;
}

}  // namespace strata
