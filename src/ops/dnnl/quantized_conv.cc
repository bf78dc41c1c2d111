// oneDNN int8 convolution for strata.QuantizedConv (ops/defs/fused/quantized_conv.cc): uint8/int8 source, int8
// weights (reordered once at plan time into the layout the primitive prefers, with oneDNN's compensation for
// signed sources), int32 accumulation, and one float32 multiplier per output channel (oneDNN's output scales):
//   Y = act(x_scale * w_scale[m] / y_scale * (acc + B[m] / (x_scale * w_scale[m])) + z_scale / y_scale * (Z - z_zp))
//       + y_zp
// rounded to nearest even and saturated into Y's type (or written as float32, without y_scale/y_zp). The source
// zero point is a oneDNN zero point, the residual Z a sum post-op (copied into the destination first: a quantized Z
// of Y's type as is, or converted to float32 for a float32 Y), the activation an eltwise post-op. On a CPU with
// AVX512-VNNI (or AVX-VNNI) oneDNN's brgemm/jit int8 kernels multiply with VPDPBUSD. Without VNNI the kernel declines
// (oneDNN's older int8 kernels saturate, see ops/int8_support.h; the fusion pass does not fire there either), and
// where oneDNN offers only its reference implementation too: the reference QDQ kernel runs then.
// Declines: non-constant weights, scales or zero points, a nonzero weight zero point, a float32 Z with a quantized Y,
// unknown shapes, and convolutions with other than 2 spatial axes.
#include <cmath>

#include "ops/defs/fused/activation.h"
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/dnnl/window.h"

