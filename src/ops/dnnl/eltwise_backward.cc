// oneDNN eltwise backward for strata.ReluGrad, SigmoidGrad, TanhGrad (dY, Y: the *_use_dst_for_bwd algorithms) and
// GeluGrad, HardSwishGrad and SwishGrad (dY, X: gelu_erf / gelu_tanh, hardswish, swish with alpha 1), float32, any shape (plain layout, dY and the forward value alike).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/grad_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateEltwiseGrad(const KernelInit& init) {
  const Node& node = init.node;
  Alg alg;
  float alpha = 0;
  if (node.op_type == "ReluGrad") {
    alg = Alg::eltwise_relu_use_dst_for_bwd;
  } else if (node.op_type == "SigmoidGrad") {
    alg = Alg::eltwise_logistic_use_dst_for_bwd;
  } else if (node.op_type == "TanhGrad") {
    alg = Alg::eltwise_tanh_use_dst_for_bwd;
  } else if (node.op_type == "GeluGrad") {
    const std::string approx = node.GetString("approximate", "none");
    if (approx != "none" && approx != "tanh") return Decline("approximate ", approx);
    alg = approx == "tanh" ? Alg::eltwise_gelu_tanh : Alg::eltwise_gelu_erf;
  } else if (node.op_type == "HardSwishGrad") {
    alg = Alg::eltwise_hardswish;
  } else if (node.op_type == "SwishGrad") {
    alg = Alg::eltwise_swish;
    alpha = 1;  // x * sigmoid(alpha x)
  } else {
    return Decline(node.op_type, " has no oneDNN eltwise backward");
  }
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, node.op_type, [&](PrimitiveKernel& k) -> Status {
    const Shape& shape = k.input_shape(0);
    if (k.input_shape(1) != shape) return Decline("dY and the forward value differ in shape");
    const Md md = PlainMd(shape);
    dnnl::eltwise_forward::primitive_desc hint(dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, alpha),
                                               Attr(), CpuEngine());
    dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, md, md, alpha), Attr(), CpuEngine(), hint);
    const bool from_dst = node.op_type != "GeluGrad" && node.op_type != "HardSwishGrad" && node.op_type != "SwishGrad";
    const int dy = k.Input(0, md);
    const int v = k.Input(1, md);
    k.Add(dnnl::eltwise_backward(pd), pd,
          {{DNNL_ARG_DIFF_DST, dy},
           {from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, v},
           {DNNL_ARG_DIFF_SRC, k.Output(0, shape, md)}});
    // ReluGrad's Y may be a bfloat16 activation, and its dY and dX bfloat16 gradients (mixed_bfloat16), which the
    // hand-written kernel takes (cpu/relu_bf16.cc).
    if (node.op_type == "ReluGrad") k.set_bf16_variant((1u << 0) | (1u << 1), true);
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
