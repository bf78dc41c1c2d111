// LpPool (opset 1, 2, 11): (sum over each window of |x|^p)^(1/p) for X (N, C, D1..Dn) with strides, pads and
// auto_pad; padding contributes nothing. p is an int (a float in opset 1) and must be positive. ceil_mode and
// dilations arrived in opset 18 and are Unimplemented. Float element types (16-bit floats accumulate in float32).
// 1-3 spatial dimensions.
#include <cmath>

#include "core/parallel.h"
#include "ops/defs/nn/spatial.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kLpPoolOptions{
    .kernel_from_attr = true, .allow_dilations = false, .allow_ceil_mode = false, .pads_below_kernel = true};

// p as a double: an int attribute (opset >= 2) or a float one (opset 1).
StatusOr<double> ReadP(const Node& node) {
  const Attribute* a = node.FindAttr("p");
  const double p = a == nullptr ? 2.0 : a->type() == Attribute::Type::kFloat ? a->f() : static_cast<double>(a->i());
  if (!(p > 0) || !std::isfinite(p)) return InvalidArgumentError(node.Describe(), ": p must be positive, got ", p);
  return p;
}

Status LpPoolInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("X must be a float tensor, got ", DTypeName(t));
  STRATA_RETURN_IF_ERROR(ReadP(ctx.node()).status());
  STRATA_ASSIGN_OR_RETURN(PartialShape out, nn::InferPoolShape(ctx, kLpPoolOptions));
  ctx.SetOutput(0, t, std::move(out));
  return Status::OK();
}

template <typename T>
void LpPoolPlane(const T* x, const nn::Geometry3& g, double p, T* y) {
  using C = ComputeType<T>;
  const C pc = static_cast<C>(p), inv_p = static_cast<C>(1.0 / p);
  int64_t o = 0;
  auto window = [&](int a, int64_t out, int64_t* lo, int64_t* hi) {
    const int64_t start = out * g.stride[a] - g.pad_begin[a];
    *lo = std::max<int64_t>(start, 0);
    *hi = std::min(start + g.kernel[a], g.in[a]);
  };
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t d0, d1;
    window(0, od, &d0, &d1);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t h0, h1;
      window(1, oh, &h0, &h1);
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        int64_t w0, w1;
        window(2, ow, &w0, &w1);
        C sum = C(0);
        for (int64_t id = d0; id < d1; ++id)
          for (int64_t ih = h0; ih < h1; ++ih) {
            const T* row = x + (id * g.in[1] + ih) * g.in[2];
            for (int64_t iw = w0; iw < w1; ++iw) {
              const C v = std::abs(ToCompute(row[iw]));
              sum += p == 1.0 ? v : p == 2.0 ? v * v : std::pow(v, pc);
            }
          }
        y[o] = FromCompute<T>(p == 1.0 ? sum : p == 2.0 ? std::sqrt(sum) : std::pow(sum, inv_p));
      }
    }
  }
}

Status LpPoolCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::PoolGeometry(ctx.node(), x, kLpPoolOptions, &out_shape));
  STRATA_ASSIGN_OR_RETURN(double p, ReadP(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), out_size = g.out_size();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.kernel_size()));
    ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) LpPoolPlane(px + i * in_size, g, p, py + i * out_size);
    });
    return Status::OK();
  });
}

}  // namespace

void RegisterLpPool(OpRegistry* r) {
  OpSchema s;
  s.name = "LpPool";
  s.since_version = 11;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = LpPoolInfer;
  s.reference = LpPoolCompute;
  s.no_grad_reason = "not implemented: the gradient of p-norm pooling windows";
  r->Add(std::move(s));
}

}  // namespace strata::ops
