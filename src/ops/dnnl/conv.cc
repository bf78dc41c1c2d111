// oneDNN convolution and deconvolution for Conv, ConvTranspose and strata.FusedConv (float32, 1-3 spatial axes).
//
// Groups (depthwise included), strides, dilations, explicit or automatic pads. Source and destination layouts are left
// to oneDNN (blocked layouts are much faster than plain NCHW); the input is reordered in and the output out on each
// run, while constant weights are reordered once at plan time. FusedConv: the residual Z is copied into the
// destination and added by the sum post-op, then the activation is an eltwise post-op.
// Winograd (winograd.h) for the 3x3 stride-1 convolutions where it pays, unless SessionOptions::conv_algorithm is
// direct; the kernel is then named "dnnl-winograd".
// SessionOptions::precision bf16 (on a CPU with native bfloat16 kernels): X and W are reordered into bfloat16 (W once
// at plan time when constant), the primitive accumulates in float32 and writes float32 Y (bias, residual and
// activation in float32); the kernel is then named "dnnl-bf16". A convolution oneDNN has no optimised bfloat16
// implementation for runs in float32. The bfloat16 kernel also reads X and Z and writes Y in bfloat16 where the plan
// stores those activations so (Plan::StoreBf16: between kernels that compute in bfloat16); the residual sum and the
// activation are then applied to the float32 accumulator before Y is rounded.
// Declines: other dtypes, empty tensors, unknown shapes, and whatever oneDNN has no implementation for (e.g. a
// ConvTranspose whose output_shape asks for more than the full result: a negative end pad).
#include "ops/defs/fused/activation.h"
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/dnnl/window.h"
#include "ops/dnnl/winograd.h"

namespace strata::ops::onednn {
namespace {

struct ConvSpec {
  bool transpose = false;
  bool nhwc = false;        // strata.ChannelsLast: X, Z and Y are [N, H, W, C]
  bool bf16 = false;        // X and W in bfloat16 (bias in float32; Y and Z as the plan stores them)
  int residual_input = -1;  // FusedConv's Z
  Activation act;
};

// Weights as oneDNN sees them: dims [g,] O/g, I/g, k... and the strides of ONNX's layout (Conv: [M, C/g, k...];
// ConvTranspose: [C, M/g, k...], i.e. input channels outermost).
Md WeightsMd(const Shape& w, int64_t group, bool transpose, int64_t in_channels) {
  const int sp = w.rank() - 2;
  int64_t ksize = 1;
  for (int i = 0; i < sp; ++i) ksize *= w[2 + i];
  int64_t oc_g, ic_g;
  Dims strides;
  if (!transpose) {
    oc_g = w[0] / group;
    ic_g = w[1];
    // [g, oc_g, ic_g, k...] row-major.
    strides = {oc_g * ic_g * ksize, ic_g * ksize, ksize};
  } else {
    ic_g = in_channels / group;
    oc_g = w[1];
    // ONNX [C, M/g, k...] = [g, ic_g, oc_g, k...] row-major; oneDNN dims order is [g, oc_g, ic_g, k...].
    strides = {ic_g * oc_g * ksize, ksize, oc_g * ksize};
  }
  Dims dims = {group, oc_g, ic_g};
  for (int i = 0; i < sp; ++i) dims.push_back(w[2 + i]);
  int64_t st = 1;
  Dims kstrides(sp);
  for (int i = sp - 1; i >= 0; --i) {
    kstrides[i] = st;
    st *= w[2 + i];
  }
  strides.insert(strides.end(), kstrides.begin(), kstrides.end());
  if (group == 1) {  // oneDNN wants no group dimension then
    dims.erase(dims.begin());
    strides.erase(strides.begin());
  }
  return Md(dims, dnnl::memory::data_type::f32, strides);
}

// The implementation to prefer over oneDNN's first choice for a channels-last direct convolution, or "" for
// oneDNN's own. 1x1 convolutions with a stride: oneDNN 2.6 lists brgconv_1x1 first, whose strided nhwc kernel ran
// ResNet-50's 512 -> 1024 downsample at 28x28 (stride 2) 25-30% slower than jit_1x1 (which first gathers the strided
// pixels into its scratchpad), and the other downsample layers no faster; in bfloat16 (`bf16`) the same holds for
// jit_bf16_1x1 against brgconv_1x1 (docs/engine.md, "Implementation choices").
std::string_view PreferredChannelsLastImpl(const Shape& w, const Window& win, int64_t group, bool bf16) {
  if (w.rank() != 4 || w[2] != 1 || w[3] != 1 || group != 1) return {};
  for (size_t i = 0; i < win.strides.size(); ++i)
    if (win.strides[i] > 1) return bf16 ? "jit_bf16_1x1" : "jit_1x1";
  return {};
}

Status BuildConv(PrimitiveKernel& k, const KernelInit& init, const ConvSpec& spec) {
  const Node& node = init.node;
  const Shape& w = k.input_shape(1);
  STRATA_ASSIGN_OR_RETURN(Shape y_tensor, KnownShape(init.outputs[0], "output"));
  if (spec.nhwc && (k.input_shape(0).rank() != 4 || y_tensor.rank() != 4)) return Decline("channels-last needs 4-D");
  // oneDNN sees NCHW dims; the tensors' memory is plain NCHW, or NHWC for channels-last nodes.
  const Shape x = spec.nhwc ? NhwcToNchw(k.input_shape(0)) : k.input_shape(0);
  const Shape y = spec.nhwc ? NhwcToNchw(y_tensor) : y_tensor;
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) return Decline("X and W must have rank 3 to 5");
  const int64_t group = node.GetInt("group", 1);
  if (group < 1 || x[1] % group != 0) return Decline("bad group ", group);
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  Window win;
  if (spec.transpose) {
    STRATA_ASSIGN_OR_RETURN(win, TransposeWindow(node, x, y, kernel));
  } else {
    STRATA_ASSIGN_OR_RETURN(win, ForwardWindow(node, x, y, kernel));
  }
  const Md w_user = WeightsMd(w, group, spec.transpose, x[1]);
  const bool has_bias = node.has_input(2);
  const bool has_z = spec.residual_input >= 0 && node.has_input(spec.residual_input);
  if (has_z && k.input_shape(spec.residual_input) != y_tensor) return Decline("Z does not have the output's shape");

