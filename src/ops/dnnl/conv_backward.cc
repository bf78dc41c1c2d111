// oneDNN convolution backward for strata.ConvBackwardData (dY, W, x_shape) -> dX and strata.ConvBackwardFilter
// (dY, X, w_shape) -> dW[, dB], float32, 1-3 spatial axes, groups, strides, dilations, explicit or automatic pads.
// The shape operand must be known at plan time (it is Shape(X) / Shape(W) of a planned graph). Activations and
// gradients go through the layouts oneDNN prefers (reordered in and out each run); the forward primitive descriptor
// built from the same geometry is the hint the backward ones require.
// Channels-last (strata.ChannelsLast wrapping them, `nhwc`): dY, X and dX are [N, H, W, C]; W, dW and the shape
// operands stay as ONNX defines them. The nhwc memory goes straight into the primitives when oneDNN has an optimised
// implementation for it, else it is reordered like the plain layout.
// Winograd (winograd.h: oneDNN 2.6's jit_wino_4x3 backward data and weights) under the forward kernel's rule, unless
// SessionOptions::conv_algorithm is direct; the kernel is then named "dnnl-winograd".
// bfloat16 (UseBf16: a mixed_bfloat16 dtype policy's node attribute, or SessionOptions::precision bf16, on a CPU with
// native bfloat16 kernels): backward data reads dY and W in bfloat16 and writes float32 dX; backward weights reads
// dY and X in bfloat16 and writes float32 dW and dB; both accumulate in float32. The kernel is then named
// "dnnl-bf16" (no Winograd); a convolution oneDNN has no optimised bfloat16 implementation for runs in float32, and so
// does a backward weights whose bfloat16 kernel measured slower (Bf16BackwardWeightsPays).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/grad_kernels.h"
#include "ops/dnnl/window.h"
#include "ops/dnnl/winograd.h"
#include "ops/op_util.h"

