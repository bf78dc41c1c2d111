// Window geometry shared by Conv, ConvTranspose and the pooling ops (NCHW layout, 1-3 spatial dimensions in the
// kernels): reading and validating kernel_shape / strides / dilations / pads / auto_pad / ceil_mode, and computing
// output lengths and the pads actually applied, as the ONNX spec defines them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops::nn {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct SpatialAttrs {
  int rank = 0;                    // number of spatial dimensions
  std::vector<int64_t> kernel;     // -1 where unknown (Conv at inference time with W's dims unknown)
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> dilations;  // default 1
  std::vector<int64_t> pads;       // [begin_0 .. begin_{r-1}, end_0 .. end_{r-1}], default 0
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
};

struct SpatialOptions {
  bool kernel_from_attr = true;  // pools: kernel_shape is required; Conv: it comes from W (attribute optional)
  bool allow_dilations = true;
  bool allow_ceil_mode = false;
  bool pads_below_kernel = false;  // pools: each pad must be smaller than the (dilated) kernel
};

// Reads the attributes for `rank` spatial dimensions. `w_kernel` (Conv/ConvTranspose) holds W's spatial dims (-1 when
// unknown); a kernel_shape attribute must agree with it.
StatusOr<SpatialAttrs> ReadSpatialAttrs(const Node& node, int rank, const SpatialOptions& opt,
                                        const std::vector<int64_t>* w_kernel = nullptr);

// Conv/pool output length along spatial axis `i` for input length `in`, and the pads used (auto_pad resolved).
// Returns -1 (and pads -1) when `in` or the kernel is unknown (< 0).
StatusOr<int64_t> OutputLength(const Node& node, const SpatialAttrs& a, int i, int64_t in, int64_t* pad_begin,
                               int64_t* pad_end);

// ConvTranspose output length along axis `i`, given output_padding[i] and output_shape[i] (-1 when not given).
// pad_end may come out negative: output_shape asks for more than the full result, the excess is zero (plus bias).
StatusOr<int64_t> TransposeOutputLength(const Node& node, const SpatialAttrs& a, int i, int64_t in,
                                        int64_t output_padding, int64_t output_shape, int64_t* pad_begin,
                                        int64_t* pad_end);

// The geometry of one concrete call, padded to 3 spatial dimensions with leading length-1 axes so that the kernels
// have one loop nest.
struct Geometry3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<int64_t, 3> pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Builds the geometry of a forward window op for input X (N, C, spatial...) and fills `out_shape` with
// [N, channels_out, spatial_out...]. Rank above 3 spatial dims gives Unimplemented.
StatusOr<Geometry3> ForwardGeometry(const Node& node, const SpatialAttrs& a, const Shape& x, int64_t channels_out,
                                    Shape* out_shape);

// Output PartialShape [N, channels_out, spatial...] of a forward window op at inference time.
StatusOr<PartialShape> InferForwardShape(const Node& node, const SpatialAttrs& a, const PartialShape& x,
                                         Dim channels_out);

// Reads the rank of X's spatial part at inference: rank - 2; error when rank < 3 (or unknown: returns -1).
StatusOr<int> SpatialRankOf(const Node& node, const PartialShape& x, std::string_view what = "X");

// The kernel taps j in [*lo, *hi) of a window starting at `start` (stride already applied, pad subtracted) whose
// positions start + j * dilation fall inside [0, in).
inline void ValidTaps(int64_t start, int64_t k, int64_t dilation, int64_t in, int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  *hi = in - 1 - start < 0 ? 0 : std::min<int64_t>(k, (in - 1 - start) / dilation + 1);
  if (*hi < *lo) *hi = *lo;
}

// Pools (MaxPool, AveragePool, LpPool): output shape [N, C, spatial...] from X and the attributes. X's rank comes from
// kernel_shape when X's rank is unknown.
StatusOr<PartialShape> InferPoolShape(const InferContext& ctx, const SpatialOptions& opt);

// Pools at run time: validates X (rank >= 3), reads the attributes and returns the geometry and output shape.
StatusOr<Geometry3> PoolGeometry(const Node& node, const Tensor& x, const SpatialOptions& opt, Shape* out_shape);

}  // namespace strata::ops::nn
