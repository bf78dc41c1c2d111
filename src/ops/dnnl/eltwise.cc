// oneDNN eltwise for unary activations and math: Relu, LeakyRelu, Elu, Selu, Sigmoid, Tanh, HardSigmoid, HardSwish,
// strata.Swish, Softplus, Clip (constant bounds), Exp, Log, Sqrt, Abs, Neg, Pow(x, 2). Float32 only. Compositions (Selu,
// HardSigmoid) run a second eltwise in place on the output. Clip, HardSigmoid (built on clip) and Exp fall back on the
// reference kernel for inputs holding NaN: oneDNN maps NaN to the lower bound / to inf where the reference keeps it.
#include "ops/defs/fused/activation.h"
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/op_util.h"

namespace strata::ops::onednn {
namespace {

StatusOr<EltwiseSpec> SpecOf(const KernelInit& init) {
  const Node& node = init.node;
  const std::string& op = node.op_type;
  if (op == "Swish") return EltwiseSpec{Alg::eltwise_swish, 1, 0};  // x * sigmoid(alpha x), alpha = 1
  if (op == "Exp" || op == "Log" || op == "Sqrt" || op == "Abs" || op == "Neg") return EltwiseFor(op, 0, 0);
  if (op == "Pow") {
    // x^2 as x*x (a correctly rounded pow gives exactly that); other exponents are left to the reference.
    const Tensor* e = node.has_input(1) && init.inputs[1].has_value() ? init.inputs[1].value : nullptr;
    if (e == nullptr || e->num_elements() != 1) return Decline("Pow needs a constant scalar exponent");
    auto v = ReadScalar(*e, "exponent");
    if (!v.ok() || *v != 2.0) return Decline("Pow exponent other than 2");
    return EltwiseSpec{Alg::eltwise_square, 0, 0};
  }
  auto value = [&](int i) -> const Tensor* {
    return i < static_cast<int>(init.inputs.size()) && init.inputs[i].has_value() ? init.inputs[i].value : nullptr;
  };
  if (op == "Clip")
    for (int i : {1, 2})
      if (node.has_input(i) && value(i) == nullptr) return Decline("Clip with a runtime min/max");
  std::optional<Activation> a = ActivationOfNode(node, value(1), value(2));
  if (!a) return Decline(op, " is not an activation oneDNN computes here");
  return EltwiseFor(a->op, a->alpha, a->beta);
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateEltwise(const KernelInit& init) {
  const bool swish = init.node.domain == "strata" && init.node.op_type == "Swish";
  if (!init.node.domain.empty() && !swish) return Decline("not an ONNX op");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init, {1}));  // Pow's exponent may be of any type
  if (init.inputs.size() > 1 && init.node.op_type != "Pow" && init.node.op_type != "Clip")
    return Decline("unexpected second input");
  STRATA_ASSIGN_OR_RETURN(EltwiseSpec e, SpecOf(init));
  return BuildKernel(init, init.node.op_type, [&](PrimitiveKernel& k) -> Status {
    const std::string& op = init.node.op_type;
    if (op == "Clip" || op == "HardSigmoid" || op == "Exp") STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0}));
    const Shape& x = k.input_shape(0);
    const Md md = PlainMd(x);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.alg, md, e.alpha, e.beta), Attr(),
        CpuEngine());
    const int src = k.Input(0, md);
    const int dst = k.Output(0, x, md);
    k.Add(dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    // X and Y may be bfloat16 activations, which the hand-written kernel computes (cpu/relu_bf16.cc).
    if (op == "Relu") k.set_bf16_variant(1u << 0, true);
    if (e.chained) {
      dnnl::eltwise_forward::primitive_desc pd2(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.alg2, md, e.alpha2, e.beta2), Attr(),
          CpuEngine());
      k.Add(dnnl::eltwise_forward(pd2), pd2, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
    }
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
