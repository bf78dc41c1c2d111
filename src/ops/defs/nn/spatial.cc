#include "ops/defs/nn/spatial.h"

#include <algorithm>

#include "ops/defs/nn/nn_util.h"

namespace strata::ops::nn {
namespace {

// Window attributes (kernel, strides, dilations, pads) above this are rejected, which keeps all length arithmetic
// far from int64 overflow.
constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

// Reads an ints attribute that must have `n` entries, each >= `min`; `def` when absent.
StatusOr<std::vector<int64_t>> ReadPerAxis(const Node& node, std::string_view name, size_t n, int64_t def,
                                           int64_t min) {
  if (!node.HasAttr(name)) return std::vector<int64_t>(n, def);
  std::vector<int64_t> v = node.GetInts(name);
  if (v.size() != n)
    return InvalidArgumentError(node.Describe(), ": ", name, " must have ", n, " values for the input's spatial ",
                                "dimensions, got ", v.size(), ": ", v);
  for (int64_t x : v) {
    if (x < min) return InvalidArgumentError(node.Describe(), ": ", name, " must be >= ", min, ", got ", v);
    if (x > kMaxWindowValue)
      return InvalidArgumentError(node.Describe(), ": ", name, " ", v, " has a value above ", kMaxWindowValue);
  }
  return v;
}

StatusOr<AutoPad> ReadAutoPad(const Node& node) {
  const std::string s = node.GetString("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  return InvalidArgumentError(node.Describe(), ": auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '", s,
                              "'");
}

// Splits a total padding between begin and end: SAME_UPPER puts the odd one at the end, the others at the begin.
void SplitPads(AutoPad mode, int64_t total, int64_t* pad_begin, int64_t* pad_end) {
  if (mode == AutoPad::kSameUpper) {
    *pad_begin = total / 2;
    *pad_end = total - *pad_begin;
  } else {
    *pad_end = total / 2;
    *pad_begin = total - *pad_end;
  }
}

}  // namespace

StatusOr<SpatialAttrs> ReadSpatialAttrs(const Node& node, int rank, const SpatialOptions& opt,
                                        const std::vector<int64_t>* w_kernel) {
  SpatialAttrs a;
  a.rank = rank;
  const size_t n = static_cast<size_t>(rank);
  if (opt.kernel_from_attr) {
    if (!node.HasAttr("kernel_shape"))
      return InvalidArgumentError(node.Describe(), ": attribute kernel_shape is required");
    STRATA_ASSIGN_OR_RETURN(a.kernel, ReadPerAxis(node, "kernel_shape", n, 1, 1));
  } else {
    a.kernel = w_kernel ? *w_kernel : std::vector<int64_t>(n, -1);
    for (int64_t k : a.kernel)
      if (k == 0 || k > kMaxWindowValue)
        return InvalidArgumentError(node.Describe(), ": the weights' spatial dimensions ", a.kernel, " must be in [1, ",
                                    kMaxWindowValue, "]");
    if (node.HasAttr("kernel_shape")) {
      STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> ks, ReadPerAxis(node, "kernel_shape", n, 1, 1));
      for (size_t i = 0; i < n; ++i) {
        if (a.kernel[i] >= 0 && a.kernel[i] != ks[i])
          return InvalidArgumentError(node.Describe(), ": kernel_shape ", ks, " does not match the weights' spatial ",
                                      "dimensions ", a.kernel);
        a.kernel[i] = ks[i];
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(a.strides, ReadPerAxis(node, "strides", n, 1, 1));
  STRATA_ASSIGN_OR_RETURN(a.dilations, ReadPerAxis(node, "dilations", n, 1, 1));
  if (!opt.allow_dilations && std::any_of(a.dilations.begin(), a.dilations.end(), [](int64_t d) { return d != 1; }))
    return UnimplementedError(node.Describe(), ": dilations ", a.dilations, " are not supported by ", node.op_type,
                              " at this opset");
  STRATA_ASSIGN_OR_RETURN(a.pads, ReadPerAxis(node, "pads", 2 * n, 0, 0));
  STRATA_ASSIGN_OR_RETURN(a.auto_pad, ReadAutoPad(node));
  const int64_t ceil = node.GetInt("ceil_mode", 0);
  if (ceil != 0 && ceil != 1) return InvalidArgumentError(node.Describe(), ": ceil_mode must be 0 or 1, got ", ceil);
  if (ceil && !opt.allow_ceil_mode)
    return UnimplementedError(node.Describe(), ": ceil_mode is not supported by ", node.op_type, " at this opset");
  a.ceil_mode = ceil == 1;
  if (opt.pads_below_kernel && a.auto_pad == AutoPad::kNotSet) {
    for (size_t i = 0; i < n; ++i) {
      if (a.pads[i] >= a.kernel[i] || a.pads[i + n] >= a.kernel[i])
        return InvalidArgumentError(node.Describe(), ": pads ", a.pads, " must be smaller than kernel_shape ",
                                    a.kernel);
    }
  }
  return a;
}

StatusOr<int64_t> OutputLength(const Node& node, const SpatialAttrs& a, int i, int64_t in, int64_t* pad_begin,
                               int64_t* pad_end) {
  const int64_t k = a.kernel[i], s = a.strides[i], d = a.dilations[i];
  *pad_begin = *pad_end = -1;
  if (in < 0 || k < 0) return int64_t{-1};
  const int64_t dk = (k - 1) * d + 1;
  if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    const int64_t out = (in + s - 1) / s;
    SplitPads(a.auto_pad, std::max<int64_t>(0, (out - 1) * s + dk - in), pad_begin, pad_end);
    return out;
  }
  if (a.auto_pad == AutoPad::kValid) {
    *pad_begin = *pad_end = 0;
  } else {
    *pad_begin = a.pads[i];
    *pad_end = a.pads[i + a.rank];
  }
  const int64_t span = in + *pad_begin + *pad_end - dk;
  if (span < 0)
    return InvalidArgumentError(node.Describe(), ": spatial dimension ", i, " of length ", in, " with pads ",
                                *pad_begin, "+", *pad_end, " is smaller than the (dilated) kernel ", dk);
  int64_t out = span / s + 1;
  if (a.ceil_mode) {
    out = (span + s - 1) / s + 1;
    // A last window that would start inside the end padding is dropped (PyTorch and onnxruntime agree).
    if ((out - 1) * s >= in + *pad_begin) --out;
  }
  return out;
}

StatusOr<int64_t> TransposeOutputLength(const Node& node, const SpatialAttrs& a, int i, int64_t in,
                                        int64_t output_padding, int64_t output_shape, int64_t* pad_begin,
                                        int64_t* pad_end) {
  const int64_t k = a.kernel[i], s = a.strides[i], d = a.dilations[i];
  *pad_begin = *pad_end = -1;
  if (in < 0 || k < 0) return int64_t{-1};
  const int64_t full = s * (in - 1) + output_padding + (k - 1) * d + 1;
  int64_t out = -1;
  if (output_shape >= 0 || a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    out = output_shape >= 0 ? output_shape : in * s;
    const int64_t total = full - out;
    if (total >= 0) {
      SplitPads(a.auto_pad == AutoPad::kSameUpper ? AutoPad::kSameUpper : AutoPad::kSameLower, total, pad_begin,
                pad_end);
    } else {
      *pad_begin = 0;
      *pad_end = total;
    }
    return out;
  }
  if (a.auto_pad == AutoPad::kValid) {
    *pad_begin = *pad_end = 0;
  } else {
    *pad_begin = a.pads[i];
    *pad_end = a.pads[i + a.rank];
  }
  out = full - *pad_begin - *pad_end;
  if (out < 0)
    return InvalidArgumentError(node.Describe(), ": pads ", a.pads, " remove more than the full output length ", full,
                                " of spatial dimension ", i);
  return out;
}

StatusOr<Geometry3> ForwardGeometry(const Node& node, const SpatialAttrs& a, const Shape& x, int64_t channels_out,
                                    Shape* out_shape) {
  if (a.rank > 3)
    return UnimplementedError(node.Describe(), ": ", a.rank, " spatial dimensions are not supported (at most 3)");
  Geometry3 g;
  *out_shape = Shape{x[0], channels_out};
  const int off = 3 - a.rank;
  for (int i = 0; i < a.rank; ++i) {
    int64_t pb = 0, pe = 0;
    STRATA_ASSIGN_OR_RETURN(int64_t out, OutputLength(node, a, i, x[2 + i], &pb, &pe));
    g.in[off + i] = x[2 + i];
    g.out[off + i] = out;
    g.kernel[off + i] = a.kernel[i];
    g.stride[off + i] = a.strides[i];
    g.dilation[off + i] = a.dilations[i];
    g.pad_begin[off + i] = pb;
    g.pad_end[off + i] = pe;
    out_shape->PushBack(out);
  }
  STRATA_RETURN_IF_ERROR(CheckElementCount(node, *out_shape));
  return g;
}

StatusOr<PartialShape> InferForwardShape(const Node& node, const SpatialAttrs& a, const PartialShape& x,
                                         Dim channels_out) {
  std::vector<Dim> dims{x.dims[0], channels_out};
  for (int i = 0; i < a.rank; ++i) {
    int64_t pb = 0, pe = 0;
    const Dim& in = x.dims[2 + i];
    STRATA_ASSIGN_OR_RETURN(int64_t out, OutputLength(node, a, i, in.known() ? in.value : -1, &pb, &pe));
    dims.push_back(out >= 0 ? Dim(out) : Dim());
  }
  return PartialShape::Of(std::move(dims));
}

StatusOr<int> SpatialRankOf(const Node& node, const PartialShape& x, std::string_view what) {
  if (!x.rank_known) return -1;
  if (x.rank() < 3)
    return InvalidArgumentError(node.Describe(), ": ", what, " must have rank >= 3 (N, C, spatial...), got ",
                                x.ToString());
  return x.rank() - 2;
}

StatusOr<PartialShape> InferPoolShape(const InferContext& ctx, const SpatialOptions& opt) {
  const Node& node = ctx.node();
  PartialShape x = ctx.input_shape(0);
  STRATA_ASSIGN_OR_RETURN(int spatial, SpatialRankOf(node, x));
  if (spatial < 0) {
    spatial = static_cast<int>(node.GetInts("kernel_shape").size());
    if (spatial == 0) return PartialShape::Unknown();
    x = PartialShape::Of(std::vector<Dim>(spatial + 2));
  }
  STRATA_ASSIGN_OR_RETURN(SpatialAttrs a, ReadSpatialAttrs(node, spatial, opt));
  return InferForwardShape(node, a, x, x.dims[1]);
}

StatusOr<Geometry3> PoolGeometry(const Node& node, const Tensor& x, const SpatialOptions& opt, Shape* out_shape) {
  if (x.rank() < 3)
    return InvalidArgumentError(node.Describe(), ": X must have rank >= 3 (N, C, spatial...), got ",
                                x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(SpatialAttrs a, ReadSpatialAttrs(node, x.rank() - 2, opt));
  return ForwardGeometry(node, a, x.shape(), x.dim(1), out_shape);
}

}  // namespace strata::ops::nn
