// oneDNN softmax for Softmax and LogSoftmax (float32). Opset 13: along `axis` (default -1). Before opset 13: the input
// is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (default axis 1) and normalised along the second axis,
// which is a softmax over a reshaped view of the same memory.
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateSoftmax(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty() || (node.op_type != "Softmax" && node.op_type != "LogSoftmax"))
    return Decline("not Softmax/LogSoftmax");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, node.op_type, [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(0);
    const int rank = x.rank();
    if (rank == 0) return Decline("scalar input");
    const bool coerced = node.opset < 13;
    int64_t axis = node.GetInt("axis", coerced ? 1 : -1);
    if (axis < -rank || axis >= rank) return Decline("axis ", axis, " out of range");
    if (axis < 0) axis += rank;
    Md md = PlainMd(x);
    int dnnl_axis = static_cast<int>(axis);
    if (coerced) {
      md = PlainMd(Dims{x.Product(0, static_cast<int>(axis)), x.Product(static_cast<int>(axis), rank)});
      dnnl_axis = 1;
    }
    // A NaN or infinity makes the reference's row NaN; oneDNN's result differs: such inputs go to the reference.
    STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0}, /*nonfinite=*/true));
    const Alg alg = node.op_type == "Softmax" ? Alg::softmax_accurate : Alg::softmax_log;
    dnnl::softmax_v2_forward::primitive_desc pd(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, alg, md, md, dnnl_axis), Attr(),
        CpuEngine());
    const int src = k.Input(0, md, &md);
    k.Add(dnnl::softmax_v2_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, k.Output(0, x, md, &md)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
