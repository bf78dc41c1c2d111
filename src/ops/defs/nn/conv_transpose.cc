// ConvTranspose (opset 1, 11): the gradient of Conv with respect to its input. X (N, C, D1..Dn), W (C, M/group,
// k1..kn), optional B (M); output (N, M, ...). Output lengths follow the spec: with output_shape given (or auto_pad
// SAME_*) the pads are derived from it (SAME_UPPER puts the odd pad at the end, NOTSET/SAME_LOWER at the start);
// otherwise out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads. Where output_shape asks for more
// than the full result the excess holds just the bias.
//
// Reference kernel: per (image, group) col = W_g^T X_g with the blocked GEMM, then col2im scatter-adds into Y,
// parallel over output channels. float16/bfloat16 compute in float32. 1-3 spatial dimensions.
#include "core/parallel.h"
#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using nn::Geometry3;

constexpr int64_t kColBudget = int64_t{1} << 24;
constexpr int64_t kMaxLength = int64_t{1} << 31;  // output_padding / output_shape values

struct TransposeParams {
  nn::SpatialAttrs attrs;
  int64_t group = 1;
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;  // spatial part; empty when not given
};

StatusOr<TransposeParams> ReadTransposeParams(const Node& node, int spatial, const std::vector<int64_t>& wk) {
  TransposeParams p;
  p.group = node.GetInt("group", 1);
  if (p.group < 1) return InvalidArgumentError(node.Describe(), ": group must be >= 1, got ", p.group);
  STRATA_ASSIGN_OR_RETURN(p.attrs, nn::ReadSpatialAttrs(node, spatial, {.kernel_from_attr = false}, &wk));
  p.output_padding = node.GetInts("output_padding", std::vector<int64_t>(spatial, 0));
  if (static_cast<int>(p.output_padding.size()) != spatial)
    return InvalidArgumentError(node.Describe(), ": output_padding must have ", spatial, " values, got ",
                                p.output_padding);
  for (int64_t v : p.output_padding)
    if (v < 0 || v > kMaxLength)
      return InvalidArgumentError(node.Describe(), ": output_padding must be in [0, ", kMaxLength, "], got ",
                                  p.output_padding);
  if (node.HasAttr("output_shape")) {
    std::vector<int64_t> os = node.GetInts("output_shape");
    // Either the spatial lengths or a full (N, M, spatial...) shape; only the spatial part matters.
    if (static_cast<int>(os.size()) == spatial + 2) os.erase(os.begin(), os.begin() + 2);
    if (static_cast<int>(os.size()) != spatial)
      return InvalidArgumentError(node.Describe(), ": output_shape must have ", spatial, " values, got ", os);
    for (int64_t v : os)
      if (v < 1 || v > kMaxLength)
        return InvalidArgumentError(node.Describe(), ": output_shape values must be in [1, ", kMaxLength, "], got ",
                                    os);
    p.output_shape = std::move(os);
  }
  return p;
}

// Output spatial length i (or -1 when unknown) and its pads.
StatusOr<int64_t> OutLength(const Node& node, const TransposeParams& p, int i, int64_t in, int64_t* pb, int64_t* pe) {
  return nn::TransposeOutputLength(node, p.attrs, i, in, p.output_padding[i],
                                   p.output_shape.empty() ? -1 : p.output_shape[i], pb, pe);
}

Status ConvTransposeInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "X"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "W"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "B"));
  const Node& node = ctx.node();
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(1);
  if (x.rank_known && w.rank_known && x.rank() != w.rank())
    return ctx.Error("X ", x.ToString(), " and W ", w.ToString(), " must have the same rank");
  STRATA_ASSIGN_OR_RETURN(int spatial, nn::SpatialRankOf(node, x.rank_known ? x : w, x.rank_known ? "X" : "W"));
  if (spatial < 0) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> wk(spatial, -1);
  if (w.rank_known)
    for (int i = 0; i < spatial; ++i) wk[i] = w.dims[2 + i].known() ? w.dims[2 + i].value : -1;
  STRATA_ASSIGN_OR_RETURN(TransposeParams p, ReadTransposeParams(node, spatial, wk));
  if (x.rank_known && w.rank_known && x.dims[1].known() && w.dims[0].known() && x.dims[1].value != w.dims[0].value)
    return ctx.Error("X has ", x.dims[1].value, " channels but W ", w.ToString(), " expects ", w.dims[0].value);
  if (w.rank_known && w.dims[0].known() && w.dims[0].value % p.group != 0)
    return ctx.Error("W's dimension 0 (", w.dims[0].value, " input channels) is not divisible by group ", p.group);
  const Dim m = w.rank_known && w.dims[1].known() ? Dim(w.dims[1].value * p.group) : Dim();
  if (ctx.has_input(2)) {
    const PartialShape& b = ctx.input_shape(2);
    if (b.rank_known && (b.rank() != 1 || (b.dims[0].known() && m.known() && b.dims[0].value != m.value)))
      return ctx.Error("B must be 1-D with one value per output channel, got ", b.ToString());
  }
  std::vector<Dim> dims{x.rank_known ? x.dims[0] : Dim(), m};
  for (int i = 0; i < spatial; ++i) {
    const int64_t in = x.rank_known && x.dims[2 + i].known() ? x.dims[2 + i].value : -1;
    int64_t pb = 0, pe = 0;
    STRATA_ASSIGN_OR_RETURN(int64_t out, OutLength(node, p, i, in, &pb, &pe));
    dims.push_back(out >= 0 ? Dim(out) : Dim());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(dims)));
  return Status::OK();
}

