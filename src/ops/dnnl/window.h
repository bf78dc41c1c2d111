// Window geometry for the oneDNN convolution, deconvolution and pooling kernels. The output shape is known at plan
// time (inferred by the reference op's shape inference), so the kernels only need the begin pads and derive the end
// pads oneDNN wants from it; they decline when oneDNN's formula cannot reproduce that output exactly.
#pragma once

#include <vector>

#include "ops/dnnl/dnnl_common.h"

namespace strata::ops::onednn {

struct Window {
  Dims kernel, strides, dilations;  // dilations in oneDNN's convention (0 = none)
  Dims pad_l, pad_r;
};

// Conv and pooling: X [N, C, in...], Y [N, M, out...]; `kernel` is the spatial kernel size. ceil_mode outputs are
// reached by extending pad_r. `extra_pad_r` (may be null) reports whether pad_r had to grow beyond the ONNX pads.
StatusOr<Window> ForwardWindow(const Node& node, const Shape& x, const Shape& y, const std::vector<int64_t>& kernel,
                               bool* extra_pad_r = nullptr);

// ConvTranspose: pads resolved as the reference kernel does (auto_pad, output_shape, output_padding); oneDNN's pad_r
// is pads_end - output_padding.
StatusOr<Window> TransposeWindow(const Node& node, const Shape& x, const Shape& y, const std::vector<int64_t>& kernel);

}  // namespace strata::ops::onednn
