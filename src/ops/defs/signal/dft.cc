// DFT (opset 17): the discrete Fourier transform of `input` [batch, d1, ..., dn, 1 or 2] (real, or complex as a
// trailing (re, im) pair) along `axis` (default 1; any axis but the last). dft_length (input 1, optional) zero-pads
// or truncates the signal along the axis; inverse = 1 gives the inverse transform (with the 1/n factor); onesided = 1
// keeps the first n/2 + 1 frequencies (real input only). The output is complex: [..., n or n/2+1 at axis, ..., 2].
// Computed in double precision for every input type.
#include "ops/defs/signal/signal_util.h"

namespace strata::ops {
namespace {

struct DftAttrs {
  int axis = 1;
  bool inverse = false, onesided = false;
};

StatusOr<DftAttrs> ReadDftAttrs(const Node& node, int rank) {
  DftAttrs a;
  if (rank < 2)
    return InvalidArgumentError(node.Describe(), ": input must have rank >= 2 ([batch, ..., 1 or 2]), got rank ", rank);
  const int64_t axis = node.GetInt("axis", 1);
  STRATA_ASSIGN_OR_RETURN(a.axis, NormalizeAxis(axis, rank, node));
  if (a.axis == rank - 1)
    return InvalidArgumentError(node.Describe(), ": axis ", axis, " is the trailing (real, imaginary) axis");
  a.inverse = node.GetInt("inverse", 0) != 0;
  a.onesided = node.GetInt("onesided", 0) != 0;
  return a;
}

Status DftInfer(InferContext& ctx) {
  const PartialShape& x = ctx.input_shape(0);
  if (!IsFloatingPoint(ctx.input_dtype(0)) && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.Error("input must be a float tensor, got ", DTypeName(ctx.input_dtype(0)));
  if (!x.rank_known) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(DftAttrs a, ReadDftAttrs(ctx.node(), x.rank()));
  const Dim& last = x.dims.back();
  if (last.known() && last.value != 1 && last.value != 2)
    return ctx.Error("the last dimension must be 1 (real) or 2 (complex), got ", x.ToString());
  if (a.onesided && last.known() && last.value == 2) return ctx.Error("onesided = 1 needs a real input");
  std::vector<Dim> dims = x.dims;
  Dim n = dims[a.axis];
  if (ctx.has_input(1)) {
    n = Dim();
    if (const Tensor* len = ctx.input_value(1); len != nullptr && len->num_elements() == 1) {
      STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*len, "dft_length"));
      n = Dim(v[0]);
    }
  }
  dims[a.axis] = a.onesided ? (n.known() ? Dim(n.value / 2 + 1) : Dim()) : n;
  dims.back() = Dim(2);
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(dims)));
  return Status::OK();
}

Status DftCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("input must be a float tensor, got ", x.TypeString());
  STRATA_ASSIGN_OR_RETURN(DftAttrs a, ReadDftAttrs(ctx.node(), x.rank()));
  const int rank = x.rank();
  const int64_t comps = x.dim(rank - 1);
  if (comps != 1 && comps != 2)
    return ctx.Error("the last dimension must be 1 (real) or 2 (complex), got ", x.shape().ToString());
  if (a.onesided && comps == 2) return ctx.Error("onesided = 1 needs a real input, got a complex one");
  const int64_t len = x.dim(a.axis);
  int64_t n = len;
  if (ctx.has_input(1)) {
    STRATA_ASSIGN_OR_RETURN(n, signal::ReadIntScalar(ctx, 1, "dft_length"));
    if (n < 1 || n > (int64_t{1} << 27)) return ctx.Error("dft_length must be in [1, 2^27], got ", n);
  }
  const int64_t keep = a.onesided ? n / 2 + 1 : n;
  Shape out_shape = x.shape();
  out_shape[a.axis] = keep;
  out_shape[rank - 1] = 2;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const int64_t outer = x.shape().Product(0, a.axis), inner = x.shape().Product(a.axis + 1, rank - 1);
  const signal::Dft dft(n, a.inverse);
  const double scale = a.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    std::vector<signal::Complex> buf;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        buf.assign(static_cast<size_t>(n), signal::Complex(0, 0));
        for (int64_t k = 0; k < std::min(n, len); ++k) {
          const T* e = px + ((o * len + k) * inner + i) * comps;
          buf[k] = signal::Complex(ToCompute(e[0]), comps == 2 ? static_cast<double>(ToCompute(e[1])) : 0.0);
        }
        dft.Run(&buf);
        for (int64_t k = 0; k < keep; ++k) {
          T* e = py + ((o * keep + k) * inner + i) * 2;
          e[0] = FromCompute<T>(static_cast<ComputeType<T>>(buf[k].real() * scale));
          e[1] = FromCompute<T>(static_cast<ComputeType<T>>(buf[k].imag() * scale));
        }
      }
    return Status::OK();
  });
}

}  // namespace

void RegisterDFT(OpRegistry* r) {
  OpSchema s;
  s.name = "DFT";
  s.since_version = 17;
  s.min_inputs = 1;
  s.max_inputs = 2;
  s.infer = DftInfer;
  s.reference = DftCompute;
  s.no_grad_reason = "gradient not implemented (it is another DFT)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
