// Conv (opset 1, 11): convolution of X (N, C, D1..Dn) with W (M, C/group, k1..kn) plus optional bias B (M), with
// group (depthwise included), strides, dilations, pads and auto_pad; kernel_shape defaults to W's spatial dims.
//
// Reference kernel: im2col + the blocked GEMM of gemm_kernel.h (1x1 stride-1 unpadded convolutions skip im2col),
// parallel over (batch, group, output-channel block, pixel block) tiles. float16/bfloat16 compute in float32.
// 1-3 spatial dimensions.
#include "core/parallel.h"
#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using nn::Geometry3;

// At most this many im2col elements are materialised at once (several images' columns share one buffer).
constexpr int64_t kColBudget = int64_t{1} << 24;

StatusOr<int64_t> ReadGroup(const Node& node) {
  const int64_t group = node.GetInt("group", 1);
  if (group < 1) return InvalidArgumentError(node.Describe(), ": group must be >= 1, got ", group);
  return group;
}

Status ConvInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(nn::RequireFloatInput(ctx, 0, "X"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 1, "W"));
  STRATA_RETURN_IF_ERROR(nn::RequireSameDtypeAs0(ctx, 2, "B"));
  const Node& node = ctx.node();
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(1);
  if (x.rank_known && w.rank_known && x.rank() != w.rank())
    return ctx.Error("X ", x.ToString(), " and W ", w.ToString(), " must have the same rank");
  STRATA_ASSIGN_OR_RETURN(int spatial, nn::SpatialRankOf(node, x.rank_known ? x : w, x.rank_known ? "X" : "W"));
  STRATA_ASSIGN_OR_RETURN(int64_t group, ReadGroup(node));
  if (spatial < 0) {
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> wk(spatial, -1);
  if (w.rank_known)
    for (int i = 0; i < spatial; ++i) wk[i] = w.dims[2 + i].known() ? w.dims[2 + i].value : -1;
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(node, spatial, {.kernel_from_attr = false}, &wk));
  const Dim m = w.rank_known ? w.dims[0] : Dim();
  if (m.known() && m.value % group != 0)
    return ctx.Error("the number of output channels ", m.value, " (W's dimension 0) is not divisible by group ", group);
  if (x.rank_known && w.rank_known && x.dims[1].known() && w.dims[1].known() &&
      x.dims[1].value != w.dims[1].value * group)
    return ctx.Error("X has ", x.dims[1].value, " channels but W ", w.ToString(), " with group ", group, " expects ",
                     w.dims[1].value * group);
  if (ctx.has_input(2)) {
    const PartialShape& b = ctx.input_shape(2);
    if (b.rank_known && (b.rank() != 1 || (b.dims[0].known() && m.known() && b.dims[0].value != m.value)))
      return ctx.Error("B must be 1-D with one value per output channel (", m.known() ? m.value : -1, "), got ",
                       b.ToString());
  }
  if (!x.rank_known) {
    std::vector<Dim> dims(spatial + 2);
    dims[1] = m;
    ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(dims)));
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(PartialShape out, nn::InferForwardShape(node, a, x, m));
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

// Writes the K x L im2col rows of one input channel plane `xc` into `out` (zeros where the window is in padding).
template <typename C>
void Im2ColChannel(const C* xc, const Geometry3& g, C* out) {
  const int64_t L = g.out_size();
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw, out += L) {
        const int64_t off = kw * g.dilation[2] - g.pad_begin[2];  // iw = ow * stride + off
        const int64_t s = g.stride[2], out_w = g.out[2], in_w = g.in[2];
        // Output columns whose iw lies in [0, in_w): [lo, hi).
        const int64_t lo = std::min(out_w, off >= 0 ? int64_t{0} : (-off + s - 1) / s);
        const int64_t hi = std::max(lo, std::min(out_w, in_w - off > 0 ? (in_w - off + s - 1) / s : int64_t{0}));
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            C* dst = out + (od * g.out[1] + oh) * out_w;
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
              std::fill(dst, dst + out_w, C(0));
              continue;
            }
            const C* src = xc + (id * g.in[1] + ih) * in_w;
            std::fill(dst, dst + lo, C(0));
            if (s == 1) {
              if (hi > lo) std::copy(src + lo + off, src + hi + off, dst + lo);
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * s + off];
            }
            std::fill(dst + hi, dst + out_w, C(0));
          }
        }
      }
    }
  }
}

