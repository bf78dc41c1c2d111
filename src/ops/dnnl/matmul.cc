// oneDNN matmul for MatMul, strata.FusedMatMul, Gemm and strata.FusedGemm.
//
// MatMul: numpy semantics (1-D operands promoted, batch dimensions broadcast both ways). Constant B (weights) is
// reordered once into the layout the primitive prefers. FusedMatMul adds its C as the matmul bias (C must broadcast
// to the output without changing it) and its activation as an eltwise post-op.
// Gemm: transA/transB are strided views (no copies); alpha scales a constant B once at plan time (declines alpha != 1
// with a runtime B); beta * C becomes the bias (a constant C is scaled once; a runtime C needs beta = 1).
// SessionOptions::precision bf16 (on a CPU with native bfloat16 kernels): A and B are reordered into bfloat16 (a
// constant B once at plan time), the product accumulates in float32 and Y, the addend and the activation stay float32;
// the kernel is then named "dnnl-bf16". Shapes oneDNN has no optimised bfloat16 matmul for run in float32.
#include <algorithm>
#include <optional>

#include "ops/defs/fused/activation.h"
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {
namespace {

// Pads dims on the left with 1s to `rank`.
Dims PadLeft(Dims d, size_t rank) {
  d.insert(d.begin(), rank - d.size(), 1);
  return d;
}

// A matmul primitive descriptor and how it takes the addend (C of Gemm / FusedMatMul): as its bias when an optimised
// implementation supports that broadcast, else as a binary-add post-op before the activation.
struct MatMulPd {
  dnnl::matmul::primitive_desc pd;
  int addend_arg = DNNL_ARG_BIAS;
};

// Weights' layout left to oneDNN when they are constant (the plain layout otherwise or when nothing takes `any`);
// oneDNN's reference implementation is refused (strata's reference kernels are faster). Inputs holding NaN/inf go
// to the reference kernel when oneDNN's activation drops NaN.
// With `bf16`, A and B are described in bfloat16 (row-major, or B's layout left to oneDNN when constant).
StatusOr<MatMulPd> MakeMatMul(PrimitiveKernel& k, const Md& src_f32, const Md& w_f32, bool w_constant,
                              const Md* addend, const Md& dst, const Activation& act, int num_inputs, bool bf16) {
  const auto in_type = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  // The f32 operands may be strided views (Gemm's transposes): the input reorders lay bfloat16 ones out row-major.
  const Md src = bf16 ? PlainMd(src_f32.dims(), in_type) : src_f32;
  const Md w_plain = bf16 ? PlainMd(w_f32.dims(), in_type) : w_f32;
  std::optional<EltwiseSpec> e;
  if (!act.op.empty()) {
    STRATA_ASSIGN_OR_RETURN(e, EltwiseFor(act.op, act.alpha, act.beta));
    if (e->drops_nan) {
      std::vector<int> all;
      for (int i = 0; i < num_inputs; ++i) all.push_back(i);
      STRATA_RETURN_IF_ERROR(k.FallBackOnNaN(all, /*nonfinite=*/true));
    }
  }
  auto make = [&](const Md* bias, bool addend_post_op) -> dnnl::matmul::primitive_desc {
    dnnl::post_ops po;
    if (addend_post_op) po.append_binary(Alg::binary_add, *addend);
    if (e) AppendEltwise(&po, *e);
    for (int layout = w_constant ? 0 : 1; layout < 2; ++layout) {
      const Md w = layout == 0 ? AnyMd(w_plain.dims(), in_type) : w_plain;
      try {
        auto d = bias != nullptr ? dnnl::matmul::desc(src, w, *bias, dst) : dnnl::matmul::desc(src, w, dst);
        dnnl::matmul::primitive_desc pd(d, Attr(po), CpuEngine());
        if (!IsRefImpl(pd)) return pd;
      } catch (const dnnl::error&) {
        // try the next layout
      }
    }
    return {};
  };
  MatMulPd out;
  out.pd = make(addend, false);
  if (!out.pd && addend != nullptr) {
    out.pd = make(nullptr, true);
    out.addend_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
  }
  if (!out.pd) return Decline("oneDNN has no optimised ", bf16 ? "bfloat16 " : "", "matmul for these shapes");
  if (bf16) k.set_name(kBf16KernelName);
  return out;
}

// Binds the addend (node input `input`, or constant `data` when given) the way `m` takes it.
int BindAddend(PrimitiveKernel& k, const MatMulPd& m, int input, const Md& addend, const float* data = nullptr) {
  const Md want = m.addend_arg == DNNL_ARG_BIAS ? m.pd.bias_desc() : addend;
  return data != nullptr ? k.Constant(addend, data, want) : k.Input(input, want, &addend);
}

Status BuildMatMul(PrimitiveKernel& k, const KernelInit& init, int bias_input, const Activation& act, bool bf16) {
  const Shape& a = k.input_shape(0);
  const Shape& b = k.input_shape(1);
  if (a.rank() == 0 || b.rank() == 0) return Decline("MatMul of a scalar");
  Dims ad = ToDims(a), bd = ToDims(b);
  if (a.rank() == 1) ad = {1, a[0]};
  if (b.rank() == 1) bd = {b[0], 1};
  const size_t rank = std::max(ad.size(), bd.size());
  ad = PadLeft(ad, rank);
  bd = PadLeft(bd, rank);
  Dims yd(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) return Decline("batch dimensions do not broadcast");
    yd[i] = std::max(ad[i], bd[i]);
  }
  yd[rank - 2] = ad[rank - 2];
  yd[rank - 1] = bd[rank - 1];
  if (ad[rank - 1] != bd[rank - 2]) return Decline("inner dimensions differ");
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "output"));
  const Md src = PlainMd(ad), w = PlainMd(bd), dst = PlainMd(yd);
  if (dst.get_size() != static_cast<size_t>(y.NumElements()) * sizeof(float))
    return Decline("output ", y.ToString(), " does not match the matmul's dims");

  const bool has_bias = bias_input >= 0 && init.node.has_input(bias_input);
  Md bias;
  if (has_bias) {
    const Shape& c = k.input_shape(bias_input);
    if (c.rank() > static_cast<int>(rank)) return Decline("C has a higher rank than the output");
    Dims cd = PadLeft(ToDims(c), rank);
    if (c.rank() == 0) cd = Dims(rank, 1);
    for (size_t i = 0; i < rank; ++i)
      if (cd[i] != 1 && cd[i] != yd[i]) return Decline("C ", c.ToString(), " does not broadcast to the output");
    bias = PlainMd(cd);
  }
  const bool w_const = k.constant_input(1) != nullptr;
  STRATA_ASSIGN_OR_RETURN(MatMulPd m, MakeMatMul(k, src, w, w_const, has_bias ? &bias : nullptr, dst, act,
                                                 static_cast<int>(init.inputs.size()), bf16));
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, k.Input(0, m.pd.src_desc(), &src));
  args.emplace_back(DNNL_ARG_WEIGHTS, k.Input(1, m.pd.weights_desc(), &w));
  if (has_bias) args.emplace_back(m.addend_arg, BindAddend(k, m, bias_input, bias));
  args.emplace_back(DNNL_ARG_DST, k.Output(0, y, m.pd.dst_desc(), &dst));
  k.Add(dnnl::matmul(m.pd), m.pd, std::move(args));
  return Status::OK();
}

