// oneDNN int8 matmul for strata.QuantizedMatMul (ops/defs/fused/quantized_matmul.cc): a [M, K] uint8/int8 source
// (a's leading axes flattened; its zero point as oneDNN's source zero point), constant int8 weights [K, N] (a strided
// view of b when transB = 1, reordered once at plan time into oneDNN's preferred layout), int32 accumulation, the
// bias in accumulator units, one float32 output scale per column (a_scale * b_scale[n] / y_scale), the activation as
// an eltwise post-op, and a uint8/int8 (with its zero point) or float32 destination. Declines without VNNI (see
// ops/int8_support.h), for non-constant weights, scales or zero points, and where oneDNN has only its reference.
#include "ops/defs/fused/activation.h"
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {
namespace {

using Dt = dnnl::memory::data_type;

StatusOr<Dt> EightBit(DType t, std::string_view what) {
  if (t == DType::kUInt8) return Dt::u8;
  if (t == DType::kInt8) return Dt::s8;
  return Decline(what, " is ", DTypeName(t));
}

StatusOr<std::vector<float>> Floats(const PrimitiveKernel& k, const KernelInit& init, int i) {
  const Tensor* t = init.node.has_input(i) ? k.constant_input(i) : nullptr;
  if (t == nullptr || t->dtype() != DType::kFloat32) return Decline("input ", i, " is not a float32 constant");
  return t->ToVector<float>();
}

StatusOr<int32_t> ZeroPoint(const PrimitiveKernel& k, const KernelInit& init, int i) {
  if (!init.node.has_input(i)) return 0;
  const Tensor* t = k.constant_input(i);
  if (t == nullptr || t->num_elements() != 1) return Decline("zero point input ", i, " is not a constant scalar");
  if (t->dtype() == DType::kUInt8) return static_cast<int32_t>(t->data<uint8_t>()[0]);
  if (t->dtype() == DType::kInt8) return static_cast<int32_t>(t->data<int8_t>()[0]);
  return Decline("zero point input ", i, " is ", DTypeName(t->dtype()));
}

Status BuildQuantizedMatMul(PrimitiveKernel& k, const KernelInit& init, const Activation& act) {
  const Node& node = init.node;
  const Shape& a = k.input_shape(0);
  const Shape& b = k.input_shape(3);
  if (k.constant_input(3) == nullptr || b.rank() != 2 || a.rank() < 1) return Decline("b must be a 2-D constant");
  STRATA_ASSIGN_OR_RETURN(Dt a_dt, EightBit(init.inputs[0].dtype, "a"));
  const bool quant_out = node.has_input(6);
  Dt y_dt = Dt::f32;
  if (quant_out) {
    STRATA_ASSIGN_OR_RETURN(y_dt, EightBit(init.outputs[0].dtype, "y"));
  }
  const bool trans_b = node.GetInt("transB", 0) != 0;
  const int64_t kk = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (a[a.rank() - 1] != kk) return Decline("a's last axis does not match b");
  const int64_t m = a.NumElements() / kk;
  STRATA_ASSIGN_OR_RETURN(auto as, Floats(k, init, 1));
  STRATA_ASSIGN_OR_RETURN(auto bs, Floats(k, init, 4));
  std::vector<float> ys = {1.0f};
  if (quant_out) {
    STRATA_ASSIGN_OR_RETURN(ys, Floats(k, init, 6));
  }
  STRATA_ASSIGN_OR_RETURN(int32_t a_zp, ZeroPoint(k, init, 2));
  STRATA_ASSIGN_OR_RETURN(int32_t y_zp, ZeroPoint(k, init, 7));
  if (as.size() != 1 || ys.size() != 1 || (bs.size() != 1 && static_cast<int64_t>(bs.size()) != n))
    return Decline("a/y scales must be per tensor and b_scale per tensor or per column");
  std::vector<float> mult(bs.size());
  for (size_t c = 0; c < bs.size(); ++c) mult[c] = as[0] * bs[c] / ys[0];

  dnnl::post_ops po;
  if (!act.op.empty()) {
    STRATA_ASSIGN_OR_RETURN(EltwiseSpec e, EltwiseFor(act.op, act.alpha, act.beta));
    AppendEltwise(&po, e);
  }
  dnnl::primitive_attr attr = Attr(po);
  attr.set_output_scales(mult.size() == 1 ? 0 : 1 << 1, mult);
  if (a_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (quant_out && y_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  std::vector<float> bias;
  if (node.has_input(5)) {
    const Tensor* t = k.constant_input(5);
    if (t == nullptr || t->dtype() != DType::kFloat32 || t->num_elements() != n)
      return Decline("bias must be constant [N]");
    bias.resize(n);
    for (int64_t c = 0; c < n; ++c) bias[c] = t->data<float>()[c] / (as[0] * bs[bs.size() == 1 ? 0 : c]);
  }
  const Md src_user = PlainMd(Dims{m, kk}, a_dt), dst_user = PlainMd(Dims{m, n}, y_dt);
  const Md w_user = trans_b ? Md(Dims{kk, n}, Dt::s8, Dims{1, kk}) : PlainMd(Dims{kk, n}, Dt::s8);
  const Md bias_md = bias.empty() ? Md() : PlainMd(Dims{1, n});
  auto d = bias.empty() ? dnnl::matmul::desc(src_user, AnyMd(Dims{kk, n}, Dt::s8), dst_user)
                        : dnnl::matmul::desc(src_user, AnyMd(Dims{kk, n}, Dt::s8), bias_md, dst_user);
  dnnl::matmul::primitive_desc pd(d, attr, CpuEngine());
  if (IsRefImpl(pd)) return Decline("oneDNN offers only its reference int8 matmul (", pd.impl_info_str(), ")");
  k.set_name("dnnl-int8");
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, k.Input(0, pd.src_desc(), &src_user));
  args.emplace_back(DNNL_ARG_WEIGHTS, k.Input(3, pd.weights_desc(), &w_user));
  if (!bias.empty()) args.emplace_back(DNNL_ARG_BIAS, k.Constant(bias_md, bias.data(), pd.bias_desc()));
  const Md zp_md = PlainMd(Dims{1}, Dt::s32);
  if (a_zp != 0) args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, k.Constant(zp_md, &a_zp, zp_md));
  if (quant_out && y_zp != 0)
    args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, k.Constant(zp_md, &y_zp, zp_md));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "output"));
  args.emplace_back(DNNL_ARG_DST, k.Output(0, y, pd.dst_desc(), &dst_user));
  k.Add(dnnl::matmul(pd), pd, std::move(args));
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateQuantizedMatMul(const KernelInit& init) {
  for (int i : {0, 3})
    if (!init.inputs[i].shape.IsFullyKnown() || init.inputs[i].shape.ToShape().NumElements() == 0)
      return Decline("input ", i, " has an unknown or empty shape");
  if (!init.outputs[0].shape.IsFullyKnown()) return Decline("unknown output shape");
  if (!HasVnni()) return Decline("no VNNI: oneDNN's older int8 kernels saturate 16-bit pair sums (ops/int8_support.h)");
  auto act = ReadFusedActivation(init.node);
  if (!act.ok()) return Decline(act.status().message());
  const Shape y = init.outputs[0].shape.ToShape(), b = init.inputs[3].shape.ToShape();
  return BuildKernel(
      init, "QuantizedMatMul", [&](PrimitiveKernel& k) { return BuildQuantizedMatMul(k, init, *act); },
      2 * y.NumElements() * (init.node.GetInt("transB", 0) != 0 ? b[1] : b[0]));
}

}  // namespace strata::ops::onednn