// Adds the K x L_in col rows of one output channel into its output plane `yc`.
template <typename C>
void Col2ImChannel(const C* col, const Geometry3& g, C* yc) {
  const int64_t lin = g.in_size();
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw, col += lin) {
        const int64_t off = kw * g.dilation[2] - g.pad_begin[2];  // ow = iw * stride + off
        const int64_t s = g.stride[2], in_w = g.in[2], out_w = g.out[2];
        const int64_t lo = std::min(in_w, off >= 0 ? int64_t{0} : (-off + s - 1) / s);
        const int64_t hi = std::max(lo, std::min(in_w, out_w - off > 0 ? (out_w - off + s - 1) / s : int64_t{0}));
        for (int64_t id = 0; id < g.in[0]; ++id) {
          const int64_t od = id * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
          if (od < 0 || od >= g.out[0]) continue;
          for (int64_t ih = 0; ih < g.in[1]; ++ih) {
            const int64_t oh = ih * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            if (oh < 0 || oh >= g.out[1]) continue;
            const C* src = col + (id * g.in[1] + ih) * in_w;
            C* dst = yc + (od * g.out[1] + oh) * out_w;
            for (int64_t iw = lo; iw < hi; ++iw) dst[iw * s + off] += src[iw];
          }
        }
      }
    }
  }
}

template <typename C>
Status ConvTransposeRun(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Geometry3& g,
                        int64_t group, Tensor* y) {
  const int64_t n_batch = x.dim(0), cin = x.dim(1), cg = cin / group, mg = w.dim(1), m = mg * group;
  const int64_t k = g.kernel_size(), lin = g.in_size(), lout = g.out_size(), rows = mg * k;
  const int64_t pairs = n_batch * group;
  const int64_t chunk = std::max<int64_t>(1, std::min(pairs, kColBudget / std::max<int64_t>(1, rows * lin)));
  Tensor col;
  if (pairs > 0 && rows * lin > 0) {
    STRATA_ASSIGN_OR_RETURN(col, Tensor::Create(x.dtype(), Shape{chunk * rows * lin}, ctx.allocator()));
  }
  const C* px = x.data<C>();
  const C* pw = w.data<C>();
  const C* pb = b ? b->data<C>() : nullptr;
  C* py = y->data<C>();
  C* pcol = col.defined() ? col.data<C>() : nullptr;
  for (int64_t p0 = 0; p0 < pairs; p0 += chunk) {
    const int64_t cnt = std::min(chunk, pairs - p0);
    if (pcol != nullptr) {
      nn::GemmBatch<C>(cnt, true, false, rows, lin, cg, C(1), rows, lin, C(0), lin, [&](int64_t i) {
        const int64_t pair = p0 + i, n = pair / group, gi = pair % group;
        return nn::GemmOperands<C>{pw + gi * cg * rows, px + (n * cin + gi * cg) * lin, pcol + i * rows * lin};
      });
    }
    ParallelFor(cnt * mg, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, k * lin + lout)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t pair = p0 + t / mg, mo = t % mg;
                    const int64_t n = pair / group, gi = pair % group;
                    C* yc = py + (n * m + gi * mg + mo) * lout;
                    std::fill(yc, yc + lout, pb ? pb[gi * mg + mo] : C(0));
                    if (pcol != nullptr) Col2ImChannel(pcol + (t / mg) * rows * lin + mo * k * lin, g, yc);
                  }
                });
  }
  return Status::OK();
}

