// RoiAlign (opset 10, 16): for each region of interest rois[r] = (x1, y1, x2, y2) on image batch_indices[r] of X
// (N, C, H, W), an output_height x output_width grid of bins, each the average (mode "avg") or maximum ("max") of
// sampling_ratio^2 bilinear samples (sampling_ratio 0: ceil(roi size / output size) per axis) at regularly spaced
// points. coordinate_transformation_mode (opset 16) "half_pixel" shifts coordinates by -0.5 pixel; opset 10 and
// "output_half_pixel" do not, and then regions are at least 1 x 1 pixel. Samples more than one pixel outside the image
// count as 0. The "max" mode takes, per sample, the largest of the four weighted bilinear taps, as ONNX Runtime does.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

struct RoiAttrs {
  bool max_mode = false;
  int64_t out_h = 1, out_w = 1, sampling = 0;
  float scale = 1;
  bool half_pixel = false;
};

StatusOr<RoiAttrs> ReadRoiAttrs(const Node& node) {
  RoiAttrs a;
  const std::string mode = node.GetString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return InvalidArgumentError(node.Describe(), ": mode must be avg or max, got '", mode, "'");
  a.max_mode = mode == "max";
  a.out_h = node.GetInt("output_height", 1);
  a.out_w = node.GetInt("output_width", 1);
  a.sampling = node.GetInt("sampling_ratio", 0);
  a.scale = node.GetFloat("spatial_scale", 1.0f);
  if (a.out_h < 1 || a.out_w < 1 || a.out_h > (int64_t{1} << 20) || a.out_w > (int64_t{1} << 20))
    return InvalidArgumentError(node.Describe(), ": output_height and output_width must be in [1, 2^20], got ", a.out_h,
                                " and ", a.out_w);
  if (a.sampling < 0 || a.sampling > 1024)
    return InvalidArgumentError(node.Describe(), ": sampling_ratio must be in [0, 1024], got ", a.sampling);
  const std::string ctm = node.GetString("coordinate_transformation_mode", node.opset >= 16 ? "half_pixel"
                                                                                              : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return InvalidArgumentError(node.Describe(), ": coordinate_transformation_mode must be half_pixel or ",
                                "output_half_pixel, got '", ctm, "'");
  a.half_pixel = ctm == "half_pixel";
  return a;
}

Status RoiAlignInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(RoiAttrs a, ReadRoiAttrs(ctx.node()));
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& rois = ctx.input_shape(1);
  if (x.rank_known && x.rank() != 4) return ctx.Error("X must have shape [N, C, H, W], got ", x.ToString());
  if (rois.rank_known && (rois.rank() != 2 || (rois.dims[1].known() && rois.dims[1].value != 4)))
    return ctx.Error("rois must have shape [num_rois, 4], got ", rois.ToString());
  if (ctx.input_dtype(2) != DType::kUndefined && ctx.input_dtype(2) != DType::kInt64)
    return ctx.Error("batch_indices must be int64, got ", DTypeName(ctx.input_dtype(2)));
  ctx.SetOutput(0, ctx.input_dtype(0),
                PartialShape::Of({rois.rank_known ? rois.dims[0] : Dim(), x.rank_known ? x.dims[1] : Dim(),
                                  Dim(a.out_h), Dim(a.out_w)}));
  return Status::OK();
}

// One bilinear sample at (y, x) of an H x W plane: four positions and weights (all zero outside the image).
template <typename C>
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  C w[4] = {0, 0, 0, 0};
};

