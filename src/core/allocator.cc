#include <cstdlib>
#include <new>

#include "strata/tensor.h"

namespace strata {
namespace {

constexpr size_t kAlignment = 64;

class HeapAllocator final : public Allocator {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (p == nullptr) return ResourceExhaustedError("out of memory allocating ", bytes, " bytes");
    Count(static_cast<int64_t>(bytes));
    return p;
  }
  void Free(void* p, size_t bytes) override {
    std::free(p);
    Count(-static_cast<int64_t>(bytes));
  }
  size_t bytes_in_use() const override { return in_use_.load(std::memory_order_relaxed); }
  size_t peak_bytes() const override { return peak_.load(std::memory_order_relaxed); }

 private:
  void Count(int64_t delta) {
    size_t now = in_use_.fetch_add(static_cast<size_t>(delta), std::memory_order_relaxed) + delta;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
};

}  // namespace

Allocator* DefaultAllocator() {
  static HeapAllocator* heap = new HeapAllocator();  // never destroyed: tensors may outlive static destructors
  return heap;
}

LimitedAllocator::LimitedAllocator(size_t limit_bytes, Allocator* base) : limit_(limit_bytes), base_(base) {}

StatusOr<void*> LimitedAllocator::Allocate(size_t bytes) {
  size_t now = (in_use_.fetch_add(bytes) + bytes) & ~kOrphaned;
  if (limit_ != 0 && now > limit_) {
    in_use_.fetch_sub(bytes);
    return ResourceExhaustedError("allocating ", bytes, " bytes would exceed the memory limit of ", limit_,
                                  " bytes (", now - bytes, " bytes already in use)");
  }
  auto p = base_->Allocate(bytes);
  if (!p.ok()) {
    in_use_.fetch_sub(bytes);
    return p.status();
  }
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void LimitedAllocator::Free(void* p, size_t bytes) {
  base_->Free(p, bytes);
  if (in_use_.fetch_sub(bytes) == (kOrphaned | bytes)) delete this;
}

void LimitedAllocator::Orphan() {
  if (in_use_.fetch_or(kOrphaned) == 0) delete this;
}

}  // namespace strata
