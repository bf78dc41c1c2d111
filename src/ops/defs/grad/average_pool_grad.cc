// strata.AveragePoolGrad(dY, x_shape): the gradient of AveragePool with respect to X (of shape x_shape, int64 1-D).
// Attributes are the forward AveragePool's (kernel_shape, strides, pads, auto_pad, ceil_mode, count_include_pad):
// each output's gradient is spread evenly over the elements of its window inside X, divided by the divisor
// AveragePool used (the elements inside X, or with count_include_pad the window clipped to the padded extent).
// Float types; 1-3 spatial dimensions.
#include "core/parallel.h"
#include "ops/defs/grad/conv_grad_util.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kOptions{
    .kernel_from_attr = true, .allow_dilations = false, .allow_ceil_mode = true, .pads_below_kernel = true};

Status AveragePoolGradInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  ctx.SetOutput(0, ctx.input_dtype(0), convgrad::ShapeFromOperand(ctx, 1));
  return Status::OK();
}

// The window [*lo, *hi) inside X along axis a and its divisor factor (as AveragePool computes them).
inline int64_t AxisWindow(const nn::Geometry3& g, int a, int64_t o, bool include_pad, int64_t* lo, int64_t* hi) {
  const int64_t start = o * g.stride[a] - g.pad_begin[a];
  const int64_t end = start + g.kernel[a];
  *lo = std::max<int64_t>(start, 0);
  *hi = std::min(end, g.in[a]);
  return include_pad ? std::min(end, g.in[a] + g.pad_end[a]) - start : *hi - *lo;
}

template <typename C>
void Plane(const C* dy, const nn::Geometry3& g, bool include_pad, C* dx) {
  int64_t o = 0;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t d0, d1;
    const int64_t nd = AxisWindow(g, 0, od, include_pad, &d0, &d1);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t h0, h1;
      const int64_t nh = AxisWindow(g, 1, oh, include_pad, &h0, &h1);
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        int64_t w0, w1;
        const int64_t nw = AxisWindow(g, 2, ow, include_pad, &w0, &w1);
        const int64_t count = nd * nh * nw;
        if (count <= 0) continue;
        const C share = dy[o] / static_cast<C>(count);
        for (int64_t id = d0; id < d1; ++id)
          for (int64_t ih = h0; ih < h1; ++ih) {
            C* row = dx + (id * g.in[1] + ih) * g.in[2];
            for (int64_t iw = w0; iw < w1; ++iw) row[iw] += share;
          }
      }
    }
  }
}

Status AveragePoolGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  if (!IsFloatingPoint(dy.dtype())) return ctx.Error("dY must be a float tensor, got ", DTypeName(dy.dtype()));
  STRATA_ASSIGN_OR_RETURN(Shape xs, convgrad::ReadShape(ctx, 1, "x_shape"));
  if (xs.rank() < 3) return ctx.Error("x_shape ", xs.ToString(), " must have rank >= 3 (N, C, spatial...)");
  const int64_t include = ctx.node().GetInt("count_include_pad", 0);
  if (include != 0 && include != 1) return ctx.Error("count_include_pad must be 0 or 1, got ", include);
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(ctx.node(), xs.rank() - 2, kOptions));
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::ForwardGeometry(ctx.node(), a, xs, xs[1], &out_shape));
  if (dy.shape() != out_shape)
    return ctx.Error("dY has shape ", dy.shape().ToString(), ", expected the AveragePool output shape ",
                     out_shape.ToString());
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), xs));
  const DType ct = nn::ComputeDTypeOf(dy.dtype());
  STRATA_ASSIGN_OR_RETURN(Tensor dyc, nn::ConvertTo(dy, ct, ctx.allocator()));
  Tensor dxc = *dx;
  if (ct != dy.dtype()) {
    STRATA_ASSIGN_OR_RETURN(dxc, Tensor::Create(ct, xs, ctx.allocator()));
  }
  const int64_t planes = xs[0] * xs[1], in_size = g.in_size(), out_size = g.out_size();
  const auto run = [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C* pdy = dyc.data<C>();
    C* pdx = dxc.data<C>();
    std::fill_n(pdx, xs.NumElements(), C(0));
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.kernel_size()));
    ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) Plane(pdy + p * out_size, g, include == 1, pdx + p * in_size);
    });
  };
  if (ct == DType::kFloat64) {
    run(TypeTag<double>{});
  } else {
    run(TypeTag<float>{});
  }
  if (ct != dy.dtype()) STRATA_RETURN_IF_ERROR(ConvertElements(dxc, dx));
  return Status::OK();
}

// Linear in dY: d/d(dY) = AveragePool(ddX) with the same attributes.
Status AveragePoolGradGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(0, Emit1(ctx, "AveragePool", {ctx.output_grad(0)},
                              CopyAttrs(ctx.node(), {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
                                                     "pads", "strides"})));
  return Status::OK();
}

}  // namespace

void RegisterAveragePoolGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "AveragePoolGrad";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = AveragePoolGradInfer;
  s.reference = AveragePoolGradCompute;
  s.grad = AveragePoolGradGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
