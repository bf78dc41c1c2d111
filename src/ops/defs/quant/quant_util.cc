#include "ops/defs/quant/quant_util.h"

#include <algorithm>

#include "ops/defs/nn/gemm_kernel.h"
#include "ops/defs/nn/nn_util.h"

namespace strata::ops::quant {

StatusOr<std::vector<int32_t>> ReadZeroPoints(const Node& node, const Tensor& t, std::string_view what) {
  std::vector<int32_t> out(static_cast<size_t>(t.num_elements()));
  switch (t.dtype()) {
    case DType::kInt8: std::copy_n(t.data<int8_t>(), out.size(), out.begin()); break;
    case DType::kUInt8: std::copy_n(t.data<uint8_t>(), out.size(), out.begin()); break;
    case DType::kInt32: std::copy_n(t.data<int32_t>(), out.size(), out.begin()); break;
    default:
      return InvalidArgumentError(node.Describe(), ": ", what, " must be int8, uint8 or int32, got ", t.TypeString());
  }
  return out;
}

StatusOr<std::vector<float>> ReadScales(const Node& node, const Tensor& t, std::string_view what) {
  if (!IsFloatingPoint(t.dtype()))
    return InvalidArgumentError(node.Describe(), ": ", what, " must be a float tensor, got ", t.TypeString());
  std::vector<float> out(static_cast<size_t>(t.num_elements()));
  STRATA_RETURN_IF_ERROR(DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(ToCompute(t.data<T>()[i]));
    return Status::OK();
  }));
  return out;
}

StatusOr<QuantParams> ReadQuantParams(const Node& node, const Shape& x, const Tensor& scale, const Tensor* zero_point,
                                      int64_t axis_attr, bool allow_per_axis, std::string_view what) {
  QuantParams p;
  STRATA_ASSIGN_OR_RETURN(p.scale, ReadScales(node, scale, what));
  const bool per_tensor = scale.num_elements() == 1 && scale.rank() <= 1;
  if (!per_tensor) {
    if (!allow_per_axis || scale.rank() != 1)
      return InvalidArgumentError(node.Describe(), ": ", what, " must be a scalar",
                                  allow_per_axis ? " or a 1-D tensor (per-axis)" : "", ", got shape ",
                                  scale.shape().ToString());
    STRATA_ASSIGN_OR_RETURN(p.axis, NormalizeAxis(axis_attr, x.rank(), node));
    if (scale.dim(0) != x[p.axis])
      return InvalidArgumentError(node.Describe(), ": per-axis ", what, " must have ", x[p.axis],
                                  " values (the input's dimension ", p.axis, "), got ", scale.dim(0));
    p.len = x[p.axis];
    p.inner = x.Product(p.axis + 1, x.rank());
  }
  if (zero_point != nullptr) {
    if (zero_point->shape() != scale.shape() && !(per_tensor && zero_point->num_elements() == 1))
      return InvalidArgumentError(node.Describe(), ": the zero point must have the scale's shape ",
                                  scale.shape().ToString(), ", got ", zero_point->shape().ToString());
    STRATA_ASSIGN_OR_RETURN(p.zero_point, ReadZeroPoints(node, *zero_point, "the zero point"));
  } else {
    p.zero_point.assign(p.scale.size(), 0);
  }
  return p;
}

StatusOr<Tensor> SubtractZeroPoint(const Node& node, const Tensor& t, const std::vector<int32_t>& zp,
                                   const Shape& zp_shape, Allocator* alloc, std::string_view what) {
  auto b = BroadcastShapes(t.shape(), zp_shape);
  if (!b.ok() || *b != t.shape())
    return InvalidArgumentError(node.Describe(), ": the zero point of ", what, " has shape ", zp_shape.ToString(),
                                ", which does not broadcast to ", what, "'s shape ", t.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(DType::kInt32, t.shape(), alloc));
  int32_t* o = out.data<int32_t>();
  const std::array<std::vector<int64_t>, 1> strides{BroadcastStrides(zp_shape, t.shape())};
  auto run = [&](auto* src) {
    ForEachBroadcast<1>(t.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      o[i] = static_cast<int32_t>(src[i]) - zp[off[0]];
    });
  };
  switch (t.dtype()) {
    case DType::kInt8: run(t.data<int8_t>()); break;
    case DType::kUInt8: run(t.data<uint8_t>()); break;
    default: return InvalidArgumentError(node.Describe(), ": ", what, " must be int8 or uint8, got ", t.TypeString());
  }
  return out;
}