// y = conv(x, w) + b on float/double buffers.
template <typename C>
Status ConvRun(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Geometry3& g, int64_t group,
               Tensor* y) {
  const int64_t n_batch = x.dim(0), cin = x.dim(1), m = w.dim(0);
  const int64_t cg = cin / group, mg = m / group, k = g.kernel_size(), l = g.out_size(), s = g.in_size();
  const int64_t rows = cg * k;
  const bool direct = k == 1 && g.in == g.out && g.stride == std::array<int64_t, 3>{1, 1, 1} &&
                      g.pad_begin == std::array<int64_t, 3>{0, 0, 0};
  const int64_t pairs = n_batch * group;
  const int64_t chunk =
      direct ? pairs : std::max<int64_t>(1, std::min(pairs, kColBudget / std::max<int64_t>(1, rows * l)));
  Tensor col;
  if (!direct && pairs > 0 && rows * l > 0) {
    STRATA_ASSIGN_OR_RETURN(col, Tensor::Create(x.dtype(), Shape{chunk * rows * l}, ctx.allocator()));
  }
  const C* px = x.data<C>();
  const C* pw = w.data<C>();
  const C* pb = b ? b->data<C>() : nullptr;
  C* py = y->data<C>();
  C* pcol = col.defined() ? col.data<C>() : nullptr;
  std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t)> init_bias;
  for (int64_t p0 = 0; p0 < pairs; p0 += chunk) {
    const int64_t cnt = std::min(chunk, pairs - p0);
    if (pcol != nullptr) {
      ParallelFor(cnt * cg, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, k * l)), [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t pair = p0 + t / cg, c = t % cg;
          const int64_t n = pair / group, gi = pair % group;
          Im2ColChannel(px + (n * cin + gi * cg + c) * s, g, pcol + (t / cg) * rows * l + c * k * l);
        }
      });
    }
    if (pb != nullptr) {
      init_bias = [&](int64_t i, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        const int64_t pair = p0 + i, n = pair / group, gi = pair % group;
        for (int64_t r = r0; r < r0 + nr; ++r) {
          C* dst = py + (n * m + gi * mg + r) * l + c0;
          std::fill(dst, dst + nc, pb[gi * mg + r]);
        }
      };
    }
    nn::GemmBatch<C>(
        cnt, false, false, mg, l, rows, C(1), rows, l, pb ? C(1) : C(0), l,
        [&](int64_t i) {
          const int64_t pair = p0 + i, n = pair / group, gi = pair % group;
          return nn::GemmOperands<C>{pw + gi * mg * rows, direct ? px + (n * cin + gi * cg) * s : pcol + i * rows * l,
                                     py + (n * m + gi * mg) * l};
        },
        init_bias);
  }
  return Status::OK();
}

Status ConvCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!IsFloatingPoint(x.dtype()) || w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    return ctx.Error("X, W and B must share one float element type, got ", DTypeName(x.dtype()), ", ",
                     DTypeName(w.dtype()), b ? StrCat(", ", DTypeName(b->dtype())) : std::string());
  if (x.rank() < 3 || w.rank() != x.rank())
    return ctx.Error("X (N, C, spatial...) and W (M, C/group, kernel...) must have the same rank >= 3, got ",
                     x.shape().ToString(), " and ", w.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(int64_t group, ReadGroup(node));
  const std::vector<int64_t> wk(w.shape().begin() + 2, w.shape().end());
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a,
                          nn::ReadSpatialAttrs(node, x.rank() - 2, {.kernel_from_attr = false}, &wk));
  const int64_t m = w.dim(0);
  if (m % group != 0 || x.dim(1) != w.dim(1) * group)
    return ctx.Error("X ", x.shape().ToString(), " and W ", w.shape().ToString(), " do not match with group ", group,
                     " (expected C = W.shape[1] * group and M divisible by group)");
  if (b && (b->rank() != 1 || b->dim(0) != m))
    return ctx.Error("B must be 1-D with ", m, " values, got ", b->shape().ToString());
  Shape out_shape;
  STRATA_ASSIGN_OR_RETURN(Geometry3 g, nn::ForwardGeometry(node, a, x.shape(), m, &out_shape));
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
  STRATA_RETURN_IF_ERROR(ct == DType::kFloat64 ? ConvRun<double>(ctx, xc, wc, bp, g, group, &yc)
                                               : ConvRun<float>(ctx, xc, wc, bp, g, group, &yc));
  if (ct != x.dtype()) STRATA_RETURN_IF_ERROR(ConvertElements(yc, y));
  return Status::OK();
}

