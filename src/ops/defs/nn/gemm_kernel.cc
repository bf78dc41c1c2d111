#include "ops/defs/nn/gemm_kernel.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"

namespace strata::ops::nn {
namespace {

// One SIMD register's worth of bytes on the target; the micro-kernel holds a 6 x (2 registers) accumulator tile,
// which with the two B registers and one broadcast A value fits in 16 registers.
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

template <typename T>
struct VecOf {
  typedef T type __attribute__((vector_size(kVecBytes)));
};

template <typename T>
struct Blocking {
  static constexpr int kLanes = kVecBytes / static_cast<int>(sizeof(T));
  static constexpr int kMR = 6;
  static constexpr int kNR = 2 * kLanes;
  static constexpr int64_t kKC = 256;  // depth of one packed block (A panel + B panel stay in L1/L2)
  static constexpr int64_t kMC = 96;   // rows of A packed at once (multiple of kMR)
  static constexpr int64_t kNC = 512;  // columns of B packed at once (multiple of kNR)
};

// Packs rows [0, mc) x depth [0, kc) of op(A) into kMR-row panels: panel r holds kc groups of kMR values.
template <typename T>
void PackA(bool trans, const T* a, int64_t lda, int64_t mc, int64_t kc, T* out) {
  constexpr int MR = Blocking<T>::kMR;
  for (int64_t r0 = 0; r0 < mc; r0 += MR) {
    const int64_t rows = std::min<int64_t>(MR, mc - r0);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < rows; ++i) out[i] = trans ? a[p * lda + r0 + i] : a[(r0 + i) * lda + p];
      for (int64_t i = rows; i < MR; ++i) out[i] = T(0);
      out += MR;
    }
  }
}

// Packs depth [0, kc) x columns [0, nc) of op(B) into kNR-column panels: panel c holds kc rows of kNR values.
template <typename T>
void PackB(bool trans, const T* b, int64_t ldb, int64_t kc, int64_t nc, T* out) {
  constexpr int NR = Blocking<T>::kNR;
  for (int64_t c0 = 0; c0 < nc; c0 += NR) {
    const int64_t cols = std::min<int64_t>(NR, nc - c0);
    for (int64_t p = 0; p < kc; ++p) {
      if (!trans && cols == NR) {
        std::memcpy(out, b + p * ldb + c0, sizeof(T) * NR);
      } else {
        for (int64_t j = 0; j < cols; ++j) out[j] = trans ? b[(c0 + j) * ldb + p] : b[p * ldb + c0 + j];
        for (int64_t j = cols; j < NR; ++j) out[j] = T(0);
      }
      out += NR;
    }
  }
}

// tile[MR][NR] = sum over p of ap[p][:] (outer) bp[p][:].
template <typename T>
void MicroKernel(int64_t kc, const T* ap, const T* bp, T* tile) {
  using V = typename VecOf<T>::type;
  constexpr int MR = Blocking<T>::kMR;
  constexpr int L = Blocking<T>::kLanes;
  V c0[MR], c1[MR];
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = V{};
  for (int64_t p = 0; p < kc; ++p) {
    V b0, b1;
    std::memcpy(&b0, bp, sizeof(V));
    std::memcpy(&b1, bp + L, sizeof(V));
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const T av = ap[i];
      c0[i] += av * b0;
      c1[i] += av * b1;
    }
    ap += MR;
    bp += 2 * L;
  }
  for (int i = 0; i < MR; ++i) {
    std::memcpy(tile + i * 2 * L, &c0[i], sizeof(V));
    std::memcpy(tile + i * 2 * L + L, &c1[i], sizeof(V));
  }
}

// C = alpha * op(A) op(B) + beta * C when m == 1 or n == 1 (matrix-vector products: packing would cost as much as
// the arithmetic and the register tile would be mostly padding).
template <typename T>
void GemvSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  auto finish = [&](T* dst, T acc) { *dst = beta == T(0) ? T(alpha * acc) : T(alpha * acc + beta * *dst); };
  if (n == 1) {
    // c[i] = sum_p A(i,p) B(p,0).
    if (!trans_a) {
      for (int64_t i = 0; i < m; ++i) {
        const T* arow = a + i * lda;
        T acc = T(0);
        for (int64_t p = 0; p < k; ++p) acc += arow[p] * b[trans_b ? p : p * ldb];
        finish(c + i * ldc, acc);
      }
      return;
    }
    std::vector<T> acc(m, T(0));
    for (int64_t p = 0; p < k; ++p) {
      const T bv = b[trans_b ? p : p * ldb];
      const T* arow = a + p * lda;
      for (int64_t i = 0; i < m; ++i) acc[i] += arow[i] * bv;
    }
    for (int64_t i = 0; i < m; ++i) finish(c + i * ldc, acc[i]);
    return;
  }
  // m == 1: c[j] = sum_p A(0,p) B(p,j).
  if (trans_b) {
    for (int64_t j = 0; j < n; ++j) {
      const T* brow = b + j * ldb;
      T acc = T(0);
      for (int64_t p = 0; p < k; ++p) acc += a[trans_a ? p * lda : p] * brow[p];
      finish(c + j, acc);
    }
    return;
  }
  std::vector<T> acc(n, T(0));
  for (int64_t p = 0; p < k; ++p) {
    const T av = a[trans_a ? p * lda : p];
    const T* brow = b + p * ldb;
    for (int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
  }
  for (int64_t j = 0; j < n; ++j) finish(c + j, acc[j]);
}

}  // namespace

