// oneDNN softmax backward for strata.SoftmaxGrad and strata.LogSoftmaxGrad (dY, Y), float32: along `axis`, or with
// flatten=1 over a [prod(dims[:axis]), prod(dims[axis:])] view of the same memory.
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/grad_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateSoftmaxGrad(const KernelInit& init) {
  const Node& node = init.node;
  if (node.op_type != "SoftmaxGrad" && node.op_type != "LogSoftmaxGrad") return Decline("not a softmax gradient");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, node.op_type, [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(0);
    const int rank = x.rank();
    if (rank == 0 || k.input_shape(1) != x) return Decline("dY and Y must share a shape of rank >= 1");
    int64_t axis = node.GetInt("axis", -1);
    if (axis < -rank || axis >= rank) return Decline("axis ", axis, " out of range");
    if (axis < 0) axis += rank;
    Md md = PlainMd(x);
    int dnnl_axis = static_cast<int>(axis);
    if (node.GetInt("flatten", 0) != 0) {
      md = PlainMd(Dims{x.Product(0, static_cast<int>(axis)), x.Product(static_cast<int>(axis), rank)});
      dnnl_axis = 1;
    }
    const Alg alg = node.op_type == "SoftmaxGrad" ? Alg::softmax_accurate : Alg::softmax_log;
    dnnl::softmax_v2_forward::primitive_desc hint(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_training, alg, md, md, dnnl_axis), Attr(), CpuEngine());
    dnnl::softmax_v2_backward::primitive_desc pd(dnnl::softmax_v2_backward::desc(alg, md, md, md, dnnl_axis), Attr(),
                                                 CpuEngine(), hint);
    const int dy = k.Input(0, md, &md);
    const int y = k.Input(1, md, &md);
    k.Add(dnnl::softmax_v2_backward(pd), pd,
          {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DST, y}, {DNNL_ARG_DIFF_SRC, k.Output(0, x, md, &md)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
