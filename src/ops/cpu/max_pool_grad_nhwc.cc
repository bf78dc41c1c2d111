// strata.MaxPoolGrad on channels-last data (a strata.ChannelsLast node with nhwc_inputs [0, 1]: dY, X and dX are
// [N, H, W, C]), float32, 2-D windows: one pass that finds each window's arg max per channel (vectorised across the
// channels, which are contiguous) and routes dY there, with relu_input's check folded in. The result is the
// reference kernel's bit for bit: the first maximum of the window in row-major order, NaN never winning over a
// number (an all-NaN window picks its first element), gradients accumulated in window order where windows overlap.
// oneDNN's pooling backward needs a forward-training pass for its workspace, a NaN scan of X (its arg max rule
// differs) and, for relu_input, an extra eltwise pass; this kernel does the work in one read of X and dY.
#include <cstring>

#include "core/parallel.h"
#include "ops/compute_dtype.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/nn/spatial.h"

namespace strata::ops::cpu {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu MaxPoolGrad (channels-last): ", why); }

class MaxPoolGradNhwc final : public Kernel {
 public:
  MaxPoolGradNhwc(const nn::Geometry3& g, int64_t n, int64_t c, bool relu) : g_(g), n_(n), c_(c), relu_(relu) {
    // Windows that tile X exactly (no padding, no overlap, no gaps): every dX element is written once, no zeroing.
    tiles_ = true;
    for (int a = 1; a < 3; ++a)
      tiles_ &=
          g.kernel[a] == g.stride[a] && g.dilation[a] == 1 && g.pad_begin[a] == 0 && g.out[a] * g.stride[a] == g.in[a];
  }

  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const int64_t ih = g_.in[1], iw = g_.in[2], oh = g_.out[1], ow = g_.out[2];
    if (x.shape() != Shape{n_, ih, iw, c_} || dy.shape() != Shape{n_, oh, ow, c_})
      return ctx.Error("dY ", dy.shape().ToString(), " and X ", x.shape().ToString(),
                       " differ from the shapes the plan was made for");
    STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, DType::kFloat32, x.shape()));
    const float* px = x.data<float>();
    const float* pdy = dy.data<float>();
    float* pdx = dx->data<float>();
    const int64_t c = c_;
    if (!tiles_) std::memset(pdx, 0, sizeof(float) * static_cast<size_t>(x.num_elements()));
    // Rows of output pixels; with overlapping windows two rows may write the same dX row, so each image is one task.
    const int64_t tasks = tiles_ ? n_ * oh : n_;
    const int64_t work = tiles_ ? ow * g_.kernel_size() * c : oh * ow * g_.kernel_size() * c;
    ParallelFor(tasks, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work)), [&](int64_t begin, int64_t end) {
      std::vector<float> best(static_cast<size_t>(c));
      std::vector<int32_t> at(static_cast<size_t>(c));
      std::vector<int64_t> taps;
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = tiles_ ? t / oh : t;
        const int64_t row_lo = tiles_ ? t % oh : 0, row_hi = tiles_ ? row_lo + 1 : oh;
        for (int64_t r = row_lo; r < row_hi; ++r)
          for (int64_t q = 0; q < ow; ++q) Window(px, pdy, pdx, n, r, q, best.data(), at.data(), &taps);
      }
    });
    return Status::OK();
  }

 private:
  // One output pixel (n, r, q): per channel, the arg max over the window's valid taps, then dY routed there. Channels
  // go in blocks of kBlock whose running maxima and arg maxima stay in registers across the taps (with the whole
  // channel row at once they went through memory on every tap, most of this kernel's time in a Fashion CNN step).
  void Window(const float* px, const float* pdy, float* pdx, int64_t n, int64_t r, int64_t q, float* best, int32_t* at,
              std::vector<int64_t>* taps) const {
    const int64_t c = c_, ih = g_.in[1], iw = g_.in[2];
    const int64_t sh = r * g_.stride[1] - g_.pad_begin[1], sw = q * g_.stride[2] - g_.pad_begin[2];
    int64_t h_lo, h_hi, w_lo, w_hi;
    nn::ValidTaps(sh, g_.kernel[1], g_.dilation[1], ih, &h_lo, &h_hi);
    nn::ValidTaps(sw, g_.kernel[2], g_.dilation[2], iw, &w_lo, &w_hi);
    taps->clear();
    for (int64_t jh = h_lo; jh < h_hi; ++jh)
      for (int64_t jw = w_lo; jw < w_hi; ++jw)
        taps->push_back(((n * ih + sh + jh * g_.dilation[1]) * iw + sw + jw * g_.dilation[2]) * c);
    if (taps->empty()) return;
    const float* dyp = pdy + ((n * g_.out[1] + r) * g_.out[2] + q) * c;
    const int64_t* tp = taps->data();
    const auto nt = static_cast<int32_t>(taps->size());
    int64_t k0 = 0;
    for (; k0 + kBlock <= c; k0 += kBlock) Block16(px, pdx, dyp, tp, nt, k0);
    if (k0 < c) Block<0>(px, pdx, dyp, tp, nt, k0, c - k0, best, at);
  }

  static constexpr int64_t kBlock = 16;
  // GCC vector extensions: one AVX-512 register under -march=native, split into narrower ones elsewhere.
  using F16 = float __attribute__((vector_size(64)));
  using I16 = int32_t __attribute__((vector_size(64)));

  // kBlock channels of one window, the running maxima and arg maxima in vector registers; the rules of Block below.
  void Block16(const float* px, float* pdx, const float* dyp, const int64_t* tp, int32_t nt, int64_t k0) const {
    const I16 none = I16{} - 1;
    F16 best = F16{};
    I16 at = none;
    for (int32_t t = 0; t < nt; ++t) {
      F16 v;
      std::memcpy(&v, px + tp[t] + k0, sizeof v);
      const I16 take = at < 0 ? (v == v) : (v > best);
      best = take ? v : best;
      at = take ? I16{} + t : at;
    }
    at = at < 0 ? I16{} : at;
    if (relu_) at = best > 0.0f ? at : none;
    F16 dy;
    std::memcpy(&dy, dyp + k0, sizeof dy);
    for (int32_t t = 0; t < nt; ++t) {
      float* dxp = pdx + tp[t] + k0;
      F16 d;
      if (tiles_) {
        d = at == t ? dy + 0.0f : F16{};  // 0 + dY, as the reference
      } else {
        std::memcpy(&d, dxp, sizeof d);
        d = at == t ? d + dy : d;
      }
      std::memcpy(dxp, &d, sizeof d);
    }
  }

  // Channels [k0, k0 + width) of one window; Width is width when it is the block size (a loop the compiler keeps in
  // registers), 0 for the remainder (then `best` and `at` hold the running values).
  template <int64_t Width>
  void Block(const float* px, float* pdx, const float* dyp, const int64_t* tp, int32_t nt, int64_t k0, int64_t width,
             float* best_mem, int32_t* at_mem) const {
    const int64_t w = Width != 0 ? Width : width;
    float best_reg[kBlock];
    int32_t at_reg[kBlock];
    float* best = Width != 0 ? best_reg : best_mem;
    int32_t* at = Width != 0 ? at_reg : at_mem;
#pragma omp simd
    for (int64_t k = 0; k < w; ++k) best[k] = 0.0f, at[k] = -1;
    for (int32_t t = 0; t < nt; ++t) {
      const float* xp = px + tp[t] + k0;
#pragma omp simd
      for (int64_t k = 0; k < w; ++k) {
        const float v = xp[k];
        const bool take = at[k] < 0 ? v == v : v > best[k];
        best[k] = take ? v : best[k];
        at[k] = take ? t : at[k];
      }
    }
    // The tap each channel's gradient goes to, or -1 for none. All-NaN windows kept at = -1: the reference picks the
    // window's first element (tap 0). relu_input: the chosen X must be positive, i.e. best > 0 (an all-NaN window's
    // best stayed 0, and NaN > 0 is false there too).
    const bool relu = relu_;
#pragma omp simd
    for (int64_t k = 0; k < w; ++k) {
      const int32_t a = at[k] < 0 ? 0 : at[k];
      at[k] = (!relu || best[k] > 0.0f) ? a : -1;
    }
    const float* dy = dyp + k0;
    for (int32_t t = 0; t < nt; ++t) {
      float* __restrict dxp = pdx + tp[t] + k0;
      if (tiles_) {
#pragma omp simd
        for (int64_t k = 0; k < w; ++k) dxp[k] = at[k] == t ? dy[k] + 0.0f : 0.0f;  // 0 + dY, as the reference
      } else {
#pragma omp simd
        for (int64_t k = 0; k < w; ++k) dxp[k] = at[k] == t ? dxp[k] + dy[k] : dxp[k];
      }
    }
  }

  nn::Geometry3 g_;
  int64_t n_, c_;
  bool relu_;
  bool tiles_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPoolGrad(const KernelInit& init) {
  const Node& node = init.node;
  if (node.GetString("op_domain", "") != "strata" || node.GetString("op", "") != "MaxPoolGrad")
    return Decline("not a channels-last MaxPoolGrad");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0, 1} || node.GetInt("nhwc_output", 1) != 1)
    return Decline("dY, X and dX must all be channels-last");
  if (init.inputs.size() != 2 || init.inputs[0].dtype != DType::kFloat32 || init.inputs[1].dtype != DType::kFloat32)
    return Decline("float32 dY and X only");
  if (!init.inputs[1].shape.IsFullyKnown() || !init.inputs[0].shape.IsFullyKnown())
    return Decline("shapes not known at plan time");
  const Shape x = init.inputs[1].shape.ToShape();
  if (x.rank() != 4 || x.NumElements() == 0) return Decline("X must be a non-empty 4-D tensor");
  if (x[3] > (int64_t{1} << 20)) return Decline("too many channels");
  Shape out;
  auto g = MaxPoolGeometry(node, Shape{x[0], x[3], x[1], x[2]}, &out);
  if (!g.ok()) return Decline(g.status().message());
  if (init.inputs[0].shape.ToShape() != Shape{out[0], out[2], out[3], out[1]})
    return Decline("dY does not have the pool output's shape");
  return std::unique_ptr<Kernel>(std::make_unique<MaxPoolGradNhwc>(*g, x[0], x[3], node.GetInt("relu_input", 0) != 0));
}