template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using B = Blocking<T>;
  constexpr int MR = B::kMR;
  constexpr int NR = B::kNR;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : T(beta * c[i * ldc + j]);
    return;
  }
  if (m == 1 || n == 1) {
    GemvSerial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Per-thread packing buffers, reused across calls (fresh large allocations would page-fault every time).
  thread_local std::vector<T> apack, bpack;
  if (apack.size() < static_cast<size_t>(B::kMC * B::kKC)) apack.resize(B::kMC * B::kKC);
  if (bpack.size() < static_cast<size_t>(B::kKC * B::kNC)) bpack.resize(B::kKC * B::kNC);
  alignas(64) T tile[MR * NR];
  for (int64_t j0 = 0; j0 < n; j0 += B::kNC) {
    const int64_t nc = std::min<int64_t>(B::kNC, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += B::kKC) {
      const int64_t kc = std::min<int64_t>(B::kKC, k - p0);
      const bool first = p0 == 0;
      PackB(trans_b, trans_b ? b + j0 * ldb + p0 : b + p0 * ldb + j0, ldb, kc, nc, bpack.data());
      for (int64_t i0 = 0; i0 < m; i0 += B::kMC) {
        const int64_t mc = std::min<int64_t>(B::kMC, m - i0);
        PackA(trans_a, trans_a ? a + p0 * lda + i0 : a + i0 * lda + p0, lda, mc, kc, apack.data());
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t nr = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            MicroKernel<T>(kc, apack.data() + ir * kc, bpack.data() + jr * kc, tile);
            T* cb = c + (i0 + ir) * ldc + j0 + jr;
            for (int64_t i = 0; i < mr; ++i) {
              T* crow = cb + i * ldc;
              const T* trow = tile + i * NR;
              if (!first) {
                for (int64_t j = 0; j < nr; ++j) crow[j] += alpha * trow[j];
              } else if (beta == T(0)) {
                for (int64_t j = 0; j < nr; ++j) crow[j] = alpha * trow[j];
              } else {
                for (int64_t j = 0; j < nr; ++j) crow[j] = alpha * trow[j] + beta * crow[j];
              }
            }
          }
        }
      }
    }
  }
}

template <typename T>
void GemmBatch(int64_t count, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, int64_t lda,
               int64_t ldb, T beta, int64_t ldc, const std::function<GemmOperands<T>(int64_t)>& operands,
               const std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t)>& init_tile) {
  if (count <= 0 || m <= 0 || n <= 0) return;
  constexpr int64_t kTileM = Blocking<T>::kMC;
  constexpr int64_t kTileN = Blocking<T>::kNC;
  const int64_t mt = (m + kTileM - 1) / kTileM;
  const int64_t nt = (n + kTileN - 1) / kTileN;
  // A tile of k * 96 * 256 multiply-adds is worth a task; smaller problems run serially.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, k * kTileM * kTileN));
  ParallelFor(count * mt * nt, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t g = t / (mt * nt);
      const int64_t r0 = (t / nt) % mt * kTileM;
      const int64_t c0 = t % nt * kTileN;
      const int64_t rows = std::min(kTileM, m - r0), cols = std::min(kTileN, n - c0);
      const GemmOperands<T> op = operands(g);
      if (init_tile) init_tile(g, r0, rows, c0, cols);
      GemmSerial<T>(trans_a, trans_b, rows, cols, k, alpha, trans_a ? op.a + r0 : op.a + r0 * lda, lda,
                    trans_b ? op.b + c0 * ldb : op.b + c0, ldb, beta, op.c + r0 * ldc + c0, ldc);
    }
  });
}

#define STRATA_NN_GEMM_INSTANTIATE(T)                                                                                \
  template void GemmSerial<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, \
                              int64_t);                                                                              \
  template void GemmBatch<T>(int64_t, bool, bool, int64_t, int64_t, int64_t, T, int64_t, int64_t, T, int64_t,        \
                             const std::function<GemmOperands<T>(int64_t)>&,                                         \
                             const std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t)>&);
STRATA_NN_GEMM_INSTANTIATE(float)
STRATA_NN_GEMM_INSTANTIATE(double)
STRATA_NN_GEMM_INSTANTIATE(int32_t)
STRATA_NN_GEMM_INSTANTIATE(int64_t)
STRATA_NN_GEMM_INSTANTIATE(uint32_t)
STRATA_NN_GEMM_INSTANTIATE(uint64_t)
#undef STRATA_NN_GEMM_INSTANTIATE

}  // namespace strata::ops::nn
