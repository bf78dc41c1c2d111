// AveragePool (opset 1, 7, 10, 11): mean over each window of X (N, C, D1..Dn) with strides, pads, auto_pad and
// ceil_mode. count_include_pad=0 divides by the number of elements inside X; 1 divides by the window clipped to the
// padded extent (a ceil_mode window overhanging the end padding does not count the overhang, as in PyTorch and
// onnxruntime). dilations arrived in opset 19 and are Unimplemented unless all 1. Float element types (16-bit
// floats accumulate in float32). 1-3 spatial dimensions.
#include "core/parallel.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kAveragePoolOptions{
    .kernel_from_attr = true, .allow_dilations = false, .allow_ceil_mode = true, .pads_below_kernel = true};

StatusOr<bool> ReadCountIncludePad(const Node& node) {
  const int64_t v = node.GetInt("count_include_pad", 0);
  if (v != 0 && v != 1) return InvalidArgumentError(node.Describe(), ": count_include_pad must be 0 or 1, got ", v);
  return v == 1;
}

Status AveragePoolInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("X must be a float tensor, got ", DTypeName(t));
  STRATA_RETURN_IF_ERROR(ReadCountIncludePad(ctx.node()).status());
  STRATA_ASSIGN_OR_RETURN(PartialShape out, nn::InferPoolShape(ctx, kAveragePoolOptions));
  ctx.SetOutput(0, t, std::move(out));
  return Status::OK();
}

// Window [*lo, *hi) inside X along one axis and the divisor contribution of that axis.
inline int64_t AxisWindow(const nn::Geometry3& g, int a, int64_t o, bool include_pad, int64_t* lo, int64_t* hi) {
  const int64_t start = o * g.stride[a] - g.pad_begin[a];
  const int64_t end = start + g.kernel[a];
  *lo = std::max<int64_t>(start, 0);
  *hi = std::min(end, g.in[a]);
  return include_pad ? std::min(end, g.in[a] + g.pad_end[a]) - start : *hi - *lo;
}

template <typename T>
void AveragePoolPlane(const T* x, const nn::Geometry3& g, bool include_pad, T* y) {
  using C = ComputeType<T>;
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
        C sum = C(0);
        for (int64_t id = d0; id < d1; ++id)
          for (int64_t ih = h0; ih < h1; ++ih) {
            const T* row = x + (id * g.in[1] + ih) * g.in[2];
            for (int64_t iw = w0; iw < w1; ++iw) sum += ToCompute(row[iw]);
          }
        const int64_t count = nd * nh * nw;
        y[o] = FromCompute<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
      }
    }
  }
}

Status AveragePoolCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::PoolGeometry(ctx.node(), x, kAveragePoolOptions, &out_shape));
  STRATA_ASSIGN_OR_RETURN(bool include_pad, ReadCountIncludePad(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), out_size = g.out_size();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.kernel_size()));
    ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) AveragePoolPlane(px + p * in_size, g, include_pad, py + p * out_size);
    });
    return Status::OK();
  });
}

// dX = strata.AveragePoolGrad(dY, Shape(X)).
Status AveragePoolGradient(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "AveragePoolGrad", {ctx.output_grad(0), Emit1(ctx, "Shape", {In(ctx, 0)})},
                            CopyAttrs(ctx.node(), {"auto_pad", "ceil_mode", "count_include_pad", "dilations",
                                                   "kernel_shape", "pads", "strides"}),
                            graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterAveragePool(OpRegistry* r) {
  OpSchema s;
  s.name = "AveragePool";
  s.since_version = 11;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = AveragePoolInfer;
  s.reference = AveragePoolCompute;
  s.grad = AveragePoolGradient;
  r->Add(std::move(s));
}

}  // namespace strata::ops
