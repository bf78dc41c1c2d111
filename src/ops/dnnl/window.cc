#include "ops/dnnl/window.h"

#include "ops/defs/nn/spatial.h"

namespace strata::ops::onednn {
namespace {

Status ReadCommon(const Node& node, int rank, const std::vector<int64_t>& kernel, Window* w) {
  w->kernel = Dims(kernel.begin(), kernel.end());
  const std::vector<int64_t> ks = node.GetInts("kernel_shape");
  if (!ks.empty() && ks != kernel) return Decline("kernel_shape ", ks, " differs from the weights' ", kernel);
  w->strides = node.GetInts("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dil = node.GetInts("dilations", std::vector<int64_t>(rank, 1));
  if (static_cast<int>(w->strides.size()) != rank || static_cast<int>(dil.size()) != rank)
    return Decline("strides/dilations do not have one value per spatial axis");
  for (int i = 0; i < rank; ++i) {
    if (w->strides[i] < 1 || dil[i] < 1) return Decline("strides and dilations must be >= 1");
    w->dilations.push_back(dil[i] - 1);
  }
  return Status::OK();
}

}  // namespace

StatusOr<Window> ForwardWindow(const Node& node, const Shape& x, const Shape& y, const std::vector<int64_t>& kernel,
                               bool* extra_pad_r) {
  const int rank = x.rank() - 2;
  if (rank < 1 || rank > 3 || y.rank() != x.rank() || static_cast<int>(kernel.size()) != rank)
    return Decline("oneDNN windows have 1 to 3 spatial axes; X is ", x.ToString());
  Window w;
  STRATA_RETURN_IF_ERROR(ReadCommon(node, rank, kernel, &w));
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = node.GetInts("pads", std::vector<int64_t>(2 * rank, 0));
  if (static_cast<int>(pads.size()) != 2 * rank) return Decline("pads do not have two values per spatial axis");
  if (extra_pad_r != nullptr) *extra_pad_r = false;
  for (int i = 0; i < rank; ++i) {
    const int64_t in = x[2 + i], out = y[2 + i], s = w.strides[i];
    const int64_t dk = (kernel[i] - 1) * (w.dilations[i] + 1) + 1;
    int64_t pl = pads[i], pr = pads[rank + i];
    if (auto_pad == "VALID") {
      pl = pr = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - in);
      pl = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pr = total - pl;
    } else if (auto_pad != "NOTSET") {
      return Decline("auto_pad ", auto_pad);
    }
    if (pl < 0 || pr < 0) return Decline("negative pads");
    // ceil_mode: the last window may start past the floor output; grow pad_r until oneDNN's floor formula agrees.
    const int64_t needed = (out - 1) * s + dk - in - pl;
    if (needed > pr) {
      pr = needed;
      if (extra_pad_r != nullptr) *extra_pad_r = true;
    }
    if ((in + pl + pr - dk) / s + 1 != out || in + pl + pr < dk)
      return Decline("oneDNN's output length differs on axis ", i, " (in ", in, ", out ", out, ")");
    w.pad_l.push_back(pl);
    w.pad_r.push_back(pr);
  }
  return w;
}

StatusOr<Window> TransposeWindow(const Node& node, const Shape& x, const Shape& y, const std::vector<int64_t>& kernel) {
  const int rank = x.rank() - 2;
  if (rank < 1 || rank > 3 || y.rank() != x.rank() || static_cast<int>(kernel.size()) != rank)
    return Decline("oneDNN deconvolutions have 1 to 3 spatial axes; X is ", x.ToString());
  // The pads exactly as the reference kernel resolves them (auto_pad, output_shape, output_padding).
  auto attrs = nn::ReadSpatialAttrs(node, rank, {.kernel_from_attr = false}, &kernel);
  if (!attrs.ok()) return Decline(attrs.status().message());
  std::vector<int64_t> opad = node.GetInts("output_padding", std::vector<int64_t>(rank, 0));
  std::vector<int64_t> oshape = node.GetInts("output_shape");
  if (static_cast<int>(oshape.size()) == rank + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (static_cast<int>(opad.size()) != rank || (!oshape.empty() && static_cast<int>(oshape.size()) != rank))
    return Decline("output_padding/output_shape do not match the spatial rank");
  Window w;
  STRATA_RETURN_IF_ERROR(ReadCommon(node, rank, kernel, &w));
  for (int i = 0; i < rank; ++i) {
    int64_t pb = 0, pe = 0;
    auto out = nn::TransposeOutputLength(node, *attrs, i, x[2 + i], opad[i], oshape.empty() ? -1 : oshape[i], &pb, &pe);
    if (!out.ok()) return Decline(out.status().message());
    const int64_t dk = (kernel[i] - 1) * (w.dilations[i] + 1) + 1;
    // oneDNN: out = (in - 1) * stride + dk - pad_l - pad_r; output_padding extends the end.
    const int64_t pl = pb, pr = pe - opad[i];
    if (*out != y[2 + i] || (x[2 + i] - 1) * w.strides[i] + dk - pl - pr != y[2 + i])
      return Decline("oneDNN's output length differs on axis ", i);
    w.pad_l.push_back(pl);
    w.pad_r.push_back(pr);
  }
  return w;
}

}  // namespace strata::ops::onednn