Status ConvTransposeCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!IsFloatingPoint(x.dtype()) || w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    return ctx.Error("X, W and B must share one float element type");
  if (x.rank() < 3 || w.rank() != x.rank())
    return ctx.Error("X (N, C, spatial...) and W (C, M/group, kernel...) must have the same rank >= 3, got ",
                     x.shape().ToString(), " and ", w.shape().ToString());
  const int spatial = x.rank() - 2;
  if (spatial > 3) return UnimplementedError(node.Describe(), ": ", spatial, " spatial dimensions (at most 3)");
  const std::vector<int64_t> wk(w.shape().begin() + 2, w.shape().end());
  STRATA_ASSIGN_OR_RETURN(TransposeParams p, ReadTransposeParams(node, spatial, wk));
  if (x.dim(1) != w.dim(0) || w.dim(0) % p.group != 0)
    return ctx.Error("X ", x.shape().ToString(), " and W ", w.shape().ToString(), " do not match with group ", p.group,
                     " (expected C = W.shape[0], divisible by group)");
  const int64_t m = w.dim(1) * p.group;
  if (b && (b->rank() != 1 || b->dim(0) != m))
    return ctx.Error("B must be 1-D with ", m, " values, got ", b->shape().ToString());
  Geometry3 g;
  Shape out_shape{x.dim(0), m};
  const int off = 3 - spatial;
  for (int i = 0; i < spatial; ++i) {
    int64_t pb = 0, pe = 0;
    STRATA_ASSIGN_OR_RETURN(int64_t out, OutLength(node, p, i, x.dim(2 + i), &pb, &pe));
    g.in[off + i] = x.dim(2 + i);
    g.out[off + i] = out;
    g.kernel[off + i] = wk[i];
    g.stride[off + i] = p.attrs.strides[i];
    g.dilation[off + i] = p.attrs.dilations[i];
    g.pad_begin[off + i] = pb;
    out_shape.PushBack(out);
  }
  STRATA_RETURN_IF_ERROR(nn::CheckElementCount(node, out_shape));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const DType ct = nn::ComputeDTypeOf(x.dtype());
  STRATA_ASSIGN_OR_RETURN(Tensor xc, nn::ConvertTo(x, ct, ctx.allocator()));
  STRATA_ASSIGN_OR_RETURN(Tensor wc, nn::ConvertTo(w, ct, ctx.allocator()));
  Tensor bc;
  if (b) {
    STRATA_ASSIGN_OR_RETURN(bc, nn::ConvertTo(*b, ct, ctx.allocator()));
  }
  Tensor yc = *y;
  if (ct != x.dtype()) {
    STRATA_ASSIGN_OR_RETURN(yc, Tensor::Create(ct, out_shape, ctx.allocator()));
  }
  const Tensor* bp = b ? &bc : nullptr;
  STRATA_RETURN_IF_ERROR(ct == DType::kFloat64 ? ConvTransposeRun<double>(ctx, xc, wc, bp, g, p.group, &yc)
                                               : ConvTransposeRun<float>(ctx, xc, wc, bp, g, p.group, &yc));
  if (ct != x.dtype()) STRATA_RETURN_IF_ERROR(ConvertElements(yc, y));
  return Status::OK();
}

// ConvTranspose is the adjoint of a Conv (from its output space back to its input space) with the same weights. With
// the pads it actually applied (resolved from output_shape / auto_pad when those are used; then the shapes must be
// known): dX = Conv(dY, W), dW = strata.ConvBackwardFilter(X, dY, Shape(W)) (X in the role of the Conv's output
// gradient), dB = dY summed over every axis but the channels. output_shape beyond the full result (negative end pads)
// is not supported.
Status ConvTransposeGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  const PartialShape& xs = ctx.input_type(0).shape;
  const PartialShape& ws = ctx.input_type(1).shape;
  const int rank = xs.rank_known ? xs.rank() : ws.rank();
  if (rank < 3) return UnimplementedError(node.Describe(), ": the gradient of ConvTranspose needs the input's rank");
  const int spatial = rank - 2;
  std::vector<int64_t> pads = node.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") pads.assign(2 * spatial, 0);
  if (node.HasAttr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!xs.IsFullyKnown() || !ws.IsFullyKnown())
      return UnimplementedError(node.Describe(), ": the gradient of ConvTranspose with output_shape or SAME padding ",
                                "needs known input shapes");
    const Shape x = xs.ToShape(), w = ws.ToShape();
    STRATA_ASSIGN_OR_RETURN(TransposeParams p,
                            ReadTransposeParams(node, spatial, std::vector<int64_t>(w.begin() + 2, w.end())));
    for (int i = 0; i < spatial; ++i) {
      int64_t pb = 0, pe = 0;
      STRATA_RETURN_IF_ERROR(OutLength(node, p, i, x[2 + i], &pb, &pe).status());
      pads[i] = pb;
      pads[spatial + i] = pe;
    }
  }
  for (int64_t v : pads)
    if (v < 0)
      return UnimplementedError(node.Describe(), ": the gradient of ConvTranspose whose output_shape exceeds the full ",
                                "result is not supported");
  AttributeMap attrs = CopyAttrs(node, {"dilations", "group", "strides"});
  attrs["pads"] = Attribute::Ints(pads);
  const std::string& dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, Emit1(ctx, "Conv", {dy, In(ctx, 1)}, attrs));
  if (ctx.needs_input_grad(1))
    ctx.SetInputGrad(1, Emit1(ctx, "ConvBackwardFilter", {In(ctx, 0), dy, Emit1(ctx, "Shape", {In(ctx, 1)})}, attrs,
                              graph::kStrataDomain));
  if (node.has_input(2) && ctx.needs_input_grad(2)) {
    std::vector<int64_t> axes{0};
    for (int i = 2; i < rank; ++i) axes.push_back(i);
    AttributeMap keep;
    keep["keepdims"] = Attribute::Int(0);
    ctx.SetInputGrad(2, Emit1(ctx, "ReduceSum", {dy, ConstInts(ctx, axes)}, std::move(keep)));
  }
  return Status::OK();
}

}  // namespace

void RegisterConvTranspose(OpRegistry* r) {
  OpSchema s;
  s.name = "ConvTranspose";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = ConvTransposeInfer;
  s.reference = ConvTransposeCompute;
  s.grad = ConvTransposeGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
