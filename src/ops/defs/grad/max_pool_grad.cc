// strata.MaxPoolGrad(dY, X): the gradient of MaxPool (its Y output) with respect to X. Attributes are the forward
// MaxPool's (kernel_shape, strides, pads, auto_pad, dilations, ceil_mode). Each output's gradient goes to the element
// MaxPool picked: the first maximum of the window in row-major order, NaN never winning over a number (MaxPool's own
// rule), accumulated where windows overlap. Float types; 1-3 spatial dimensions.
// relu_input=1: X is a Relu output and the result is also Relu's gradient, ReluGrad(MaxPoolGrad(dY, X), X): a window
// whose maximum is not positive passes nothing (a trainer pass fuses that pair, saving a pass over X).
#include <limits>

#include "core/parallel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kOptions{
    .kernel_from_attr = true, .allow_dilations = true, .allow_ceil_mode = true, .pads_below_kernel = true};

Status MaxPoolGradInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "X"));
  ctx.SetOutput(0, ctx.input_dtype(0), ctx.input_shape(1));
  return Status::OK();
}

// One (n, c) plane: dx (zeroed) += dy at each window's arg max.
template <typename T>
void Plane(const T* x, const T* dy, const nn::Geometry3& g, bool relu, ComputeType<T>* dx) {
  using C = ComputeType<T>;
  int64_t o = 0;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t sd = od * g.stride[0] - g.pad_begin[0];
    int64_t d_lo, d_hi;
    nn::ValidTaps(sd, g.kernel[0], g.dilation[0], g.in[0], &d_lo, &d_hi);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t sh = oh * g.stride[1] - g.pad_begin[1];
      int64_t h_lo, h_hi;
      nn::ValidTaps(sh, g.kernel[1], g.dilation[1], g.in[1], &h_lo, &h_hi);
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        const int64_t sw = ow * g.stride[2] - g.pad_begin[2];
        int64_t w_lo, w_hi;
        nn::ValidTaps(sw, g.kernel[2], g.dilation[2], g.in[2], &w_lo, &w_hi);
        C best = C(0);
        int64_t at = -1, first = -1;
        for (int64_t jd = d_lo; jd < d_hi; ++jd) {
          const int64_t id = sd + jd * g.dilation[0];
          for (int64_t jh = h_lo; jh < h_hi; ++jh) {
            const int64_t row = (id * g.in[1] + sh + jh * g.dilation[1]) * g.in[2];
            for (int64_t jw = w_lo; jw < w_hi; ++jw) {
              const int64_t i = row + sw + jw * g.dilation[2];
              const C v = ToCompute(x[i]);
              if (first < 0) first = i;
              if (at < 0 ? !(v != v) : v > best) best = v, at = i;
            }
          }
        }
        if (at < 0) at = first;  // an all-NaN window: MaxPool returned its first element
        if (at >= 0 && (!relu || ToCompute(x[at]) > C(0))) dx[at] += ToCompute(dy[o]);
      }
    }
  }
}

Status MaxPoolGradCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (!IsFloatingPoint(x.dtype()) || dy.dtype() != x.dtype())
    return ctx.Error("dY and X must share one float element type");
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::PoolGeometry(ctx.node(), x, kOptions, &out_shape));
  if (dy.shape() != out_shape)
    return ctx.Error("dY has shape ", dy.shape().ToString(), ", expected the MaxPool output shape ",
                     out_shape.ToString());
  const bool relu = ctx.node().GetInt("relu_input", 0) != 0;
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), out_size = g.out_size();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx->data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.kernel_size()));
    ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      std::vector<C> acc(static_cast<size_t>(in_size));
      for (int64_t p = begin; p < end; ++p) {
        std::fill(acc.begin(), acc.end(), C(0));
        Plane(px + p * in_size, pdy + p * out_size, g, relu, acc.data());
        for (int64_t i = 0; i < in_size; ++i) pdx[p * in_size + i] = T(acc[i]);
      }
    });
    return Status::OK();
  });
}

}  // namespace

void RegisterMaxPoolGrad(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "MaxPoolGrad";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = MaxPoolGradInfer;
  s.reference = MaxPoolGradCompute;
  s.no_grad_reason = "second derivatives through max pooling are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
