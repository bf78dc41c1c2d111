// strata.ConvBackwardData(dY, W, x_shape): the gradient of Conv with respect to X. Attributes are the forward Conv's
// (kernel_shape, strides, pads, dilations, auto_pad, group); x_shape (int64, 1-D) is X's shape, which the transposed
// convolution cannot recover from dY alone. dX[n, g] = col2im(W_g^T dY[n, g]). Float types (16-bit floats compute in
// float32); 1-3 spatial dimensions. Reference kernel: GEMM + col2im over (image, group) pairs.
#include "core/parallel.h"
#include "ops/defs/grad/conv_grad_util.h"
#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr int64_t kColBudget = int64_t{1} << 24;  // column elements materialised at once

Status ConvBackwardDataInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "W"));
  ctx.SetOutput(0, ctx.input_dtype(0), convgrad::ShapeFromOperand(ctx, 2));
  return Status::OK();
}

template <typename C>
void Run(const C* dy, const C* w, C* dx, const Shape& xs, const Shape& ws, const convgrad::ConvGeometry& cg, C* col,
         int64_t chunk) {
  const nn::Geometry3& g = cg.g;
  const int64_t n_batch = xs[0], cin = xs[1], m = ws[0], group = cg.group;
  const int64_t cgs = cin / group, mg = m / group, k = g.kernel_size(), l = g.out_size(), s = g.in_size();
  const int64_t rows = cgs * k, pairs = n_batch * group;
  std::fill_n(dx, xs.NumElements(), C(0));
  for (int64_t p0 = 0; p0 < pairs; p0 += chunk) {
    const int64_t cnt = std::min(chunk, pairs - p0);
    // col_i [rows, l] = W_g^T [rows, mg] x dY[n, g] [mg, l]
    nn::GemmBatch<C>(cnt, /*trans_a=*/true, false, rows, l, mg, C(1), rows, l, C(0), l, [&](int64_t i) {
      const int64_t pair = p0 + i, n = pair / group, gi = pair % group;
      return nn::GemmOperands<C>{w + gi * mg * rows, dy + (n * m + gi * mg) * l, col + i * rows * l};
    });
    ParallelFor(cnt, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t pair = p0 + i, n = pair / group, gi = pair % group;
        convgrad::Col2Im(col + i * rows * l, cgs, g, dx + (n * cin + gi * cgs) * s);
      }
    });
  }
}

Status ConvBackwardDataCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (!IsFloatingPoint(dy.dtype()) || w.dtype() != dy.dtype())
    return ctx.Error("dY and W must share one float element type, got ", DTypeName(dy.dtype()), " and ",
                     DTypeName(w.dtype()));
  STRATA_ASSIGN_OR_RETURN(Shape xs, convgrad::ReadShape(ctx, 2, "x_shape"));
  STRATA_ASSIGN_OR_RETURN(convgrad::ConvGeometry cg, convgrad::ForwardConv(ctx.node(), xs, w.shape()));
  if (dy.shape() != cg.y)
    return ctx.Error("dY has shape ", dy.shape().ToString(), ", expected the Conv output shape ", cg.y.ToString());
  STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dy.dtype(), xs));
  if (xs.NumElements() == 0) return Status::OK();
  const DType ct = nn::ComputeDTypeOf(dy.dtype());
  STRATA_ASSIGN_OR_RETURN(Tensor dyc, nn::ConvertTo(dy, ct, ctx.allocator()));
  STRATA_ASSIGN_OR_RETURN(Tensor wc, nn::ConvertTo(w, ct, ctx.allocator()));
  Tensor dxc = *dx;
  if (ct != dy.dtype()) {
    STRATA_ASSIGN_OR_RETURN(dxc, Tensor::Create(ct, xs, ctx.allocator()));
  }
  const int64_t rows = xs[1] / cg.group * cg.g.kernel_size(), l = cg.g.out_size(), pairs = xs[0] * cg.group;
  const int64_t chunk = std::max<int64_t>(1, std::min(pairs, kColBudget / std::max<int64_t>(1, rows * l)));
  STRATA_ASSIGN_OR_RETURN(Tensor col,
                          Tensor::Create(ct, Shape{std::max<int64_t>(1, chunk * rows * l)}, ctx.allocator()));
  if (ct == DType::kFloat64) {
    Run(dyc.data<double>(), wc.data<double>(), dxc.data<double>(), xs, w.shape(), cg, col.data<double>(), chunk);
  } else {
    Run(dyc.data<float>(), wc.data<float>(), dxc.data<float>(), xs, w.shape(), cg, col.data<float>(), chunk);
  }
  if (ct != dy.dtype()) STRATA_RETURN_IF_ERROR(ConvertElements(dxc, dx));
  return Status::OK();
}

// Linear in dY and W: d/d(dY) = Conv(ddX, W), d/dW = ConvBackwardFilter(dY, ddX).
Status ConvBackwardDataGrad(GradContext& ctx) {
  const AttributeMap attrs =
      CopyAttrs(ctx.node(), {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const std::string& ddx = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, Emit1(ctx, "Conv", {ddx, In(ctx, 1)}, attrs));
  if (ctx.needs_input_grad(1))
    ctx.SetInputGrad(1, Emit1(ctx, "ConvBackwardFilter", {In(ctx, 0), ddx, Emit1(ctx, "Shape", {In(ctx, 1)})}, attrs,
                              graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterConvBackwardData(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ConvBackwardData";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = ConvBackwardDataInfer;
  s.reference = ConvBackwardDataCompute;
  s.grad = ConvBackwardDataGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
