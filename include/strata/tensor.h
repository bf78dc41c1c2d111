// Element types, shapes, allocators and the host Tensor.
//
// A Tensor is a typed, shaped view of a reference-counted, 64-byte aligned buffer. Copies share the buffer;
// Clone() copies the bytes. String tensors hold std::string elements.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata {

// ---- element types (numbers match onnx.TensorProto.DataType) ----

enum class DType : uint8_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Bytes per element (sizeof(std::string) for kString, 0 for kUndefined).
size_t DTypeSize(DType t);
// "float32", "int64", "bfloat16", ... (numpy spelling).
std::string_view DTypeName(DType t);
// Parses the numpy/ONNX spellings ("float32", "float", "int64", "bool", "bfloat16", ...).
StatusOr<DType> DTypeFromName(std::string_view name);
// Maps an onnx.TensorProto.DataType number; unsupported numbers give InvalidArgument.
StatusOr<DType> DTypeFromOnnx(int onnx_type);
bool IsFloatingPoint(DType t);  // float16, bfloat16, float32, float64
bool IsInteger(DType t);        // signed and unsigned integers (not bool)
bool IsSignedInteger(DType t);

// IEEE half precision, stored as bits; arithmetic converts to float.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f);
  explicit operator float() const;
  static Float16 FromBits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
};

// bfloat16 (the top 16 bits of a float32; conversion rounds to nearest even).
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static BFloat16 FromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

// The C++ type of each DType, and the reverse.
template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<Float16>() { return DType::kFloat16; }
template <> constexpr DType DTypeOf<BFloat16>() { return DType::kBFloat16; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <> constexpr DType DTypeOf<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }
template <> constexpr DType DTypeOf<std::string>() { return DType::kString; }

// ---- shapes ----

// A concrete shape: every dimension known and >= 0. Up to kInline dimensions live inside the object, so
// building a Shape on the hot path does not allocate.
class Shape {
 public:
  static constexpr int kInline = 6;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.size()); }
  explicit Shape(std::span<const int64_t> dims) { Assign(dims.data(), dims.size()); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims.data(), dims.size()); }
  Shape(const Shape& o) { Assign(o.data(), o.rank()); }
  Shape& operator=(const Shape& o) {
    if (this != &o) Assign(o.data(), o.rank());
    return *this;
  }

  int rank() const { return rank_; }
  size_t size() const { return static_cast<size_t>(rank_); }
  const int64_t* data() const { return rank_ <= kInline ? inline_ : heap_.data(); }
  int64_t* data() { return rank_ <= kInline ? inline_ : heap_.data(); }
  int64_t operator[](int i) const { return data()[i]; }
  int64_t& operator[](int i) { return data()[i]; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + rank_; }
  std::span<const int64_t> dims() const { return {data(), size()}; }
  std::vector<int64_t> ToVector() const { return {begin(), end()}; }

  // Product of the dimensions (1 for a scalar).
  int64_t NumElements() const;
  // Product of dims [from, to).
  int64_t Product(int from, int to) const;
  void Resize(int rank);
  void PushBack(int64_t d);
  // "[2,3,224,224]"
  std::string ToString() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  void Assign(const int64_t* d, size_t n);
  int rank_ = 0;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
};

// One dimension of a partially known shape: a value, or a symbol ("batch"), or unknown (-1, no symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor)
  static Dim Symbol(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

// A shape whose rank may be unknown and whose dimensions may be symbolic or unknown.
struct PartialShape {
  bool rank_known = false;
  std::vector<Dim> dims;

  PartialShape() = default;
  static PartialShape Unknown() { return {}; }
  static PartialShape Of(const Shape& s);
  static PartialShape Of(std::vector<Dim> d) {
    PartialShape p;
    p.rank_known = true;
    p.dims = std::move(d);
    return p;
  }
  int rank() const { return rank_known ? static_cast<int>(dims.size()) : -1; }
  bool IsFullyKnown() const;
  // Only valid when IsFullyKnown().
  Shape ToShape() const;
  // True when `s` fits: same rank and equal wherever this shape has a value.
  bool Accepts(const Shape& s) const;
  // "[?,224,224,3]", "[batch,10]", "unknown rank".
  std::string ToString() const;
  bool operator==(const PartialShape& o) const { return rank_known == o.rank_known && dims == o.dims; }
};

// ---- allocation ----

class Allocator {
 public:
  virtual ~Allocator() = default;
  // 64-byte aligned memory, or RESOURCE_EXHAUSTED.
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* p, size_t bytes) = 0;
  virtual size_t bytes_in_use() const = 0;
  virtual size_t peak_bytes() const = 0;
};

