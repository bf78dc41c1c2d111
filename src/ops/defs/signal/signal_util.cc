#include "ops/defs/signal/signal_util.h"

#include <cmath>
#include <numbers>

namespace strata::ops::signal {
namespace {

constexpr int64_t kDirectMax = 64;  // lengths up to this that are not powers of two use the direct sum

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place iterative radix-2 FFT with the given twiddles (twiddle[k] = e^{-+2 pi i k / n}, k < n / 2).
void Radix2(std::vector<Complex>& a, const std::vector<Complex>& twiddle) {
  const int64_t n = static_cast<int64_t>(a.size());
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t step = n / len;
    for (int64_t i = 0; i < n; i += len)
      for (int64_t k = 0; k < len / 2; ++k) {
        const Complex u = a[i + k], v = a[i + k + len / 2] * twiddle[k * step];
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
  }
}

std::vector<Complex> Twiddles(int64_t n, bool inverse) {
  std::vector<Complex> t(static_cast<size_t>(n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n; ++k) {
    const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    t[k] = Complex(std::cos(angle), std::sin(angle));
  }
  return t;
}

}  // namespace

Dft::Dft(int64_t n, bool inverse) : n_(n), inverse_(inverse) {
  if (n <= 0) return;
  if (IsPowerOfTwo(n) || n <= kDirectMax) {
    twiddle_ = Twiddles(n, inverse);
    return;
  }
  m_ = 1;
  while (m_ < 2 * n - 1) m_ <<= 1;
  m_twiddle_ = Twiddles(m_, false);
  const double sign = inverse ? 1.0 : -1.0;
  chirp_.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small and exact.
    const int64_t k2 = (k * k) % (2 * n);
    const double angle = sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
    chirp_[k] = Complex(std::cos(angle), std::sin(angle));
  }
  kernel_.assign(static_cast<size_t>(m_), Complex(0, 0));
  kernel_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n; ++k) kernel_[k] = kernel_[m_ - k] = std::conj(chirp_[k]);
  Radix2(kernel_, m_twiddle_);
}

void Dft::Run(std::vector<Complex>* data) const {
  std::vector<Complex>& a = *data;
  if (n_ <= 0) return;
  if (IsPowerOfTwo(n_)) {
    Radix2(a, twiddle_);
    return;
  }
  if (m_ == 0) {
    std::vector<Complex> out(static_cast<size_t>(n_));
    for (int64_t k = 0; k < n_; ++k) {
      Complex acc(0, 0);
      for (int64_t j = 0; j < n_; ++j) acc += a[j] * twiddle_[(j * k) % n_];
      out[k] = acc;
    }
    a.swap(out);
    return;
  }
  // Bluestein: X_k = w_k * sum_j (x_j w_j) conj(w_{k-j}), a convolution done with power-of-two FFTs.
  std::vector<Complex> b(static_cast<size_t>(m_), Complex(0, 0));
  for (int64_t j = 0; j < n_; ++j) b[j] = a[j] * chirp_[j];
  Radix2(b, m_twiddle_);
  for (int64_t i = 0; i < m_; ++i) b[i] *= kernel_[i];
  // Inverse FFT of length m by conjugation.
  for (auto& v : b) v = std::conj(v);
  Radix2(b, m_twiddle_);
  const double scale = 1.0 / static_cast<double>(m_);
  for (int64_t k = 0; k < n_; ++k) a[k] = std::conj(b[k]) * scale * chirp_[k];
}

StatusOr<int64_t> ReadIntScalar(const KernelContext& ctx, int i, std::string_view what) {
  const Tensor& t = ctx.input(i);
  if (t.num_elements() != 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64))
    return ctx.Error(what, " must be an int32 or int64 scalar, got ", t.TypeString());
  return t.dtype() == DType::kInt32 ? static_cast<int64_t>(t.data<int32_t>()[0]) : t.data<int64_t>()[0];
}

StatusOr<DType> ReadOutputDatatype(const Node& node) {
  const int64_t v = node.GetInt("output_datatype", 1);
  auto dt = DTypeFromOnnx(static_cast<int>(v));
  if (!dt.ok() || *dt == DType::kString || *dt == DType::kBool)
    return InvalidArgumentError(node.Describe(), ": output_datatype must be a numeric onnx.TensorProto.DataType, got ",
                                v);
  return *dt;
}

Status FillFromDoubles(const std::vector<double>& v, Tensor* out) {
  Tensor src = Tensor::FromVector<double>(v, out->shape());
  return ConvertElements(src, out);
}

}  // namespace strata::ops::signal
