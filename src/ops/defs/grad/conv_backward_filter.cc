// strata.ConvBackwardFilter(dY, X, w_shape) -> dW[, dB]: the gradient of Conv with respect to W (of shape w_shape,
// int64 1-D) and, when output 1 is wanted, its bias (dB[m] = sum of dY[:, m]). Attributes are the forward Conv's
// (kernel_shape, strides, pads, dilations, auto_pad, group). dW_g = sum over images of dY[n, g] im2col(X[n, g])^T.
// Float types (16-bit floats compute in float32); 1-3 spatial dimensions.
#include "core/parallel.h"
#include "ops/defs/grad/conv_grad_util.h"
#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status ConvBackwardFilterInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "dY"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "X"));
  PartialShape w = convgrad::ShapeFromOperand(ctx, 2);
  ctx.SetOutput(0, ctx.input_dtype(0), w);
  if (ctx.num_outputs() > 1) {
    Dim m = w.rank_known && w.rank() > 0 ? w.dims[0] : Dim();
    const PartialShape& dy = ctx.input_shape(0);
    if (!m.known() && dy.rank_known && dy.rank() > 1) m = dy.dims[1];
    ctx.SetOutput(1, ctx.input_dtype(0), PartialShape::Of({m}));
  }
  return Status::OK();
}

template <typename C>
void Run(const C* dy, const C* x, C* dw, C* db, const Shape& xs, const Shape& ws, const convgrad::ConvGeometry& cg,
         C* col) {
  const nn::Geometry3& g = cg.g;
  const int64_t n_batch = xs[0], cin = xs[1], m = ws[0], group = cg.group;
  const int64_t cgs = cin / group, mg = m / group, k = g.kernel_size(), l = g.out_size(), s = g.in_size();
  const int64_t rows = cgs * k;
  if (n_batch == 0) std::fill_n(dw, ws.NumElements(), C(0));
  for (int64_t n = 0; n < n_batch; ++n) {
    ParallelFor(cin, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, k * l)), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) convgrad::Im2Col(x + (n * cin + c) * s, 1, g, col + c * k * l);
    });
    // dW_g [mg, rows] (+)= dY[n, g] [mg, l] x col_g^T [l, rows]
    nn::GemmBatch<C>(group, false, /*trans_b=*/true, mg, rows, l, C(1), l, l, n == 0 ? C(0) : C(1), rows,
                     [&](int64_t gi) {
                       return nn::GemmOperands<C>{dy + (n * m + gi * mg) * l, col + gi * rows * l, dw + gi * mg * rows};
                     });
  }
  if (db != nullptr) {
    ParallelFor(m, 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        C sum = C(0);
        for (int64_t n = 0; n < n_batch; ++n) {
          const C* row = dy + (n * m + j) * l;
          for (int64_t i = 0; i < l; ++i) sum += row[i];
        }
        db[j] = sum;
      }
    });
  }
}

Status ConvBackwardFilterCompute(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (!IsFloatingPoint(dy.dtype()) || x.dtype() != dy.dtype())
    return ctx.Error("dY and X must share one float element type, got ", DTypeName(dy.dtype()), " and ",
                     DTypeName(x.dtype()));
  STRATA_ASSIGN_OR_RETURN(Shape ws, convgrad::ReadShape(ctx, 2, "w_shape"));
  STRATA_ASSIGN_OR_RETURN(convgrad::ConvGeometry cg, convgrad::ForwardConv(ctx.node(), x.shape(), ws));
  if (dy.shape() != cg.y)
    return ctx.Error("dY has shape ", dy.shape().ToString(), ", expected the Conv output shape ", cg.y.ToString());
  STRATA_ASSIGN_OR_RETURN(Tensor * dw, ctx.Output(0, dy.dtype(), ws));
  Tensor* db = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(db, ctx.Output(1, dy.dtype(), Shape{ws[0]}));
  }
  const DType ct = nn::ComputeDTypeOf(dy.dtype());
  STRATA_ASSIGN_OR_RETURN(Tensor dyc, nn::ConvertTo(dy, ct, ctx.allocator()));
  STRATA_ASSIGN_OR_RETURN(Tensor xc, nn::ConvertTo(x, ct, ctx.allocator()));
  Tensor dwc = *dw, dbc = db ? *db : Tensor();
  if (ct != dy.dtype()) {
    STRATA_ASSIGN_OR_RETURN(dwc, Tensor::Create(ct, ws, ctx.allocator()));
    if (db) {
      STRATA_ASSIGN_OR_RETURN(dbc, Tensor::Create(ct, Shape{ws[0]}, ctx.allocator()));
    }
  }
  const int64_t col_size = x.shape()[1] * cg.g.kernel_size() * cg.g.out_size();
  STRATA_ASSIGN_OR_RETURN(Tensor col, Tensor::Create(ct, Shape{std::max<int64_t>(1, col_size)}, ctx.allocator()));
  if (ct == DType::kFloat64) {
    Run(dyc.data<double>(), xc.data<double>(), dwc.data<double>(), db ? dbc.data<double>() : nullptr, x.shape(), ws, cg,
        col.data<double>());
  } else {
    Run(dyc.data<float>(), xc.data<float>(), dwc.data<float>(), db ? dbc.data<float>() : nullptr, x.shape(), ws, cg,
        col.data<float>());
  }
  if (ct != dy.dtype()) {
    STRATA_RETURN_IF_ERROR(ConvertElements(dwc, dw));
    if (db) STRATA_RETURN_IF_ERROR(ConvertElements(dbc, db));
  }
  return Status::OK();
}

// Bilinear in dY and X: d/d(dY) = Conv(X, ddW) (+ ddB as the bias), d/dX = ConvBackwardData(dY, ddW, Shape(X)).
Status ConvBackwardFilterGrad(GradContext& ctx) {
  const AttributeMap attrs =
      CopyAttrs(ctx.node(), {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const std::string& ddw = ctx.output_grad(0);
  const std::string ddb = ctx.output_grad(1);
  if (ddw.empty()) return UnimplementedError("the second derivative through a bias gradient alone is not supported");
  if (ctx.needs_input_grad(0)) {
    std::vector<std::string> ins{In(ctx, 1), ddw};
    if (!ddb.empty()) ins.push_back(ddb);
    ctx.SetInputGrad(0, Emit1(ctx, "Conv", ins, attrs));
  }
  if (ctx.needs_input_grad(1))
    ctx.SetInputGrad(1, Emit1(ctx, "ConvBackwardData", {In(ctx, 0), ddw, Emit1(ctx, "Shape", {In(ctx, 1)})}, attrs,
                              graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterConvBackwardFilter(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ConvBackwardFilter";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.min_outputs = 1;
  s.max_outputs = 2;
  s.infer = ConvBackwardFilterInfer;
  s.reference = ConvBackwardFilterCompute;
  s.grad = ConvBackwardFilterGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