// Gemm: Y = alpha * A' B' + beta * C, with A' = transA ? A^T : A (likewise B').
Status BuildGemm(PrimitiveKernel& k, const KernelInit& init, const Activation& act, bool bf16) {
  const Node& node = init.node;
  const Shape& a = k.input_shape(0);
  const Shape& b = k.input_shape(1);
  if (a.rank() != 2 || b.rank() != 2) return Decline("Gemm operands must be 2-D");
  const bool ta = node.GetInt("transA", 0) != 0, tb = node.GetInt("transB", 0) != 0;
  const float alpha = node.GetFloat("alpha", 1.0f), beta = node.GetFloat("beta", 1.0f);
  const int64_t m = ta ? a[1] : a[0], kk = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (kk != kb) return Decline("inner dimensions differ");
  const auto f32 = dnnl::memory::data_type::f32;
  // A transposed view of the stored matrix: dims [rows, cols] of A' with the strides of the stored layout.
  const Md src = ta ? Md({m, kk}, f32, Dims{1, m}) : PlainMd(Dims{m, kk});
  const Md w = tb ? Md({kk, n}, f32, Dims{1, kk}) : PlainMd(Dims{kk, n});
  const Md dst = PlainMd(Dims{m, n});
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "output"));
  if (y != Shape{m, n}) return Decline("output ", y.ToString(), " is not [", m, ",", n, "]");

  const Tensor* b_const = k.constant_input(1);
  if (alpha != 1.0f && b_const == nullptr) return Decline("alpha != 1 with a runtime B");
  const bool has_c = node.has_input(2);
  Md bias;
  const Tensor* c_const = has_c ? k.constant_input(2) : nullptr;
  if (has_c) {
    const Shape& c = k.input_shape(2);
    if (c.rank() > 2) return Decline("C has rank > 2");
    Dims cd = PadLeft(ToDims(c), 2);
    if (c.rank() == 0) cd = {1, 1};
    if ((cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != n))
      return Decline("C ", c.ToString(), " does not broadcast to [", m, ",", n, "]");
    if (beta != 1.0f && c_const == nullptr) return Decline("beta != 1 with a runtime C");
    bias = PlainMd(cd);
  }
  STRATA_ASSIGN_OR_RETURN(MatMulPd mm, MakeMatMul(k, src, w, b_const != nullptr, has_c ? &bias : nullptr, dst, act,
                                                  static_cast<int>(init.inputs.size()), bf16));
  std::vector<std::pair<int, int>> args;
  args.emplace_back(DNNL_ARG_SRC, k.Input(0, mm.pd.src_desc(), &src));
  if (alpha != 1.0f) {
    std::vector<float> scaled(b_const->values<float>().begin(), b_const->values<float>().end());
    for (float& v : scaled) v *= alpha;
    args.emplace_back(DNNL_ARG_WEIGHTS, k.Constant(w, scaled.data(), mm.pd.weights_desc()));
  } else {
    args.emplace_back(DNNL_ARG_WEIGHTS, k.Input(1, mm.pd.weights_desc(), &w));
  }
  if (has_c) {
    if (c_const != nullptr && beta != 1.0f) {
      std::vector<float> scaled(c_const->values<float>().begin(), c_const->values<float>().end());
      for (float& v : scaled) v *= beta;
      args.emplace_back(mm.addend_arg, BindAddend(k, mm, 2, bias, scaled.data()));
    } else {
      args.emplace_back(mm.addend_arg, BindAddend(k, mm, 2, bias));
    }
  }
  args.emplace_back(DNNL_ARG_DST, k.Output(0, y, mm.pd.dst_desc(), &dst));
  k.Add(dnnl::matmul(mm.pd), mm.pd, std::move(args));
  return Status::OK();
}

