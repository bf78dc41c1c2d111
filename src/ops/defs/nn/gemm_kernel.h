// A cache-blocked, register-tiled GEMM for the reference kernels of Conv, ConvTranspose and Gemm.
//
// It is the fallback for oneDNN and the oracle the oneDNN kernels are checked against, so it must be correct for
// every shape and transposition, and fast enough that a ResNet-sized model runs in about a second. Operands are
// packed into MR-row / NR-column panels (zero padded at the edges) and a fixed-size micro-kernel accumulates an
// MR x NR tile in registers using GCC vector extensions, which lower to whatever SIMD the target has.
#pragma once

#include <cstdint>
#include <functional>

namespace strata::ops::nn {

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n], all row-major. op(A) is A (lda = row stride of A, A
// is m x k) or, with trans_a, the transpose of a k x m matrix A. Likewise for B. beta == 0 overwrites C without
// reading it (NaN in C does not propagate). Serial; the caller parallelises over tiles.
// Instantiated for float, double, int32_t, int64_t, uint32_t and uint64_t.
template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// Operands of one GEMM of a batch (see GemmBatch).
template <typename T>
struct GemmOperands {
  const T* a = nullptr;
  const T* b = nullptr;
  T* c = nullptr;
};

// Runs `count` GEMMs of one shape (same transposes, leading dimensions, alpha and beta) in parallel over
// (gemm, row block, column block) tiles. operands(i) gives the i-th GEMM's pointers. `init_tile`, when set, is
// called on each C tile before it is accumulated into (e.g. to write a bias), with (gemm, row0, rows, col0, cols).
template <typename T>
void GemmBatch(int64_t count, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, int64_t lda,
               int64_t ldb, T beta, int64_t ldc, const std::function<GemmOperands<T>(int64_t)>& operands,
               const std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t)>& init_tile = nullptr);

}  // namespace strata::ops::nn
