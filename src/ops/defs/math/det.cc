// Det (opset 11): the determinant of each square matrix in the last two dimensions ([*, M, M] -> [*]), by LU
// decomposition with partial pivoting in double precision. A 0x0 matrix has determinant 1; a singular one gives 0.
#include <cmath>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

Status DetInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t))
    return ctx.Error("input X must be a float tensor, got ", DTypeName(t));
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, t, PartialShape::Unknown());
    return Status::OK();
  }
  if (in.rank() < 2) return ctx.Error("input X must have rank >= 2 ([*, M, M]), got ", in.ToString());
  const Dim& r = in.dims[in.rank() - 2];
  const Dim& c = in.dims[in.rank() - 1];
  if (r.known() && c.known() && r.value != c.value)
    return ctx.Error("input X must hold square matrices in its last two dimensions, got ", in.ToString());
  ctx.SetOutput(0, t, PartialShape::Of({in.dims.begin(), in.dims.end() - 2}));
  return Status::OK();
}

// Determinant of the m x m row-major matrix in `a` (overwritten with its LU factors).
double LuDeterminant(double* a, int64_t m) {
  double det = 1.0;
  for (int64_t col = 0; col < m; ++col) {
    int64_t pivot = col;
    double best = std::fabs(a[col * m + col]);
    for (int64_t r = col + 1; r < m; ++r) {
      const double v = std::fabs(a[r * m + col]);
      if (v > best || std::isnan(v)) {
        best = v;
        pivot = r;
        if (std::isnan(v)) break;
      }
    }
    const double p = a[pivot * m + col];
    if (p == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[col * m + j], a[pivot * m + j]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < m; ++r) {
      const double f = a[r * m + col] / p;
      if (f == 0.0) continue;
      for (int64_t j = col + 1; j < m; ++j) a[r * m + j] -= f * a[col * m + j];
    }
  }
  return det;
}

Status DetCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  if (s.rank() < 2 || s[s.rank() - 1] != s[s.rank() - 2])
    return ctx.Error("input X must have shape [*, M, M], got ", s.ToString());
  const int64_t m = s[s.rank() - 1];
  Shape out(std::span<const int64_t>(s.data(), s.rank() - 2));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  const int64_t batches = out.NumElements();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(ToCompute(px[b * m * m + i]));
      py[b] = T(static_cast<ComputeType<T>>(LuDeterminant(a.data(), m)));
    }
    return Status::OK();
  });
}

}  // namespace

void RegisterDet(OpRegistry* r) {
  OpSchema s;
  s.name = "Det";
  s.since_version = 11;
  s.infer = DetInfer;
  s.reference = DetCompute;
  s.no_grad_reason = "not implemented: needs a matrix inverse (d det(A) = det(A) inv(A)^T)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