// Gradient of a group-1 Conv with known shapes, composed of forward ops so that the fast kernels apply:
//   dX = ConvTranspose(dY, W) with the forward strides/dilations/pads and the output_padding that restores X's size;
//   dW = Transpose(Conv(Transpose(X, CNHW), Transpose(dY, CNHW)) with strides and dilations swapped), sliced to the
//        kernel size, back to (M, C, k...);
//   dB = ReduceSum(dY) over every axis but channels.
Status ConvGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  const PartialShape& xs = ctx.input_type(0).shape;
  const PartialShape& ws = ctx.input_type(1).shape;
  if (!ws.IsFullyKnown() || !xs.rank_known || xs.rank() < 3)
    return UnimplementedError(node.Describe(), ": Conv gradient needs W's shape and X's rank");
  const int spatial = xs.rank() - 2;
  std::vector<int64_t> x_sp, wk;
  for (int i = 0; i < spatial; ++i) {
    if (!xs.dims[2 + i].known()) return UnimplementedError(node.Describe(), ": Conv gradient needs X's spatial dims");
    x_sp.push_back(xs.dims[2 + i].value);
    wk.push_back(ws.dims[2 + i].value);
  }
  if (node.GetInt("group", 1) != 1)
    return UnimplementedError(node.Describe(), ": the gradient of a grouped Conv is not written yet");
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(node, spatial, {.kernel_from_attr = false}, &wk));
  std::vector<int64_t> pads(2 * spatial), out_len(spatial), out_pad(spatial), k_full(spatial);
  for (int i = 0; i < spatial; ++i) {
    STRATA_ASSIGN_OR_RETURN(out_len[i], nn::OutputLength(node, a, i, x_sp[i], &pads[i], &pads[spatial + i]));
    const int64_t span = (out_len[i] - 1) * a.strides[i] + (wk[i] - 1) * a.dilations[i] + 1;
    out_pad[i] = x_sp[i] - (span - pads[i] - pads[spatial + i]);
    k_full[i] = (x_sp[i] + pads[i] + pads[spatial + i] - ((out_len[i] - 1) * a.strides[i] + 1)) / a.dilations[i] + 1;
  }
  const std::string dy = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) {
    AttributeMap t;
    t["strides"] = Attribute::Ints(a.strides);
    t["dilations"] = Attribute::Ints(a.dilations);
    t["pads"] = Attribute::Ints(pads);
    t["output_padding"] = Attribute::Ints(out_pad);
    ctx.SetInputGrad(0, Emit1(ctx, "ConvTranspose", {dy, node.inputs[1]}, std::move(t)));
  }
  std::vector<int64_t> swap01(xs.rank());
  for (int i = 0; i < xs.rank(); ++i) swap01[i] = i;
  std::swap(swap01[0], swap01[1]);
  if (ctx.needs_input_grad(1)) {
    AttributeMap p1, p2, p3, c;
    p1["perm"] = Attribute::Ints(swap01);
    p2["perm"] = Attribute::Ints(swap01);
    p3["perm"] = Attribute::Ints(swap01);
    c["strides"] = Attribute::Ints(a.dilations);
    c["dilations"] = Attribute::Ints(a.strides);
    c["pads"] = Attribute::Ints(pads);
    const std::string xt = Emit1(ctx, "Transpose", {node.inputs[0]}, std::move(p1));
    const std::string dyt = Emit1(ctx, "Transpose", {dy}, std::move(p2));
    std::string dw = Emit1(ctx, "Conv", {xt, dyt}, std::move(c));
    if (k_full != wk) {
      std::vector<int64_t> starts(spatial, 0), axes;
      for (int i = 0; i < spatial; ++i) axes.push_back(2 + i);
      dw = Emit1(ctx, "Slice", {dw, ConstInts(ctx, starts), ConstInts(ctx, wk), ConstInts(ctx, axes)});
    }
    ctx.SetInputGrad(1, Emit1(ctx, "Transpose", {dw}, std::move(p3)));
  }
  if (node.has_input(2) && ctx.needs_input_grad(2)) {
    std::vector<int64_t> axes{0};
    for (int i = 0; i < spatial; ++i) axes.push_back(2 + i);
    AttributeMap r;
    r["keepdims"] = Attribute::Int(0);
    ctx.SetInputGrad(2, Emit1(ctx, "ReduceSum", {dy, ConstInts(ctx, axes)}, std::move(r)));
  }
  return Status::OK();
}

}  // namespace

void RegisterConv(OpRegistry* r) {
  OpSchema s;
  s.name = "Conv";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = ConvInfer;
  s.reference = ConvCompute;
  s.grad = ConvGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