namespace strata::ops::onednn {
namespace {

using Dt = dnnl::memory::data_type;

// The kernel name (Plan::Describe, STRATA_VERBOSE=dispatch/profile) of the int8 convolution.
constexpr const char* kInt8KernelName = "dnnl-int8";

StatusOr<Dt> QuantType(DType t, std::string_view what) {
  if (t == DType::kUInt8) return Dt::u8;
  if (t == DType::kInt8) return Dt::s8;
  if (t == DType::kFloat32) return Dt::f32;
  return Decline(what, " is ", DTypeName(t));
}

// The values of constant input i as floats (scales) or int32 (zero points); absent input: `def`.
StatusOr<std::vector<float>> ConstFloats(const PrimitiveKernel& k, const KernelInit& init, int i, float def) {
  if (!init.node.has_input(i)) return std::vector<float>{def};
  const Tensor* t = k.constant_input(i);
  if (t == nullptr) return Decline("input ", i, " is not a constant");
  if (t->dtype() != DType::kFloat32) return Decline("input ", i, " is ", DTypeName(t->dtype()));
  return t->ToVector<float>();
}

StatusOr<int32_t> ConstZeroPoint(const PrimitiveKernel& k, const KernelInit& init, int i) {
  if (!init.node.has_input(i)) return 0;
  const Tensor* t = k.constant_input(i);
  if (t == nullptr || t->num_elements() != 1) return Decline("zero point input ", i, " is not a constant scalar");
  if (t->dtype() == DType::kUInt8) return static_cast<int32_t>(t->data<uint8_t>()[0]);
  if (t->dtype() == DType::kInt8) return static_cast<int32_t>(t->data<int8_t>()[0]);
  return Decline("zero point input ", i, " is ", DTypeName(t->dtype()));
}

Status BuildQuantizedConv(PrimitiveKernel& k, const KernelInit& init, const Activation& act, bool nhwc) {
  const Node& node = init.node;
  const Shape& w = k.input_shape(3);
  STRATA_ASSIGN_OR_RETURN(const Shape y_tensor, KnownShape(init.outputs[0], "output"));
  if (k.input_shape(0).rank() != 4 || w.rank() != 4 || y_tensor.rank() != 4) return Decline("only 2-D convolutions");
  // oneDNN sees NCHW dims; the memory is plain NCHW, or NHWC for channels-last nodes.
  const Shape x = nhwc ? NhwcToNchw(k.input_shape(0)) : k.input_shape(0);
  const Shape y = nhwc ? NhwcToNchw(y_tensor) : y_tensor;
  const Tag layout = nhwc ? Tag::nhwc : Tag::nchw;
  if (k.constant_input(3) == nullptr) return Decline("runtime int8 weights");
  STRATA_ASSIGN_OR_RETURN(Dt x_dt, QuantType(init.inputs[0].dtype, "x"));
  STRATA_ASSIGN_OR_RETURN(Dt y_dt, QuantType(init.outputs[0].dtype, "y"));
  if (x_dt == Dt::f32 || init.inputs[3].dtype != DType::kInt8) return Decline("x must be 8-bit and w int8");
  const int64_t group = node.GetInt("group", 1), m = w[0];
  if (group < 1 || x[1] % group != 0 || m % group != 0) return Decline("bad group ", group);
  STRATA_ASSIGN_OR_RETURN(auto xs, ConstFloats(k, init, 1, 1.0f));
  STRATA_ASSIGN_OR_RETURN(int32_t x_zp, ConstZeroPoint(k, init, 2));
  STRATA_ASSIGN_OR_RETURN(auto ws, ConstFloats(k, init, 4, 1.0f));
  const bool quant_out = node.has_input(9);
  STRATA_ASSIGN_OR_RETURN(auto ys, ConstFloats(k, init, 9, 1.0f));
  STRATA_ASSIGN_OR_RETURN(int32_t y_zp, ConstZeroPoint(k, init, 10));
  if (xs.size() != 1 || ys.size() != 1 || (ws.size() != 1 && static_cast<int64_t>(ws.size()) != m))
    return Decline("x/y scales must be per tensor and w_scale per tensor or per output channel");
  std::vector<float> mult(ws.size());
  for (size_t c = 0; c < ws.size(); ++c) mult[c] = xs[0] * ws[c] / (quant_out ? ys[0] : 1.0f);

  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  STRATA_ASSIGN_OR_RETURN(Window win, ForwardWindow(node, x, y, kernel));
  Dims w_dims = {m, w[1], w[2], w[3]};
  if (group > 1) w_dims = {group, m / group, w[1], w[2], w[3]};
  const Md w_user = PlainMd(w_dims, Dt::s8);
  const Md src_user(ToDims(x), x_dt, layout), dst_user(ToDims(y), y_dt, layout);

  dnnl::post_ops po;
  const bool has_z = node.has_input(6);
  Dt z_dt = Dt::f32;
  if (has_z) {
    STRATA_ASSIGN_OR_RETURN(z_dt, QuantType(init.inputs[6].dtype, "Z"));
    if (k.input_shape(6) != y_tensor) return Decline("Z does not have the output's shape");
    if (z_dt == Dt::f32 && quant_out) return Decline("a float32 Z with a quantized Y");
    if (z_dt != Dt::f32 && quant_out && z_dt != y_dt) return Decline("Z and Y of different 8-bit types");
    STRATA_ASSIGN_OR_RETURN(auto zs, ConstFloats(k, init, 7, 1.0f));
    STRATA_ASSIGN_OR_RETURN(int32_t z_zp, ConstZeroPoint(k, init, 8));
    if (zs.size() != 1) return Decline("z_scale must be per tensor");
    const float sum_scale = z_dt == Dt::f32 ? 1.0f : zs[0] / (quant_out ? ys[0] : 1.0f);
    // With a quantized Y, the destination already holds y_zp-shifted values only after the primitive: the sum reads
    // Z as copied, so its zero point is Z's.
    if (z_zp != 0)
      po.append_sum(sum_scale, z_zp);
    else
      po.append_sum(sum_scale);
  }
  if (!act.op.empty()) {
    STRATA_ASSIGN_OR_RETURN(EltwiseSpec e, EltwiseFor(act.op, act.alpha, act.beta));
    AppendEltwise(&po, e);
  }
  dnnl::primitive_attr attr = Attr(po);
  attr.set_output_scales(mult.size() == 1 ? 0 : 1 << 1, mult);  // per output channel: dst dim 1
  if (x_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (quant_out && y_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});

  // Bias in accumulator units (float32: oneDNN adds it to the int32 sum before the output scale).
  std::vector<float> bias;
  if (node.has_input(5)) {
    const Tensor* b = k.constant_input(5);
    if (b == nullptr || b->dtype() != DType::kFloat32 || b->num_elements() != m)
      return Decline("B must be constant [M]");
    bias.resize(m);
    for (int64_t c = 0; c < m; ++c) bias[c] = b->data<float>()[c] / (xs[0] * ws[ws.size() == 1 ? 0 : c]);
  }
  const Md bias_md = bias.empty() ? Md() : PlainMd(Dims{m});
  const auto prop = dnnl::prop_kind::forward_inference;
  const Dims src_dims = ToDims(x), dst_dims = ToDims(y);
  dnnl::convolution_forward::desc d(prop, Alg::convolution_direct, Md(src_dims, x_dt, Tag::any),
                                    Md(w_dims, Dt::s8, Tag::any), bias_md, Md(dst_dims, y_dt, Tag::any), win.strides,
                                    win.dilations, win.pad_l, win.pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attr, CpuEngine());
  if (IsRefImpl(pd)) return Decline("oneDNN offers only its reference int8 implementation (", pd.impl_info_str(), ")");
  k.set_name(kInt8KernelName);
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, k.Input(0, pd.src_desc(), &src_user));
  args.emplace_back(DNNL_ARG_WEIGHTS, k.Input(3, pd.weights_desc(), &w_user));
  if (!bias.empty()) args.emplace_back(DNNL_ARG_BIAS, k.Constant(bias_md, bias.data(), pd.bias_desc()));
  const Md zp_md = PlainMd(Dims{1}, Dt::s32);
  if (x_zp != 0) args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, k.Constant(zp_md, &x_zp, zp_md));
  if (quant_out && y_zp != 0)
    args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, k.Constant(zp_md, &y_zp, zp_md));
  const int dst = k.Output(0, y_tensor, pd.dst_desc(), &dst_user);
  if (has_z) {
    const Md z_user(dst_dims, z_dt, layout);
    k.CopyInputTo(6, dst, &z_user);
  }
  args.emplace_back(DNNL_ARG_DST, dst);
  k.Add(dnnl::convolution_forward(pd), pd, std::move(args));
  return Status::OK();
}