namespace strata::ops::onednn {
namespace {

// ONNX Conv weights [M, C/g, k...] as oneDNN sees them: [g, M/g, C/g, k...] (or without g when group is 1), plain.
Md WeightsMd(const Shape& w, int64_t group) {
  Dims dims;
  if (group > 1)
    dims = {group, w[0] / group, w[1]};
  else
    dims = {w[0], w[1]};
  for (int i = 2; i < w.rank(); ++i) dims.push_back(w[i]);
  return PlainMd(dims);
}

// The shapes of a backward conv node: x, w, y (= dY) as oneDNN sees them (NCHW dims), with the shape operand read
// from its constant value.
struct ConvShapes {
  Shape x, w, y;
  bool nhwc = false;
  int64_t group = 1;
  Window win;
  int64_t flops() const { return 2 * y.NumElements() * w.NumElements() / w[0]; }  // per dY element: one dot product
};

StatusOr<ConvShapes> Shapes(const KernelInit& init, bool data, bool nhwc) {
  const Node& node = init.node;
  ConvShapes s;
  s.nhwc = nhwc;
  STRATA_ASSIGN_OR_RETURN(s.y, KnownShape(init.inputs[0], "dY"));
  STRATA_ASSIGN_OR_RETURN(Shape other, KnownShape(init.inputs[1], data ? "W" : "X"));
  if (nhwc) {
    if (s.y.rank() != 4 || other.rank() != 4) return Decline("channels-last needs 4-D");
    s.y = NhwcToNchw(s.y);
    if (!data) other = NhwcToNchw(other);
  }
  if (init.inputs.size() < 3 || !init.inputs[2].has_value())
    return Decline("the shape operand is not known at plan time");
  auto dims = ReadInts(*init.inputs[2].value, "shape");
  if (!dims.ok()) return Decline(dims.status().message());
  (data ? s.x : s.w) = Shape(*dims);
  (data ? s.w : s.x) = other;
  if (s.x.rank() < 3 || s.x.rank() > 5 || s.w.rank() != s.x.rank() || s.y.rank() != s.x.rank())
    return Decline("X, W and dY must have rank 3 to 5");
  s.group = node.GetInt("group", 1);
  if (s.group < 1 || s.x[1] % s.group != 0 || s.w[0] % s.group != 0 || s.x[1] != s.w[1] * s.group || s.y[1] != s.w[0] ||
      s.y[0] != s.x[0])
    return Decline("inconsistent shapes X ", s.x.ToString(), ", W ", s.w.ToString(), ", dY ", s.y.ToString());
  if (s.x.NumElements() == 0 || s.w.NumElements() == 0 || s.y.NumElements() == 0) return Decline("empty tensors");
  STRATA_ASSIGN_OR_RETURN(s.win, ForwardWindow(node, s.x, s.y, std::vector<int64_t>(s.w.begin() + 2, s.w.end())));
  return s;
}

// `x`, `w` and `y` give the forward hint's layouts and types (bfloat16 kernels: a bfloat16 forward with float32 bias).
dnnl::convolution_forward::primitive_desc HintPd(const ConvShapes& s, const Md& x, const Md& w, const Md& y, bool bias,
                                                 Alg alg) {
  const Md bias_md = bias ? AnyMd(Dims{s.w[0]}) : Md();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, alg, x, w, bias_md, y,
                                    s.win.strides, s.win.dilations, s.win.pad_l, s.win.pad_r);
  return dnnl::convolution_forward::primitive_desc(d, Attr(), CpuEngine());
}

// Channels-last 1x1 convolutions (stride 1 or not) go to oneDNN on their nhwc memory directly: its `jit_1x1` backward
// data and backward weights take nhwc, and the blocked layouts cost a reorder of dY and X (or dX) each way per layer.
// Measured on whole training steps (CPU ms per step, 224x224, batch 32, 2 threads, loaded machine, the same binary):
// EfficientNetV2B0 2687-2713 blocked, 2537-2593 with the 1x1 backward data and weights direct, 2580-2600 with the
// backward data only; ResNet50V2 7230 / 6947 / 7070. Larger kernels stay blocked: oneDNN 2.6's nhwc `jit:avx512_core`
// backward took about twice as long as the blocked one on EfficientNetV2B0's 3x3 layers (batch 4, reorders
// excluded), and the Fashion CNN measured the same (ic 1: 0.81 vs 0.57 ms, ic 32 -> 64: 3.7 vs 3.1 ms per step,
// reorders included).
bool NhwcDirect(const ConvShapes& s) {
  for (int i = 2; i < s.w.rank(); ++i)
    if (s.w[i] != 1) return false;
  return true;
}

// bfloat16 in a channels-last region: dY and X converted f32 nhwc -> bf16 nhwc (a plain conversion, no blocking) and
// dX written f32 nhwc, straight into oneDNN 2.6's nhwc-capable `jit_bf16` / `jit_bf16_1x1` kernels, instead of its
// blocked layouts plus reorders each way: ResNet-50 training at 224, batch 8, 2 threads, mixed_bfloat16, measured
// 1948 -> 1879 ms of CPU per step (loaded machine). Falls back on the blocked layouts where oneDNN has no optimised
// nhwc implementation.
constexpr bool kBf16NhwcDirect = true;

// The tensor shape of an activation with NCHW dims `nchw`: [N, H, W, C] when channels-last.
Shape TensorShape(const Shape& nchw, bool nhwc) { return nhwc ? Shape{nchw[0], nchw[2], nchw[3], nchw[1]} : nchw; }

// The layouts are left to oneDNN (its blocked ones), and plain or channels-last memory is reordered in and out,
// except where `nhwc_direct` (channels-last 1x1 layers, NhwcDirect) and an optimised implementation takes the nhwc
// memory as it is.
template <typename Make, typename MakeAny>
auto Choose(bool nhwc_direct, Make direct, MakeAny any) -> decltype(any()) {
  if (nhwc_direct) {
    try {
      auto pd = direct();
      if (!IsRefImpl(pd)) return pd;
    } catch (const dnnl::error&) {
    }
  }
  return any();
}

// The primitive of a backward convolution: Winograd where TryWinograd takes the layer (the kernel is then named so),
// else direct, channels-last straight in when an optimised implementation takes it. `make(x, y, alg)` builds the
// primitive descriptor for the given activation descriptors.
// With `bf16` there is no Winograd and `make` gets format-any descriptors (or, channels-last, the nhwc ones: see
// kBf16NhwcDirect) whose types it sets itself.
template <typename Make>
auto WinogradOrDirect(const KernelInit& init, const ConvShapes& s, bool nhwc, const Md& x_user, const Md& y_user,
                      PrimitiveKernel& k, bool bf16, Make make) -> decltype(make(x_user, y_user, Alg::convolution_direct)) {
  decltype(make(x_user, y_user, Alg::convolution_direct)) pd;
  if (bf16) {
    k.set_name(kBf16KernelName);
    return Choose(
        kBf16NhwcDirect && nhwc, [&] { return make(x_user, y_user, Alg::convolution_direct); },
        [&] { return make(AnyMd(ToDims(s.x)), AnyMd(ToDims(s.y)), Alg::convolution_direct); });
  }
  const bool winograd = TryWinograd(init, s.x, s.w, s.win, s.group, /*backward=*/true, [&] {
    pd = make(AnyMd(ToDims(s.x)), AnyMd(ToDims(s.y)), Alg::convolution_winograd);
    return pd;
  });
  if (winograd) {
    k.set_name(kWinogradKernelName);
    return pd;
  }
  return Choose(
      nhwc && NhwcDirect(s), [&] { return make(x_user, y_user, Alg::convolution_direct); },
      [&] { return make(AnyMd(ToDims(s.x)), AnyMd(ToDims(s.y)), Alg::convolution_direct); });
}

// RequireFloat32 but for the shape input, except that dY (and with `x_may_be_bf16`, backward weights' X; with
// `dx_may_be_bf16`, backward data's dX) may be a bfloat16 activation or gradient (Plan::StoreBf16): whether one is.
StatusOr<bool> CheckTypes(const KernelInit& init, bool x_may_be_bf16 = false, bool dx_may_be_bf16 = false) {
  std::vector<ValueType> ins(init.inputs.begin(), init.inputs.end());
  std::vector<ValueType> outs(init.outputs.begin(), init.outputs.end());
  bool any = !ins.empty() && TakeBf16AsFloat32(ins[0]);
  if (x_may_be_bf16 && ins.size() > 1) any = TakeBf16AsFloat32(ins[1]) || any;
  if (dx_may_be_bf16 && !outs.empty()) any = TakeBf16AsFloat32(outs[0]) || any;
  STRATA_RETURN_IF_ERROR(RequireFloat32(KernelInit{init.node, ins, outs}, {2}));
  return any;
}

// Builds with `build(bf16)`: in bfloat16 when UseBf16 says so, falling back on float32 when oneDNN declines that.
// `bf16_dy`: dY is a bfloat16 activation (Plan::StoreBf16), which only the bfloat16 build takes.
template <typename F>
StatusOr<std::unique_ptr<Kernel>> WithBf16(const KernelInit& init, bool bf16_dy, F&& build) {
  if (UseBf16(init)) {
    auto k = build(true);
    if (k.ok() || k.status().code() != StatusCode::kUnimplemented || bf16_dy) return k;
    LogStaysFloat32(init, k.status());
  }
  if (bf16_dy) return Decline("a bfloat16 dY needs the bfloat16 kernel");
  return build(false);
}

constexpr auto kF32 = dnnl::memory::data_type::f32;
constexpr auto kBf16 = dnnl::memory::data_type::bf16;

// `m` in `t` (`m` itself when `retype` is false): a format-any descriptor of its dims, or for a plain (strided,
// unblocked) `m` the same strides in `t`.
Md Typed(const Md& m, dnnl::memory::data_type t, bool retype) {
  if (!retype) return m;
  if (m.data.format_kind == dnnl_blocked && m.data.format_desc.blocking.inner_nblks == 0) {
    const auto& b = m.data.format_desc.blocking;
    return Md(m.dims(), t, dnnl::memory::dims(b.strides, b.strides + m.data.ndims));
  }
  return AnyMd(m.dims(), t);
}

// oneDNN 2.6's bfloat16 backward weights for kernels larger than 1x1 (`jit_bf16:avx512_core_bf16`, no brgemm
// version) measured slower than float32 (direct or Winograd) where the output is at most 14x14: ResNet-50 at 224,
// batch 8, 2 threads, bf16 / fp32 time 3.4x (256 channels, 14x14), 1.5x (256, stride 2 to 14x14), 1.6x (512,
// stride 2 to 7x7), 1.8x (512, 7x7), against 0.63x (128, 28x28) and 0.3-0.5x for every 1x1 layer. Those stay float32.
bool Bf16BackwardWeightsPays(const ConvShapes& s) {
  int64_t kernel = 1, out = 1;
  for (int i = 2; i < s.w.rank(); ++i) kernel *= s.w[i];
  for (int i = 2; i < s.y.rank(); ++i) out *= s.y[i];
  return kernel == 1 || out > 14 * 14;
}

// Depthwise: one input and one output channel per group. oneDNN 2.6's backward weights for those falls back on its
// gemm implementation where no jit one applies (the 5x5 layers of MobileNetV3Small at 32x32: 1x1 and 2x2 outputs),
// an im2col of mostly padding per image that took half of oneDNN's time in that model's training step; the direct
// sums of src/ops/cpu/depthwise_conv_backward_filter.cc take those nodes instead.
bool IsDepthwise(const ConvShapes& s) { return s.group > 1 && s.group == s.x[1] && s.w[0] == s.group && s.w[1] == 1; }

bool IsGemmImpl(const dnnl::primitive_desc_base& pd) {
  const char* info = pd.impl_info_str();
  return info != nullptr && std::string_view(info).find("gemm") != std::string_view::npos;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardDataFor(const KernelInit& init, bool nhwc) {
  // dY may be a bfloat16 activation, and dX a bfloat16 gradient (mixed_bfloat16: where every reader of dX takes it
  // so, e.g. ReluGrad), which only the bfloat16 build takes.
  STRATA_ASSIGN_OR_RETURN(const bool bf16_dy, CheckTypes(init, false, /*dx_may_be_bf16=*/true));
  const auto dx_type = init.outputs.empty() ? kF32 : FloatType(init.outputs[0].dtype);
  STRATA_ASSIGN_OR_RETURN(ConvShapes s, Shapes(init, /*data=*/true, nhwc));
  return WithBf16(init, bf16_dy, [&](bool bf16) {
    return BuildKernel(
      init, "ConvBackwardData",
      [&](PrimitiveKernel& k) -> Status {
        const Md w_user = WeightsMd(s.w, s.group);
        const Md w_any = AnyMd(w_user.dims(), bf16 ? kBf16 : kF32);
        const Md x_user = ActivationMd(s.x, nhwc, dx_type);
        const Md y_user = ActivationMd(s.y, nhwc, FloatType(init.inputs[0].dtype));
        auto make = [&](const Md& x, const Md& y, Alg alg) {
          // bfloat16: dY and W in bfloat16, dX float32 or, where the plan stores it so, bfloat16 (rounded from the
          // float32 accumulator); the hint: a bfloat16 forward.
          const Md dx = Typed(x, dx_type, bf16), dy = Typed(y, kBf16, bf16);
          const auto hint = HintPd(s, Typed(x, kBf16, bf16), w_any, dy, false, alg);
          dnnl::convolution_backward_data::desc d(alg, dx, w_any, dy, s.win.strides, s.win.dilations, s.win.pad_l,
                                                  s.win.pad_r);
          return dnnl::convolution_backward_data::primitive_desc(d, Attr(), CpuEngine(), hint);
        };
        const auto pd = WinogradOrDirect(init, s, nhwc, x_user, y_user, k, bf16, make);
        if (IsRefImpl(pd)) return Decline("oneDNN has only its reference implementation for this convolution");
        const int dy = k.Input(0, pd.diff_dst_desc(), &y_user);
        const int w = k.Input(1, pd.weights_desc(), &w_user);
        const int dx = k.Output(0, TensorShape(s.x, nhwc), pd.diff_src_desc(), &x_user);
        k.Add(dnnl::convolution_backward_data(pd), pd,
              {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}});
        return Status::OK();
      },
      s.flops());
  });
}

StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardFilterFor(const KernelInit& init, bool nhwc) {
  STRATA_RETURN_IF_ERROR(CheckTypes(init, /*x_may_be_bf16=*/true).status());
  // A bfloat16 dY needs the bfloat16 kernel; a bfloat16 X is also read by the float32 one, through the reorder into
  // its blocked layout that it runs on every X anyway (the backward weights that stay float32:
  // Bf16BackwardWeightsPays).
  const bool bf16_dy = init.inputs[0].dtype == DType::kBFloat16;
  const bool bf16_x = init.inputs[1].dtype == DType::kBFloat16;
  STRATA_ASSIGN_OR_RETURN(ConvShapes s, Shapes(init, /*data=*/false, nhwc));
  const bool bias = init.node.has_output(1);
  return WithBf16(init, bf16_dy, [&](bool bf16) -> StatusOr<std::unique_ptr<Kernel>> {
    if (bf16 && !Bf16BackwardWeightsPays(s))
      return Decline("oneDNN's bfloat16 backward weights for this shape (kernel > 1x1, output <= 14x14) measured "
                     "slower than float32");
    return BuildKernel(
      init, "ConvBackwardFilter",
      [&](PrimitiveKernel& k) -> Status {
        const Md w_user = WeightsMd(s.w, s.group);
        const Md w_any = AnyMd(w_user.dims());  // dW: float32 in both precisions
        const Md x_user = ActivationMd(s.x, nhwc, FloatType(init.inputs[1].dtype));
        const Md y_user = ActivationMd(s.y, nhwc, FloatType(init.inputs[0].dtype));
        const Md bias_md = bias ? PlainMd(Dims{s.w[0]}) : Md();
        auto make = [&](const Md& x, const Md& y, Alg alg) {
          // bfloat16: X and dY in bfloat16, dW and dB float32 (the hint: a bfloat16 forward).
          const Md xs = Typed(x, kBf16, bf16), dy = Typed(y, kBf16, bf16);
          const auto hint = HintPd(s, xs, Typed(w_any, kBf16, bf16), dy, bias, alg);
          dnnl::convolution_backward_weights::desc d(alg, xs, w_any, bias_md, dy, s.win.strides, s.win.dilations,
                                                     s.win.pad_l, s.win.pad_r);
          return dnnl::convolution_backward_weights::primitive_desc(d, Attr(), CpuEngine(), hint);
        };
        const auto pd = WinogradOrDirect(init, s, nhwc, x_user, y_user, k, bf16, make);
        if (IsRefImpl(pd)) return Decline("oneDNN has only its reference implementation for this convolution");
        if (!nhwc && IsDepthwise(s) && IsGemmImpl(pd))
          return Decline("oneDNN takes its gemm implementation for this depthwise convolution; the cpu kernel "
                         "(depthwise_conv_backward_filter.cc) runs it directly");
        std::vector<std::pair<int, int>> args;
        args.emplace_back(DNNL_ARG_DIFF_DST, k.Input(0, pd.diff_dst_desc(), &y_user));
        args.emplace_back(DNNL_ARG_SRC, k.Input(1, pd.src_desc(), &x_user));
        // float32: X may be a bfloat16 activation where it is reordered anyway (ops/bf16_output.h).
        if (!bf16 && (bf16_x || pd.src_desc() != ActivationMd(s.x, nhwc))) k.set_bf16_variant(1u << 1, false);
        // Both outputs come out of the one primitive: bind the bias (plain) first, then the weights, whose reorder (if
        // the primitive prefers a blocked layout) follows the primitive.
        if (bias) args.emplace_back(DNNL_ARG_DIFF_BIAS, k.Output(1, Shape{s.w[0]}, pd.diff_bias_desc()));
        args.emplace_back(DNNL_ARG_DIFF_WEIGHTS, k.Output(0, s.w, pd.diff_weights_desc(), &w_user));
        k.Add(dnnl::convolution_backward_weights(pd), pd, std::move(args));
        return Status::OK();
      },
      s.flops());
  });
}

StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardData(const KernelInit& init) {
  return CreateConvBackwardDataFor(init, /*nhwc=*/false);
}

StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardFilter(const KernelInit& init) {
  return CreateConvBackwardFilterFor(init, /*nhwc=*/false);
}

}  // namespace strata::ops::onednn