// 2 * (output elements) * K.
int64_t MatMulFlops(const KernelInit& init, bool gemm) {
  const Shape a = init.inputs[0].shape.ToShape(), y = init.outputs[0].shape.ToShape();
  if (a.rank() == 0) return 0;
  const int64_t k = gemm && init.node.GetInt("transA", 0) != 0 ? a[0] : a[a.rank() - 1];
  return 2 * y.NumElements() * k;
}

StatusOr<Activation> FusedActivation(const Node& node) {
  auto a = ReadFusedActivation(node);
  if (!a.ok()) return Decline(a.status().message());
  return a;
}

// Builds with `build(kernel, bf16)`: in bfloat16 when the session asks for it and the CPU has it, falling back on
// float32 when oneDNN declines the bfloat16 build.
template <typename F>
StatusOr<std::unique_ptr<Kernel>> BuildMatMulKernel(const KernelInit& init, std::string_view what, int64_t flops,
                                                    F&& build) {
  if (UseBf16(init)) {
    auto k = BuildKernel(init, what, [&](PrimitiveKernel& pk) { return build(pk, true); }, flops);
    if (k.ok() || k.status().code() != StatusCode::kUnimplemented) return k;
    LogStaysFloat32(init, k.status());
  }
  return BuildKernel(init, what, [&](PrimitiveKernel& pk) { return build(pk, false); }, flops);
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateMatMul(const KernelInit& init) {
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildMatMulKernel(init, "MatMul", MatMulFlops(init, false), [&](PrimitiveKernel& k, bool bf16) {
    return BuildMatMul(k, init, -1, Activation{}, bf16);
  });
}

StatusOr<std::unique_ptr<Kernel>> CreateFusedMatMul(const KernelInit& init) {
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  STRATA_ASSIGN_OR_RETURN(Activation act, FusedActivation(init.node));
  return BuildMatMulKernel(init, "FusedMatMul", MatMulFlops(init, false),
                           [&](PrimitiveKernel& k, bool bf16) { return BuildMatMul(k, init, 2, act, bf16); });
}

StatusOr<std::unique_ptr<Kernel>> CreateGemm(const KernelInit& init) {
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildMatMulKernel(init, "Gemm", MatMulFlops(init, true),
                           [&](PrimitiveKernel& k, bool bf16) { return BuildGemm(k, init, Activation{}, bf16); });
}

StatusOr<std::unique_ptr<Kernel>> CreateFusedGemm(const KernelInit& init) {
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  STRATA_ASSIGN_OR_RETURN(Activation act, FusedActivation(init.node));
  return BuildMatMulKernel(init, "FusedGemm", MatMulFlops(init, true),
                           [&](PrimitiveKernel& k, bool bf16) { return BuildGemm(k, init, act, bf16); });
}

}  // namespace strata::ops::onednn