template <typename C>
Sample<C> MakeSample(C y, C x, int64_t h, int64_t w) {
  Sample<C> s;
  if (y < -1 || y > h || x < -1 || x > w) return s;
  y = std::max<C>(y, 0);
  x = std::max<C>(x, 0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<C>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<C>(x0);
  } else {
    x1 = x0 + 1;
  }
  const C ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0;
  s.pos[1] = y0 * w + x1;
  s.pos[2] = y1 * w + x0;
  s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// Returns false when the region is not finite or needs an absurd number of samples per bin (over 2^20).
template <typename C>
bool RoiAlignOne(const RoiAttrs& a, const C* roi, const C* x, int64_t channels, int64_t h, int64_t w, C* y) {
  const C off = a.half_pixel ? C(0.5) : C(0);
  const C sx = roi[0] * a.scale - off, sy = roi[1] * a.scale - off;
  C rw = roi[2] * a.scale - off - sx, rh = roi[3] * a.scale - off - sy;
  if (!a.half_pixel) {
    rw = std::max<C>(rw, 1);
    rh = std::max<C>(rh, 1);
  }
  const C bin_h = rh / a.out_h, bin_w = rw / a.out_w;
  if (!std::isfinite(sx) || !std::isfinite(sy) || !std::isfinite(rh) || !std::isfinite(rw)) return false;
  if (a.sampling == 0 && std::ceil(rh / a.out_h) * std::ceil(rw / a.out_w) > C(1 << 20)) return false;
  const int64_t gh = a.sampling > 0 ? a.sampling : static_cast<int64_t>(std::ceil(rh / a.out_h));
  const int64_t gw = a.sampling > 0 ? a.sampling : static_cast<int64_t>(std::ceil(rw / a.out_w));
  const C count = static_cast<C>(std::max<int64_t>(gh * gw, 1));
  std::vector<Sample<C>> samples;
  for (int64_t ph = 0; ph < a.out_h; ++ph)
    for (int64_t pw = 0; pw < a.out_w; ++pw) {
      samples.clear();
      for (int64_t iy = 0; iy < gh; ++iy) {
        const C yy = sy + ph * bin_h + (iy + C(0.5)) * bin_h / static_cast<C>(gh);
        for (int64_t ix = 0; ix < gw; ++ix)
          samples.push_back(MakeSample<C>(yy, sx + pw * bin_w + (ix + C(0.5)) * bin_w / static_cast<C>(gw), h, w));
      }
      for (int64_t c = 0; c < channels; ++c) {
        const C* plane = x + c * h * w;
        C acc = 0;
        bool first = true;
        for (const Sample<C>& s : samples) {
          if (a.max_mode) {
            const C v = std::max(std::max(s.w[0] * plane[s.pos[0]], s.w[1] * plane[s.pos[1]]),
                                 std::max(s.w[2] * plane[s.pos[2]], s.w[3] * plane[s.pos[3]]));
            acc = first ? v : std::max(acc, v);
            first = false;
          } else {
            acc += s.w[0] * plane[s.pos[0]] + s.w[1] * plane[s.pos[1]] + s.w[2] * plane[s.pos[2]] +
                   s.w[3] * plane[s.pos[3]];
          }
        }
        y[(c * a.out_h + ph) * a.out_w + pw] = a.max_mode ? acc : acc / count;
      }
    }
  return true;
}

Status RoiAlignCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(RoiAttrs a, ReadRoiAttrs(ctx.node()));
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype())
    return ctx.Error("X must be [N, C, H, W] and rois [num_rois, 4] of X's element type, got ", x.TypeString(),
                     " and ", rois.TypeString());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadInts(ctx.input(2), "batch_indices"));
  const int64_t num = rois.dim(0), n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (static_cast<int64_t>(idx.size()) != num)
    return ctx.Error("batch_indices must have one value per roi (", num, "), got ", idx.size());
  for (int64_t i : idx)
    if (i < 0 || i >= n) return ctx.Error("batch index ", i, " is out of range [0, ", n, ")");
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape{num, c, a.out_h, a.out_w}));
  if (y->num_elements() == 0) return Status::OK();
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<C> xs(static_cast<size_t>(x.num_elements())), ys(static_cast<size_t>(c * a.out_h * a.out_w));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<C>(ToCompute(x.data<T>()[i]));
    for (int64_t r = 0; r < num; ++r) {
      C roi[4];
      for (int k = 0; k < 4; ++k) roi[k] = static_cast<C>(ToCompute(rois.data<T>()[r * 4 + k]));
      if (!RoiAlignOne<C>(a, roi, xs.data() + idx[r] * c * h * w, c, h, w, ys.data()))
        return ctx.Error("roi ", r, " (", roi[0], ", ", roi[1], ", ", roi[2], ", ", roi[3],
                         ") is not finite or too large for sampling_ratio 0");
      T* out = y->data<T>() + r * ys.size();
      for (size_t i = 0; i < ys.size(); ++i) out[i] = FromCompute<T>(ys[i]);
    }
    return Status::OK();
  });
}

}  // namespace

void RegisterRoiAlign(OpRegistry* r) {
  OpSchema s;
  s.name = "RoiAlign";
  s.since_version = 10;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = RoiAlignInfer;
  s.reference = RoiAlignCompute;
  s.no_grad_reason = "gradient not implemented (bilinear sampling of regions)";
  r->Add(std::move(s));
}

}  // namespace strata::ops