StatusOr<nn::Geometry3> MaxPoolGeometry(const Node& node, const Shape& x, Shape* out) {
  constexpr nn::SpatialOptions kOptions{
      .kernel_from_attr = true, .allow_dilations = true, .allow_ceil_mode = true, .pads_below_kernel = true};
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs attrs, nn::ReadSpatialAttrs(node, 2, kOptions));
  return nn::ForwardGeometry(node, attrs, x, x[1], out);
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLast(const KernelInit& init) {
  const std::string op = init.node.GetString("op", "");
  if (init.node.GetString("op_domain", "") == "strata" && op == "MaxPoolGrad")
    return CreateChannelsLastMaxPoolGrad(init);
  if (init.node.GetString("op_domain", "") == "strata" && op == "ConvBackwardFilter") {
    auto dw = CreateChannelsLastDepthwiseConvBackwardFilter(init);
    if (dw.ok() || dw.status().code() != StatusCode::kUnimplemented) return dw;
    auto first = CreateChannelsLastFirstLayerConvBackwardFilter(init);
    if (first.ok() || first.status().code() != StatusCode::kUnimplemented) return first;
    return UnimplementedError(dw.status().message(), "; ", first.status().message());
  }
  if (init.node.GetString("op_domain", "") == "strata" && op == "ConvMaxPool")
    return CreateChannelsLastConvMaxPool(init);
  if (init.node.GetString("op_domain", "").empty() && op == "MaxPool") return CreateChannelsLastMaxPool(init);
  if (init.node.GetString("op_domain", "").empty() && op == "GlobalAveragePool")
    return CreateChannelsLastGlobalAveragePool(init);
  if (init.node.GetString("op_domain", "").empty() && op == "BatchNormalization")
    return CreateChannelsLastBatchNormTraining(init);
  if (init.node.GetString("op_domain", "") == "strata" && op == "BatchNormalizationGrad")
    return CreateChannelsLastBatchNormTrainingGrad(init);
  if ((init.node.GetString("op_domain", "").empty() && op == "Conv") ||
      (init.node.GetString("op_domain", "") == "strata" && op == "FusedConv")) {
    // A mixed_bfloat16 dtype policy (ops/compute_dtype.h) asks for oneDNN's bfloat16 kernel: these are float32.
    if (init.node.GetString(kComputeDtypeAttr, "") == kComputeBFloat16)
      return UnimplementedError("cpu ChannelsLast Conv: float32 only, and the node's dtype policy is mixed_bfloat16");
    auto dw = CreateChannelsLastDepthwiseConv(init);
    if (dw.ok() || dw.status().code() != StatusCode::kUnimplemented) return dw;
    auto pw = CreateChannelsLastPointwiseConv(init);
    if (pw.ok() || pw.status().code() != StatusCode::kUnimplemented) return pw;
    return UnimplementedError(dw.status().message(), "; ", pw.status().message());
  }
  return UnimplementedError("cpu ChannelsLast: no hand-written kernel for ", op);
}

}  // namespace strata::ops::cpu
