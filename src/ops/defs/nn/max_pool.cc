// MaxPool (opset 1, 8, 10, 11, 12): max over each window of X (N, C, D1..Dn) with strides, pads, auto_pad, dilations
// and ceil_mode (a last window starting in the end padding is dropped). The optional Indices output holds, for each
// maximum, its index in X flattened as a whole tensor: row-major (storage_order 0) or with the spatial part in
// column-major order (storage_order 1), plus (n * C + c) * spatial_size. Ties keep the first element; NaN never
// wins over a number. Numeric element types (float16/bfloat16 compare in float32). 1-3 spatial dimensions.
#include <limits>

#include "core/parallel.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kMaxPoolOptions{
    .kernel_from_attr = true, .allow_dilations = true, .allow_ceil_mode = true, .pads_below_kernel = true};

StatusOr<int64_t> ReadStorageOrder(const Node& node) {
  const int64_t order = node.GetInt("storage_order", 0);
  if (order != 0 && order != 1)
    return InvalidArgumentError(node.Describe(), ": storage_order must be 0 (row major) or 1 (column major), got ",
                                order);
  return order;
}

Status MaxPoolInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t == DType::kBool || t == DType::kString) return ctx.Error("X must be a numeric tensor, got ", DTypeName(t));
  STRATA_RETURN_IF_ERROR(ReadStorageOrder(ctx.node()).status());
  STRATA_ASSIGN_OR_RETURN(PartialShape out, nn::InferPoolShape(ctx, kMaxPoolOptions));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, DType::kInt64, out);
  ctx.SetOutput(0, t, std::move(out));
  return Status::OK();
}

// One (n, c) plane. `ind` is null when Indices are not wanted; `base` is the plane's flat offset in X.
template <typename T>
void MaxPoolPlane(const T* x, const nn::Geometry3& g, T* y, int64_t* ind, int64_t base, bool col_major) {
  using C = ComputeType<T>;
  const C lowest =
      std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
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
        C best = lowest;
        int64_t best_d = -1, best_h = -1, best_w = -1;
        for (int64_t jd = d_lo; jd < d_hi; ++jd) {
          const int64_t id = sd + jd * g.dilation[0];
          for (int64_t jh = h_lo; jh < h_hi; ++jh) {
            const int64_t ih = sh + jh * g.dilation[1];
            const T* row = x + (id * g.in[1] + ih) * g.in[2];
            for (int64_t jw = w_lo; jw < w_hi; ++jw) {
              const int64_t iw = sw + jw * g.dilation[2];
              const C v = ToCompute(row[iw]);
              if (best_d < 0 ? !(v != v) : v > best) {  // the first non-NaN value, then strictly greater ones
                best = v;
                best_d = id, best_h = ih, best_w = iw;
              }
            }
          }
        }
        if (best_d < 0 && d_lo < d_hi && h_lo < h_hi && w_lo < w_hi) {  // every value in the window is NaN
          best_d = sd + d_lo * g.dilation[0], best_h = sh + h_lo * g.dilation[1], best_w = sw + w_lo * g.dilation[2];
          best = ToCompute(x[(best_d * g.in[1] + best_h) * g.in[2] + best_w]);
        }
        y[o] = FromCompute<T>(best);
        if (ind != nullptr) {
          if (best_d < 0) {
            ind[o] = -1;
          } else {
            ind[o] = base + (col_major ? best_d + g.in[0] * (best_h + g.in[1] * best_w)
                                       : (best_d * g.in[1] + best_h) * g.in[2] + best_w);
          }
        }
      }
    }
  }
}

Status MaxPoolCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(nn::Geometry3 g, nn::PoolGeometry(node, x, kMaxPoolOptions, &out_shape));
  STRATA_ASSIGN_OR_RETURN(int64_t order, ReadStorageOrder(node));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  int64_t* ind = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * it, ctx.Output(1, DType::kInt64, out_shape));
    ind = it->data<int64_t>();
  }
  const int64_t planes = x.dim(0) * x.dim(1), in_size = g.in_size(), out_size = g.out_size();
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.kernel_size()));
    ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p)
        MaxPoolPlane(px + p * in_size, g, py + p * out_size, ind ? ind + p * out_size : nullptr, p * in_size,
                     order == 1);
    });
    return Status::OK();
  });
}

// dX = strata.MaxPoolGrad(dY, X) with MaxPool's attributes: each output's gradient goes to its window's (first)
// maximum. The Indices output has no gradient.
Status MaxPoolGradFn(GradContext& ctx) {
  if (!ctx.needs_input_grad(0) || ctx.output_grad(0).empty()) return Status::OK();
  ctx.SetInputGrad(0, Emit1(ctx, "MaxPoolGrad", {ctx.output_grad(0), ctx.node().inputs[0]}, ctx.node().attrs,
                            graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterMaxPool(OpRegistry* r) {
  OpSchema s;
  s.name = "MaxPool";
  s.since_version = 12;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.min_outputs = 1;
  s.max_outputs = 2;
  s.infer = MaxPoolInfer;
  s.reference = MaxPoolCompute;
  s.grad = MaxPoolGradFn;
  r->Add(std::move(s));
}

}  // namespace strata::ops