StatusOr<Shape> ChannelShape(const Node& node, const Tensor& t, const Tensor& w, std::string_view what) {
  if (t.num_elements() == 1 && t.rank() <= 1) return Shape{};
  if (t.rank() != 1 || w.rank() < 1 || t.dim(0) != w.dim(0))
    return InvalidArgumentError(node.Describe(), ": ", what, " must be a scalar or have one value per output channel (",
                                w.rank() > 0 ? w.dim(0) : 0, "), got shape ", t.shape().ToString());
  Shape s{t.dim(0)};
  for (int i = 1; i < w.rank(); ++i) s.PushBack(1);
  return s;
}

// ---- matmul ----

StatusOr<Shape> MatMulShape(const Node& node, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0)
    return InvalidArgumentError(node.Describe(), ": matmul operands must have rank >= 1, got ", a.ToString(), " and ",
                                b.ToString());
  const Shape a2 = a.rank() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.rank() == 1 ? Shape{b[0], 1} : b;
  if (a2[a2.rank() - 1] != b2[b2.rank() - 2])
    return InvalidArgumentError(node.Describe(), ": matmul inner dimensions differ: ", a.ToString(), " and ",
                                b.ToString());
  auto batch = BroadcastShapes(Shape(std::span<const int64_t>(a2.data(), a2.rank() - 2)),
                               Shape(std::span<const int64_t>(b2.data(), b2.rank() - 2)));
  if (!batch.ok()) return InvalidArgumentError(node.Describe(), ": matmul batch dimensions: ", batch.status().message());
  Shape out = *batch;
  if (a.rank() != 1) out.PushBack(a2[a2.rank() - 2]);
  if (b.rank() != 1) out.PushBack(b2[b2.rank() - 1]);
  return out;
}

StatusOr<PartialShape> InferMatMulShape(const Node& node, const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known || !b.rank_known) return PartialShape::Unknown();
  if (a.rank() == 0 || b.rank() == 0)
    return InvalidArgumentError(node.Describe(), ": matmul operands must have rank >= 1");
  const PartialShape a2 = a.rank() == 1 ? PartialShape::Of({Dim(1), a.dims[0]}) : a;
  const PartialShape b2 = b.rank() == 1 ? PartialShape::Of({b.dims[0], Dim(1)}) : b;
  const Dim& ka = a2.dims[a2.rank() - 1];
  const Dim& kb = b2.dims[b2.rank() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return InvalidArgumentError(node.Describe(), ": matmul inner dimensions differ: ", a.ToString(), " and ",
                                b.ToString());
  auto batch = BroadcastPartial(PartialShape::Of({a2.dims.begin(), a2.dims.end() - 2}),
                                PartialShape::Of({b2.dims.begin(), b2.dims.end() - 2}));
  if (!batch.ok()) return InvalidArgumentError(node.Describe(), ": ", batch.status().message());
  std::vector<Dim> out = batch->dims;
  if (a.rank() != 1) out.push_back(a2.dims[a2.rank() - 2]);
  if (b.rank() != 1) out.push_back(b2.dims[b2.rank() - 1]);
  return PartialShape::Of(std::move(out));
}

void MatMulInt32(const Tensor& a, const Tensor& b, Tensor* y) {
  const Shape a2 = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape();
  const Shape b2 = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape();
  const int64_t m = a2[a2.rank() - 2], k = a2[a2.rank() - 1], n = b2[b2.rank() - 1];
  const Shape ab(std::span<const int64_t>(a2.data(), a2.rank() - 2));
  const Shape bb(std::span<const int64_t>(b2.data(), b2.rank() - 2));
  const Shape batch = BroadcastShapes(ab, bb).value();
  const std::array<std::vector<int64_t>, 2> strides{BroadcastStrides(ab, batch), BroadcastStrides(bb, batch)};
  const int32_t* pa = a.data<int32_t>();
  const int32_t* pb = b.data<int32_t>();
  int32_t* pc = y->data<int32_t>();
  if (m * n == 0) return;
  ForEachBroadcast<2>(batch, strides, [&](int64_t o, const std::array<int64_t, 2>& off) {
    int32_t* c = pc + o * m * n;
    if (k == 0) {
      std::fill(c, c + m * n, 0);
      return;
    }
    nn::GemmSerial<int32_t>(false, false, m, n, k, 1, pa + off[0] * m * k, k, pb + off[1] * k * n, n, 0, c, n);
  });
}

