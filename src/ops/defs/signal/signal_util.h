// What the signal ops share: a complex discrete Fourier transform of any length (radix-2 FFT for powers of two,
// Bluestein's chirp-z transform over it for other lengths above a small size, the direct sum below), computed in
// double precision, and reading the integer/float scalar inputs of the window and filter-bank generators.
#pragma once

#include <complex>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops::signal {

using Complex = std::complex<double>;

// Reusable transform of one length: Run() transforms `data` (n values) in place.
class Dft {
 public:
  // inverse: the e^{+i...} kernel; the 1/n factor is left to the caller.
  Dft(int64_t n, bool inverse);
  void Run(std::vector<Complex>* data) const;

 private:
  int64_t n_;
  bool inverse_;
  std::vector<Complex> twiddle_;         // direct sum and radix-2: e^{-+2 pi i k / n}
  int64_t m_ = 0;                        // Bluestein: power-of-two length >= 2n - 1
  std::vector<Complex> chirp_, kernel_;  // Bluestein: w_k = e^{-+i pi k^2 / n}, FFT of the conjugate chirp
  std::vector<Complex> m_twiddle_;
};

// Reads a scalar (or 1-element) int32/int64 input as int64.
StatusOr<int64_t> ReadIntScalar(const KernelContext& ctx, int i, std::string_view what);
// The dtype attribute `output_datatype` (an onnx.TensorProto.DataType number), default float32.
StatusOr<DType> ReadOutputDatatype(const Node& node);
// Writes double values into a tensor of any numeric dtype (C++ conversion semantics, as Cast).
Status FillFromDoubles(const std::vector<double>& v, Tensor* out);

}  // namespace strata::ops::signal