  dnnl::post_ops po;
  if (has_z) po.append_sum(1.0f);
  if (!spec.act.op.empty()) {
    STRATA_ASSIGN_OR_RETURN(EltwiseSpec e, EltwiseFor(spec.act.op, spec.act.alpha, spec.act.beta));
    AppendEltwise(&po, e);
    // A NaN reaching the activation (from a NaN or infinity in any input) must come out as the reference's.
    if (e.drops_nan) STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0, 1, 2, 3}, /*nonfinite=*/true));
  }
  // X, Z and Y are float32, or bfloat16 where the plan stores them so (bfloat16 activations: Plan::StoreBf16).
  const auto x_type = FloatType(init.inputs[0].dtype), y_type = FloatType(init.outputs[0].dtype);
  const Md src_user = ActivationMd(x, spec.nhwc, x_type), dst_user = ActivationMd(y, spec.nhwc, y_type);
  // The layout is left to oneDNN for runtime weights too (training feeds them every step): reordering them each run
  // costs far less than the plain-layout GEMM convolution oneDNN falls back on otherwise.
  const auto f32 = dnnl::memory::data_type::f32;
  const auto in_type = spec.bf16 ? dnnl::memory::data_type::bf16 : f32;
  const Md w_want = AnyMd(w_user.dims(), in_type);
  const Md bias_md = has_bias ? PlainMd(k.input_shape(2)) : Md();
  auto prop = dnnl::prop_kind::forward_inference;
  dnnl::primitive prim;
  dnnl::primitive_desc pd;
  // `prefer`: an implementation to pick over oneDNN's first choice when it takes the problem (PreferImpl).
  auto make = [&](const Md& src, const Md& dst, Alg alg = Alg::convolution_direct, std::string_view prefer = {}) {
    if (!spec.transpose) {
      dnnl::convolution_forward::desc d(prop, alg, src, w_want, bias_md, dst, win.strides, win.dilations, win.pad_l,
                                        win.pad_r);
      const auto cpd =
          PreferImpl([&] { return dnnl::convolution_forward::primitive_desc(d, Attr(po), CpuEngine()); }, prefer);
      prim = dnnl::convolution_forward(cpd);
      pd = cpd;
    } else {
      dnnl::deconvolution_forward::desc d(prop, Alg::deconvolution_direct, src, w_want, bias_md, dst, win.strides,
                                          win.dilations, win.pad_l, win.pad_r);
      dnnl::deconvolution_forward::primitive_desc dpd(d, Attr(po), CpuEngine());
      prim = dnnl::deconvolution_forward(dpd);
      pd = dpd;
    }
  };
  // Winograd where the rule in winograd.h allows it and oneDNN has it: its blocked layouts are reordered in and out
  // (the rule's figures count those reorders for channels-last regions). Weights that are not constant (training
  // feeds them every step) are described for forward training: oneDNN's inference Winograd wants them in its
  // Winograd-domain layout, made by a reorder that is not optimised (512 -> 512 channels: about 200 ms per run, seven
  // times the convolution), while its training Winograd reads blocked weights (a reorder of about 1 ms) and
  // transforms them inside the primitive (WinogradProp, winograd.h).
  const bool winograd = !spec.transpose && !spec.bf16 && TryWinograd(init, x, w, win, group, /*backward=*/false, [&] {
    prop = WinogradProp(k.constant_input(1) != nullptr);
    make(AnyMd(ToDims(x)), AnyMd(ToDims(y)), Alg::convolution_winograd, PreferredWinogradImpl(x, w, y));
    return pd;
  });
  if (!winograd) prop = dnnl::prop_kind::forward_inference;
  // Channels-last activations go straight in when an optimised implementation takes them; otherwise (and for NCHW,
  // which oneDNN only runs through im2col) the layouts are left to oneDNN and reordered in and out.
  bool direct = false;
  if (spec.nhwc && !winograd) {
    try {
      make(Md(ToDims(x), in_type, Tag::nhwc), dst_user, Alg::convolution_direct,
           PreferredChannelsLastImpl(w, win, group, spec.bf16));
      direct = !IsRefImpl(pd);
    } catch (const dnnl::error&) {
      direct = false;
    }
  }
  if (!direct && !winograd) make(AnyMd(ToDims(x), in_type), AnyMd(ToDims(y), y_type));
  if (winograd) k.set_name(kWinogradKernelName);
  if (spec.bf16) k.set_name(kBf16KernelName);
  if (IsRefImpl(pd)) return Decline("oneDNN offers only its reference implementation (", pd.impl_info_str(), ")");
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, k.Input(0, pd.src_desc(0), &src_user));
  args.emplace_back(DNNL_ARG_WEIGHTS, k.Input(1, pd.weights_desc(0), &w_user));
  if (has_bias) args.emplace_back(DNNL_ARG_BIAS, k.Input(2, pd.weights_desc(1)));
  const int dst = k.Output(0, y_tensor, pd.dst_desc(0), &dst_user);
  if (has_z) {
    const Md z_user = ActivationMd(y, spec.nhwc, FloatType(init.inputs[spec.residual_input].dtype));
    k.CopyInputTo(spec.residual_input, dst, &z_user);
  }
  args.emplace_back(DNNL_ARG_DST, dst);
  k.Add(prim, pd, std::move(args));
  return Status::OK();
}

