// NonMaxSuppression (opset 10, 11): per batch and class, greedily selects boxes in decreasing score order (ties: lower
// box index first), skipping a box whose IoU with an already selected box of that class exceeds iou_threshold, up to
// max_output_boxes_per_class boxes (0 or omitted: none). Boxes scoring <= score_threshold (when given) are never
// candidates. center_point_box = 0: boxes are [y1, x1, y2, x2] with any pair of diagonal corners; 1: [x_center,
// y_center, width, height]. Output: selected_indices [num_selected, 3] int64 rows (batch, class, box), batch-major,
// then class, then selection order. IoU follows ONNX Runtime: boxes with no area or no overlap never suppress.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

struct Box {
  float x_min, y_min, x_max, y_max;
};

Status NmsInfer(InferContext& ctx) {
  const PartialShape& b = ctx.input_shape(0);
  const PartialShape& s = ctx.input_shape(1);
  if (b.rank_known && (b.rank() != 3 || (b.dims[2].known() && b.dims[2].value != 4)))
    return ctx.Error("boxes must have shape [num_batches, spatial_dimension, 4], got ", b.ToString());
  if (s.rank_known && s.rank() != 3)
    return ctx.Error("scores must have shape [num_batches, num_classes, spatial_dimension], got ", s.ToString());
  const int64_t cpb = ctx.node().GetInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return ctx.Error("center_point_box must be 0 or 1, got ", cpb);
  ctx.SetOutput(0, DType::kInt64, PartialShape::Of({Dim(), Dim(3)}));
  return Status::OK();
}

std::vector<float> ReadFloatValues(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  (void)DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(ToCompute(t.data<T>()[i]));
    return Status::OK();
  });
  return v;
}

Box ToBox(const float* b, bool center) {
  if (center) {
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

bool Suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (ix_max <= ix_min || iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

Status NmsCompute(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (!IsFloatingPoint(boxes.dtype()) || !IsFloatingPoint(scores.dtype()))
    return ctx.Error("boxes and scores must be float tensors, got ", boxes.TypeString(), " and ", scores.TypeString());
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
      scores.dim(2) != boxes.dim(1))
    return ctx.Error("boxes must be [num_batches, spatial_dimension, 4] and scores [num_batches, num_classes, ",
                     "spatial_dimension], got ", boxes.shape().ToString(), " and ", scores.shape().ToString());
  int64_t max_out = 0;
  float iou_threshold = 0, score_threshold = 0;
  if (ctx.has_input(2)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(ctx.input(2), "max_output_boxes_per_class"));
    if (v.size() != 1) return ctx.Error("max_output_boxes_per_class must have one value, got ", v.size());
    max_out = std::max<int64_t>(0, v[0]);
  }
  if (ctx.has_input(3)) {
    STRATA_ASSIGN_OR_RETURN(double v, ReadScalar(ctx.input(3), "iou_threshold"));
    if (!(v >= 0 && v <= 1)) return ctx.Error("iou_threshold must be in [0, 1], got ", v);
    iou_threshold = static_cast<float>(v);
  }
  const bool has_score_threshold = ctx.has_input(4);
  if (has_score_threshold) {
    STRATA_ASSIGN_OR_RETURN(double v, ReadScalar(ctx.input(4), "score_threshold"));
    score_threshold = static_cast<float>(v);
  }
  const int64_t cpb = ctx.node().GetInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return ctx.Error("center_point_box must be 0 or 1, got ", cpb);
  const int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
  const std::vector<float> bv = ReadFloatValues(boxes), sv = ReadFloatValues(scores);
  std::vector<int64_t> out;
  std::vector<int64_t> order;
  std::vector<Box> selected;
  for (int64_t b = 0; b < batches && max_out > 0; ++b) {
    std::vector<Box> bx(n);
    for (int64_t i = 0; i < n; ++i) bx[i] = ToBox(bv.data() + (b * n + i) * 4, cpb == 1);
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = sv.data() + (b * classes + c) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
      // NaN scores sort last (a strict weak order needs them somewhere).
      auto key = [&](int64_t i) { return std::isnan(s[i]) ? -std::numeric_limits<float>::infinity() : s[i]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
      selected.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(selected.size()) >= max_out) break;
        const bool keep = std::none_of(selected.begin(), selected.end(),
                                       [&](const Box& k) { return Suppresses(bx[i], k, iou_threshold); });
        if (!keep) continue;
        selected.push_back(bx[i]);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt64, Shape{static_cast<int64_t>(out.size() / 3), 3}));
  std::copy(out.begin(), out.end(), y->data<int64_t>());
  return Status::OK();
}

}  // namespace

void RegisterNonMaxSuppression(OpRegistry* r) {
  OpSchema s;
  s.name = "NonMaxSuppression";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 5;
  s.infer = NmsInfer;
  s.reference = NmsCompute;
  s.no_grad_reason = "index output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