// ---- convolution ----

StatusOr<IntConv> SetupIntConv(const Node& node, const Shape& x, const Shape& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    return InvalidArgumentError(node.Describe(), ": X (N, C, spatial...) and W (M, C/group, kernel...) must have the ",
                                "same rank >= 3, got ", x.ToString(), " and ", w.ToString());
  IntConv c;
  c.group = node.GetInt("group", 1);
  if (c.group < 1) return InvalidArgumentError(node.Describe(), ": group must be >= 1, got ", c.group);
  if (w[0] % c.group != 0 || x[1] != w[1] * c.group)
    return InvalidArgumentError(node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(), " do not match with ",
                                "group ", c.group, " (expected C = W.shape[1] * group and M divisible by group)");
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(node, x.rank() - 2, {.kernel_from_attr = false}, &wk));
  STRATA_ASSIGN_OR_RETURN(c.g, nn::ForwardGeometry(node, a, x, w[0], &c.out));
  return c;
}

StatusOr<PartialShape> InferIntConvShape(const InferContext& ctx, const PartialShape& x, const PartialShape& w) {
  const Node& node = ctx.node();
  if (x.rank_known && w.rank_known && x.rank() != w.rank())
    return ctx.Error("X ", x.ToString(), " and W ", w.ToString(), " must have the same rank");
  STRATA_ASSIGN_OR_RETURN(int spatial, nn::SpatialRankOf(node, x.rank_known ? x : w, x.rank_known ? "X" : "W"));
  if (node.GetInt("group", 1) < 1) return ctx.Error("group must be >= 1");
  if (spatial < 0) return PartialShape::Unknown();
  std::vector<int64_t> wk(spatial, -1);
  if (w.rank_known)
    for (int i = 0; i < spatial; ++i) wk[i] = w.dims[2 + i].known() ? w.dims[2 + i].value : -1;
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(node, spatial, {.kernel_from_attr = false}, &wk));
  const Dim m = w.rank_known ? w.dims[0] : Dim();
  if (!x.rank_known) {
    std::vector<Dim> dims(spatial + 2);
    dims[1] = m;
    return PartialShape::Of(std::move(dims));
  }
  return nn::InferForwardShape(node, a, x, m);
}

Status RunIntConv(const IntConv& c, const Tensor& x, const Tensor& w, Allocator* alloc, Tensor* y) {
  const nn::Geometry3& g = c.g;
  const int64_t n_batch = x.dim(0), cin = x.dim(1), m = w.dim(0);
  const int64_t cg = cin / c.group, mg = m / c.group, k = g.kernel_size(), l = g.out_size(), s = g.in_size();
  const int64_t rows = cg * k;
  int32_t* py = y->data<int32_t>();
  if (y->num_elements() == 0) return Status::OK();
  if (rows == 0) {
    std::fill(py, py + y->num_elements(), 0);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(Tensor col, Tensor::Create(DType::kInt32, Shape{rows * l}, alloc));
  int32_t* pcol = col.data<int32_t>();
  const int32_t* px = x.data<int32_t>();
  const int32_t* pw = w.data<int32_t>();
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t gi = 0; gi < c.group; ++gi) {
      int32_t* dst = pcol;
      for (int64_t ch = 0; ch < cg; ++ch) {
        const int32_t* xc = px + (n * cin + gi * cg + ch) * s;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw)
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                  const bool row_in = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
                  for (int64_t ow = 0; ow < g.out[2]; ++ow, ++dst) {
                    const int64_t iw = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
                    *dst = row_in && iw >= 0 && iw < g.in[2] ? xc[(id * g.in[1] + ih) * g.in[2] + iw] : 0;
                  }
                }
              }
      }
      nn::GemmSerial<int32_t>(false, false, mg, l, rows, 1, pw + gi * mg * rows, rows, pcol, l, 0,
                              py + (n * m + gi * mg) * l, l);
    }
  }
  return Status::OK();
}

}  // namespace strata::ops::quant