int64_t QuantizedConvFlops(const KernelInit& init) {
  const Shape w = init.inputs[3].shape.ToShape(), y = init.outputs[0].shape.ToShape();
  return 2 * y.NumElements() * w.Product(1, w.rank());
}

}  // namespace

bool HasVnni() {
  static const bool vnni = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto avx512_vnni = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_vnni);
    const auto avx2_vnni = static_cast<unsigned>(dnnl::cpu_isa::avx2_vnni);
    return (isa & avx512_vnni) == avx512_vnni || (isa & avx2_vnni) == avx2_vnni;
  }();
  return vnni;
}

StatusOr<std::unique_ptr<Kernel>> CreateQuantizedConvFor(const KernelInit& init, bool nhwc) {
  for (int i : {0, 3})
    if (!init.inputs[i].shape.IsFullyKnown() || init.inputs[i].shape.ToShape().NumElements() == 0)
      return Decline("input ", i, " has an unknown or empty shape");
  if (!init.outputs[0].shape.IsFullyKnown()) return Decline("unknown output shape");
  auto act = ReadFusedActivation(init.node);
  if (!act.ok()) return Decline(act.status().message());
  if (!HasVnni()) return Decline("no VNNI: oneDNN's older int8 kernels saturate 16-bit pair sums (ops/int8_support.h)");
  return BuildKernel(
      init, "QuantizedConv", [&](PrimitiveKernel& k) { return BuildQuantizedConv(k, init, *act, nhwc); },
      QuantizedConvFlops(init));
}

StatusOr<std::unique_ptr<Kernel>> CreateQuantizedConv(const KernelInit& init) {
  return CreateQuantizedConvFor(init, /*nhwc=*/false);
}

}  // namespace strata::ops::onednn