// The process-wide heap allocator (no limit).
Allocator* DefaultAllocator();

// Counts bytes and refuses to go over a hard limit (0 = no limit). Thread-safe.
class LimitedAllocator final : public Allocator {
 public:
  explicit LimitedAllocator(size_t limit_bytes, Allocator* base = DefaultAllocator());
  StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* p, size_t bytes) override;
  size_t bytes_in_use() const override { return in_use_.load() & ~kOrphaned; }
  size_t peak_bytes() const override { return peak_.load(); }
  size_t limit() const { return limit_; }
  // Gives up ownership (instead of `delete`) when blocks may still be out, e.g. a session's results that outlive the
  // session: the allocator deletes itself when the last block comes back, or at once if none is out. No Allocate
  // may follow.
  void Orphan();

 private:
  // The top bit of in_use_ marks an orphaned allocator, so that exactly one of Orphan() and the last Free() sees
  // the transition to (orphaned, nothing in use) and deletes it.
  static constexpr size_t kOrphaned = size_t{1} << (sizeof(size_t) * 8 - 1);
  size_t limit_;
  Allocator* base_;
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
};

// A block of memory owned by its allocator (or borrowed from someone else), shared by Tensors.
class Buffer {
 public:
  // Owns `bytes` from `alloc`; for kString buffers constructs/destroys `count` std::strings in place.
  static StatusOr<std::shared_ptr<Buffer>> Allocate(Allocator* alloc, size_t bytes, DType dtype, int64_t count);
  // Borrows memory someone else owns; `keepalive` (may be null) is held as long as the buffer lives.
  static std::shared_ptr<Buffer> Borrow(void* data, size_t bytes, std::shared_ptr<void> keepalive);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Allocator* alloc_ = nullptr;  // null when borrowed
  int64_t strings_ = 0;         // std::string objects to destroy
  std::shared_ptr<void> keepalive_;
};

// ---- Tensor ----

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Uninitialised memory (strings are empty); RESOURCE_EXHAUSTED when the allocator refuses.
  static StatusOr<Tensor> Create(DType dtype, const Shape& shape, Allocator* alloc = DefaultAllocator());
  // As Create but aborts on allocation failure; for tests and internal constants.
  static Tensor Empty(DType dtype, const Shape& shape);
  static Tensor Zeros(DType dtype, const Shape& shape);
  // A view of memory owned elsewhere; `keepalive` is held while any copy of the tensor lives.
  static Tensor Wrap(DType dtype, const Shape& shape, void* data, std::shared_ptr<void> keepalive = nullptr);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector(std::vector<T>{value}, Shape{});
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t num_elements() const { return shape_.NumElements(); }
  size_t byte_size() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype_); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  void* raw_data() { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr; }
  const void* raw_data() const { return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_ : nullptr; }
  template <typename T>
  T* data() {
    STRATA_DCHECK(DTypeOf<T>() == dtype_, "tensor is ", DTypeName(dtype_), ", accessed as ", DTypeName(DTypeOf<T>()));
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    STRATA_DCHECK(DTypeOf<T>() == dtype_, "tensor is ", DTypeName(dtype_), ", accessed as ", DTypeName(DTypeOf<T>()));
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  std::span<T> mutable_values() {
    return {data<T>(), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  std::vector<T> ToVector() const {
    auto v = values<T>();
    return {v.begin(), v.end()};
  }

  // Same buffer, new shape with the same element count.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;
  // A deep copy into fresh memory.
  Tensor Clone() const;
  // Copies the elements of `src` (same dtype and element count) into this tensor's memory.
  void CopyFrom(const Tensor& src);
  // "float32[2,3]"
  std::string TypeString() const;
  // Values for debugging, at most `max_elements` of them.
  std::string DebugString(int max_elements = 16) const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const Shape& shape) {
  Tensor t = Empty(DTypeOf<T>(), shape);
  STRATA_CHECK(static_cast<int64_t>(values.size()) == t.num_elements(), "FromVector: ", values.size(),
               " values for shape ", shape.ToString());
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

}  // namespace strata
