#include "ops/defs/grad/conv_grad_util.h"

namespace strata::ops::convgrad {

StatusOr<ConvGeometry> ForwardConv(const Node& node, const Shape& x, const Shape& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    return InvalidArgumentError(node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
                                " must have the same rank >= 3");
  ConvGeometry cg;
  cg.group = node.GetInt("group", 1);
  if (cg.group < 1 || w[0] % cg.group != 0 || x[1] != w[1] * cg.group)
    return InvalidArgumentError(node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
                                " do not match with group ", cg.group);
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a,
                          nn::ReadSpatialAttrs(node, x.rank() - 2, {.kernel_from_attr = false}, &wk));
  STRATA_ASSIGN_OR_RETURN(cg.g, nn::ForwardGeometry(node, a, x, w[0], &cg.y));
  return cg;
}

StatusOr<Shape> ReadShape(const KernelContext& ctx, int i, std::string_view what) {
  if (ctx.input(i).rank() != 1) return ctx.Error(what, " must be 1-D, got ", ctx.input(i).shape().ToString());
  auto dims = ReadInts(ctx.input(i), what);
  if (!dims.ok()) return ctx.Error(dims.status().message());
  for (int64_t d : *dims)
    if (d < 0) return ctx.Error(what, " ", *dims, " has a negative size");
  return Shape(*dims);
}

PartialShape ShapeFromOperand(const InferContext& ctx, int i) {
  if (const Tensor* v = ctx.input_value(i)) {
    auto dims = ReadInts(*v, "shape");
    if (dims.ok()) return PartialShape::Of(std::vector<Dim>(dims->begin(), dims->end()));
  }
  const PartialShape& s = ctx.input_shape(i);
  if (s.rank_known && s.rank() == 1 && s.dims[0].known()) return PartialShape::Of(std::vector<Dim>(s.dims[0].value));
  return PartialShape::Unknown();
}

namespace {

// Calls fn(col_row, x_offset_of_row_start, out_w_lo, out_w_hi, iw_offset) for each (channel, tap, od, oh) row of the
// column matrix whose input row lies inside X: columns ow in [lo, hi) read x[row + ow * stride_w + off].
template <typename F>
void ForEachRow(int64_t channels, const nn::Geometry3& g, F&& fn) {
  const int64_t L = g.out_size();
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++row) {
          const int64_t off = kw * g.dilation[2] - g.pad_begin[2];
          const int64_t s = g.stride[2], out_w = g.out[2], in_w = g.in[2];
          const int64_t lo = std::min(out_w, off >= 0 ? int64_t{0} : (-off + s - 1) / s);
          const int64_t hi = std::max(lo, std::min(out_w, in_w - off > 0 ? (in_w - off + s - 1) / s : int64_t{0}));
          for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
              const int64_t col_off = row * L + (od * g.out[1] + oh) * out_w;
              const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
              const int64_t x_off = c * g.in_size() + (inside ? (id * g.in[1] + ih) * in_w : 0);
              fn(col_off, x_off, inside ? lo : 0, inside ? hi : 0, off);
            }
          }
        }
}

}  // namespace

template <typename C>
void Im2Col(const C* x, int64_t channels, const nn::Geometry3& g, C* col) {
  const int64_t s = g.stride[2], out_w = g.out[2];
  ForEachRow(channels, g, [&](int64_t co, int64_t xo, int64_t lo, int64_t hi, int64_t off) {
    C* dst = col + co;
    const C* src = x + xo;
    std::fill(dst, dst + lo, C(0));
    for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * s + off];
    std::fill(dst + std::max(lo, hi), dst + out_w, C(0));
  });
}

template <typename C>
void Col2Im(const C* col, int64_t channels, const nn::Geometry3& g, C* x) {
  const int64_t s = g.stride[2];
  ForEachRow(channels, g, [&](int64_t co, int64_t xo, int64_t lo, int64_t hi, int64_t off) {
    const C* src = col + co;
    C* dst = x + xo;
    for (int64_t ow = lo; ow < hi; ++ow) dst[ow * s + off] += src[ow];
  });
}

template void Im2Col<float>(const float*, int64_t, const nn::Geometry3&, float*);
template void Im2Col<double>(const double*, int64_t, const nn::Geometry3&, double*);
template void Col2Im<float>(const float*, int64_t, const nn::Geometry3&, float*);
template void Col2Im<double>(const double*, int64_t, const nn::Geometry3&, double*);

}  // namespace strata::ops::convgrad