// 2 * (output elements of the forward convolution) * (C/group * kernel size): for ConvTranspose the roles of X and Y
// swap.
int64_t ConvFlops(const KernelInit& init, bool transpose) {
  const Shape x = init.inputs[0].shape.ToShape(), w = init.inputs[1].shape.ToShape(),
              y = init.outputs[0].shape.ToShape();  // element counts do not depend on the layout
  const Shape& big = transpose ? x : y;
  return 2 * big.NumElements() * w.Product(1, w.rank());
}

StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init, ConvSpec spec, std::string_view what) {
  // X, Z and Y may be bfloat16 activations (Plan::StoreBf16), which only the bfloat16 build takes.
  bool bf16_activations = false;
  if (spec.residual_input >= 0) {
    STRATA_RETURN_IF_ERROR(RequireFloat32OrBf16(init, {0, spec.residual_input}, true, &bf16_activations));
  } else {
    STRATA_RETURN_IF_ERROR(RequireFloat32OrBf16(init, {0}, true, &bf16_activations));
  }
  auto build = [&] {
    return BuildKernel(
        init, what, [&](PrimitiveKernel& k) { return BuildConv(k, init, spec); }, ConvFlops(init, spec.transpose));
  };
  spec.bf16 = UseBf16(init);
  if (bf16_activations && !spec.bf16) return Decline("bfloat16 activations need the bfloat16 kernel");
  if (spec.bf16) {
    auto k = build();
    if (k.ok() || k.status().code() != StatusCode::kUnimplemented || bf16_activations) return k;
    LogStaysFloat32(init, k.status());
    spec.bf16 = false;
  }
  return build();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateConv(const KernelInit& init) { return Create(init, ConvSpec{}, "Conv"); }

StatusOr<std::unique_ptr<Kernel>> CreateConvTranspose(const KernelInit& init) {
  return Create(init, ConvSpec{.transpose = true}, "ConvTranspose");
}

StatusOr<std::unique_ptr<Kernel>> CreateFusedConv(const KernelInit& init) {
  auto act = ReadFusedActivation(init.node);
  if (!act.ok()) return Decline(act.status().message());
  ConvSpec spec{.transpose = init.node.GetInt("transpose", 0) != 0, .residual_input = 3, .act = *act};
  return Create(init, spec, "FusedConv");
}

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConv(const KernelInit& init, bool fused) {
  ConvSpec spec{.nhwc = true};
  if (fused) {
    auto act = ReadFusedActivation(init.node);
    if (!act.ok()) return Decline(act.status().message());
    if (init.node.GetInt("transpose", 0) != 0) return Decline("channels-last ConvTranspose");
    spec.residual_input = 3;
    spec.act = *act;
  }
  return Create(init, spec, "ChannelsLast Conv");
}

}  // namespace strata::ops::onednn
